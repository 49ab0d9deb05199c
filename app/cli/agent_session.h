#pragma once
// One recorded agent session from the command line: the environment named by --env, the loop,
// the session database, progress lines, and the exit code. `iris run` and `iris demo` use it.
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include <opencv2/core/mat.hpp>

#include "agent/agent_loop.h"
#include "agent/clients/model_client.h"
#include "agent/environment.h"
#include "agent/recording/recording_types.h"
#include "agent/workspace/workspace.h"
#include "app/cli/interrupt_watcher.h"
#include "base/status.h"

namespace iris::app {

// Exit codes of run, demo and replay.
inline constexpr int kExitDone = 0;     // the agent finished the task
inline constexpr int kExitNotDone = 1;  // it gave up: fail, step limit, no improvement
inline constexpr int kExitUsage = 2;    // bad command line
inline constexpr int kExitError = 3;    // stopped on an error or on request

// Where the agent acts, from --env: "web:DIR" (a web project: the browser shows DIR/index.html
// and the agent may edit DIR's files), "url:URL" (a page, no files), "desktop" (this X display),
// "desktop:private" (a private Xvfb display of --screen size).
struct EnvironmentSpec {
    enum class Kind { WebProject, Url, Desktop, PrivateDesktop };
    Kind kind = Kind::WebProject;
    std::string location;  // the folder or URL
    int width = 1280;      // viewport, or the private display's size
    int height = 800;
};
Result<EnvironmentSpec> parseEnvironmentSpec(const std::string& text);
// The --env form of `spec` (a web project by its canonical folder), as sessions record it.
std::string environmentText(const EnvironmentSpec& spec);
Result<std::pair<int, int>> parseSize(const std::string& text);  // "1280x800"
Result<std::int64_t> parseSessionId(const std::string& text);    // "12"

struct SessionPlan {
    EnvironmentSpec environment;
    agent::LoopOptions loop;
    std::filesystem::path database;
    std::string clientDescription;  // recorded as the session's model
    bool allowShell = false;
};

// Needs the QApplication (browser environments). Prints one line per step to `out`, and the
// session id, final status and score at the end. Returns one of the exit codes above.
// The environment (reset to its start), the web project's workspace and the safety rules of a
// plan.
struct PreparedSession {
    std::unique_ptr<agent::Environment> environment;
    std::optional<agent::Workspace> workspace;
    agent::SafetyOptions safety;
};
Result<PreparedSession> prepareSession(const SessionPlan& plan);

// How a loop's end is recorded.
agent::SessionStatus sessionStatusOf(agent::LoopEnd end);

// Step progress lines as `iris run` prints them.
void printStep(std::ostream& out, const agent::StepReport& report);

// With `interrupts`, Ctrl-C stops the loop within one step (the session is kept as "stopped").
int runAgentSession(const SessionPlan& plan, agent::ModelClient& client, std::ostream& out,
                    std::ostream& err, InterruptWatcher* interrupts);

// What a session records about its set-up (environment, loop options, the web project's files
// at the start), so that `iris replay` can run it again; and the inverse: the plan of a recorded
// session, with its visual goal's target mockup taken from the first request it sent. The
// environment's location (a web project's folder) is the recorded one: see restoreProjectFiles.
nlohmann::json sessionConfig(const SessionPlan& plan, const agent::Workspace* workspace);
Result<SessionPlan> planFromRecording(const agent::SessionRecord& recording);

// Writes a recorded project snapshot (sessionConfig's "project_files") into `folder`.
Status restoreProjectFiles(const nlohmann::json& config, const std::filesystem::path& folder);

// The environment for `spec` (a browser environment lives on the calling Qt thread).
Result<std::unique_ptr<agent::Environment>> makeEnvironment(const EnvironmentSpec& spec);

}  // namespace iris::app
