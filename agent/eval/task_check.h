#pragma once
// What keeps a task from running here (`iris eval validate`): step types, metric functions and
// getter types Iris does not implement, and needs the run cannot meet (a desktop task without an
// X server, a command getter when commands are off). Everything is listed, not just the first.
#include <string>
#include <vector>

#include "agent/eval/task.h"

namespace iris::agent::eval {

struct Capabilities {
    bool browser = true;    // the Qt WebEngine browser environment is available
    bool desktop = false;   // a private desktop (Xvfb, or sway on Wayland) for desktop tasks
    bool commands = false;  // the run may execute shell commands (launch/execute, vm_command_line)
    bool network = false;   // the run may reach http(s) URLs (download steps, cloud_file)
};

struct TaskProblem {
    std::string where;  // JSON path: "config[3]", "evaluator.func[1]", "evaluator.result[0].type"
    std::string what;   // "unsupported step type googledrive"
};

struct TaskSupport {
    std::vector<TaskProblem> problems;
    bool runnable() const { return problems.empty(); }
    // "config[3]: unsupported step type googledrive; evaluator.func: ..." (empty when runnable).
    std::string summary() const;
};

TaskSupport checkTask(const Task& task, const Capabilities& capabilities);

}  // namespace iris::agent::eval
