#pragma once
// One agent session's set-up, shared by `iris run` / `iris demo` / `iris replay` and the GUI:
// where it acts, the loop's options, the database that records it; how a plan becomes a ready
// environment; and how a recorded session gives its plan back for replay and fork.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/agent_loop.h"
#include "agent/environment.h"
#include "agent/recording/recording_types.h"
#include "agent/safety_policy.h"
#include "agent/workspace/workspace.h"
#include "app/session/environment_spec.h"
#include "base/status.h"

namespace iris::app {

struct SessionPlan {
    EnvironmentSpec environment;
    agent::LoopOptions loop;
    std::filesystem::path database;
    std::string clientDescription;  // recorded as the session's model; empty: the client's own
    bool allowShell = false;
};

// The environment (reset to its start), the web project's workspace and the safety rules of a
// plan. Needs the QApplication for browser environments (see browser_application.h).
struct PreparedSession {
    std::unique_ptr<agent::Environment> environment;
    std::optional<agent::Workspace> workspace;
    agent::SafetyOptions safety;
};
Result<PreparedSession> prepareSession(const SessionPlan& plan);

// A coordinate frame as --coords names it and sessions record it: "pixels", "relative1000",
// "auto" (the model's image), "resized:WxH".
std::string coordinateFrameText(const agent::CoordinateFrame& frame);

// How a loop's end is recorded.
agent::SessionStatus sessionStatusOf(agent::LoopEnd end);

// What a session records about its set-up (environment, loop options, the web project's files
// at the start), so that a replay can run it again; and the inverse: the plan of a recorded
// session, with its visual goal's target mockup taken from the first request it sent. The
// environment's location (a web project's folder) is the recorded one: see restoreProjectFiles.
nlohmann::json sessionConfig(const SessionPlan& plan, const agent::Workspace* workspace);
Result<SessionPlan> planFromRecording(const agent::SessionRecord& recording);

// Writes a recorded project snapshot (sessionConfig's "project_files") into `folder`.
Status restoreProjectFiles(const nlohmann::json& config, const std::filesystem::path& folder);

}  // namespace iris::app
