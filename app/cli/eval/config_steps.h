#pragma once
// OSWorld's config steps (a task's set-up, and its evaluator's postconfig) carried out in Iris's
// environments: in the browser, open and chrome_open_tabs/chrome_close_tabs navigate the page
// (eval_runner.h explains the tab list) and launch steps that only start Chrome are skipped; on a
// private desktop, steps run commands there when the run allows commands. Downloads land inside
// the task's work folder only.
#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "agent/env/browser/gui_thread_environment.h"
#include "agent/environment.h"
#include "agent/eval/task.h"
#include "app/cli/eval/eval_context.h"
#include "base/status.h"

namespace iris::app::eval {

// What config steps act on; everything it points to outlives the steps.
struct StepTarget {
    agent::Environment* environment = nullptr;
    agent::GuiThreadEnvironment* browser = nullptr;  // null on the desktop
    EnvironmentContext* context = nullptr;
    std::filesystem::path taskDir;
    std::filesystem::path runDir;
    std::filesystem::path cacheDir;
    bool commands = false;  // --allow-commands and an isolated environment
    bool network = false;
    DesktopProcesses desktop;  // how commands reach the private desktop
    const std::atomic<bool>* stop = nullptr;  // checked between steps and during sleeps
};

// Substitutes `variables` into each step and runs it; the first failure ends the run, its message
// prefixed with the step's place and type ("config[2] (launch): ..."). Cancelled when `stop` is set
// before a step; Unsupported for a step this environment or run cannot carry out.
Status runConfigSteps(const std::vector<agent::eval::ConfigStep>& steps,
                      const agent::eval::Variables& variables, StepTarget& target);

// The file:// URL of an absolute path.
std::string fileUrl(const std::filesystem::path& path);

}  // namespace iris::app::eval
