#pragma once
// One task of `iris eval run`, start to end: its work folder, a fresh environment, the set-up
// steps, the agent loop (with the per-task timeout), OSWorld's evaluation, the recorded session
// and the OSWorld result layout (eval_results.h). eval_runner.cpp schedules the tasks.
#include <atomic>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include <QObject>

#include "agent/actions/action_format.h"
#include "agent/agent_loop.h"
#include "agent/eval/task_check.h"
#include "agent/recording/session_store.h"
#include "app/cli/eval/config_steps.h"
#include "app/cli/eval/eval_results.h"
#include "app/cli/eval/eval_runner.h"
#include "app/cli/eval/task_plan.h"

namespace iris::app::eval {

// What tasks can use on this machine: the browser always, a desktop when Xvfb (or, for
// `waylandDesktop`, sway) is installed, commands and the network as the run allows.
agent::eval::Capabilities capabilitiesOf(bool allowCommands, bool allowNetwork,
                                         bool waylandDesktop = false);

class TaskRunner final {
public:
    // `options` outlives the runner; `guiAnchor` lives on the thread that owns the QApplication
    // and runs its event loop while tasks run (browser environments are made and driven there).
    TaskRunner(const EvalRunOptions& options, QObject* guiAnchor);
    TaskRunner(const TaskRunner&) = delete;
    TaskRunner& operator=(const TaskRunner&) = delete;

    // Runs `plan` and records it in `store` (the calling worker's own). Never fails as a whole:
    // what went wrong is the result's status and error. Thread-safe: workers call it at once.
    TaskResult run(const TaskPlan& plan, agent::SessionStore& store);

    // Thread-safe. Loops in flight end their step early, set-up steps stop, and tasks that start
    // later end at once as Stopped.
    void stop();
    bool stopped() const { return m_stop; }

private:
    struct WorkFolder;
    struct TaskEnvironment;
    struct TaskAgent;
    struct LoopOutcome;

    // The phases of run(), in order.
    static Result<WorkFolder> makeWorkFolder(const agent::eval::Task& task);
    Result<TaskEnvironment> openDesktop(const agent::eval::Task& task) const;
    Result<TaskEnvironment> openEnvironment(const agent::eval::Task& task,
                                            const std::filesystem::path& projectDir) const;
    ContextSetup contextSetup(const agent::eval::Task& task, const WorkFolder& folder,
                              const DesktopProcesses& desktop) const;
    StepTarget stepTarget(const ContextSetup& setup, const TaskEnvironment& environment,
                          EnvironmentContext& context) const;
    Result<TaskAgent> makeAgent(const TaskPlan& plan, agent::ActionFormat format,
                                const std::filesystem::path& projectDir) const;
    agent::SessionInfo sessionInfo(const TaskPlan& plan, const TaskAgent& taskAgent,
                                   const agent::Environment& environment,
                                   const std::filesystem::path& projectDir) const;
    LoopOutcome runLoop(agent::AgentLoop& loop);
    void judge(const agent::eval::Task& task, const LoopOutcome& loop,
               const agent::eval::Variables& variables, StepTarget& target,
               const std::filesystem::path& resultDir, TaskResult& result) const;
    // Runs `work` on the GUI thread and waits for it (directly when already there).
    Status onGui(const std::function<void()>& work) const;

    const EvalRunOptions& m_options;
    QObject* m_anchor;
    agent::eval::Capabilities m_capabilities;
    std::atomic<bool> m_stop{false};
    std::mutex m_loopsMutex;
    std::set<agent::AgentLoop*> m_loops;  // the loops in flight, for stop()
};

}  // namespace iris::app::eval
