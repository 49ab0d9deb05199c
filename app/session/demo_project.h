#pragma once
// Iris's bundled demo (resources/demo): a pricing page to fix, the mockup it should match, and a
// scripted demonstration for when no model is configured. `iris demo` and the GUI's
// "Run the Demo" both start from here.
#include <filesystem>
#include <optional>
#include <string>

#include <opencv2/core/mat.hpp>

#include "agent/recording/recording_types.h"
#include "app/session/session_plan.h"
#include "base/status.h"

namespace iris::app {

struct DemoProject {
    std::filesystem::path workdir;     // a fresh copy of the page, which the agent edits
    std::filesystem::path targetPath;  // the mockup
    cv::Mat target;
    std::string instruction;
    std::filesystem::path demonstrationPath;
    // The demonstration's answers (scripted by the Iris developers, not model output), as a
    // recording for agent::ReplayClient.
    agent::SessionRecord demonstration;
};

// Copies the page into `workdir` (which must be empty or missing; default: a new folder in /tmp)
// and reads the mockup and the demonstration from dataDirectory()/demo.
Result<DemoProject> prepareDemoProject(const std::optional<std::filesystem::path>& workdir);

// The visual-feedback session on the demo: its page at the mockup's size, tool calls, the
// mockup as the goal. The database is left for the caller.
SessionPlan makeDemoPlan(const DemoProject& demo, int maxSteps);

}  // namespace iris::app
