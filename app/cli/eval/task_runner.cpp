#include "app/cli/eval/task_runner.h"

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <memory>
#include <thread>

#include <QMetaObject>
#include <QStandardPaths>
#include <QThread>

#include "agent/env/browser/browser_environment.h"
#include "agent/env/browser/gui_thread_environment.h"
#include "agent/env/desktop/desktop_environment.h"
#include "agent/env/wayland/sway_compositor.h"
#include "agent/env/wayland/wayland_desktop_environment.h"
#include "agent/eval/evaluator.h"
#include "agent/recording/osworld_export.h"
#include "agent/recording/redactor.h"
#include "agent/recording/replay_client.h"
#include "agent/recording/session_recorder.h"
#include "agent/workspace/workspace.h"
#include "app/cli/eval/eval_context.h"
#include "app/cli/eval/hygiene.h"
#include "app/session/model_choice.h"
#include "app/session/session_plan.h"
#include "base/temporary_folder.h"

namespace iris::app::eval {
namespace {

namespace fs = std::filesystem;
namespace ev = agent::eval;

constexpr int kDefaultMaxSteps = 15;

// The diagnostic "do nothing" agent of --idle: answers without any action, so every step is a
// parse complaint and the loop runs into its step limit. Every task must score 0 under it.
class IdleClient final : public agent::ModelClient {
public:
    Result<agent::ChatResponse> complete(const agent::ChatRequest&,
                                         const agent::TextStream& onText) override {
        agent::ChatResponse response;
        response.text = "I will not act.";
        response.finishReason = "stop";
        response.model = "idle";
        if (onText) onText(response.text);
        return response;
    }
    void cancel() override {}
    std::string describe() const override { return "idle (diagnostic: takes no action)"; }
};

// The folder of the running iris executable ({IRIS_APP_DIR}): programs built and installed with
// Iris, such as the bundled desktop tasks' iris-sample-desktop, are found there.
std::string irisAppDir() {
    std::error_code fsError;
    const fs::path self = fs::read_symlink("/proc/self/exe", fsError);
    return fsError ? std::string() : self.parent_path().string();
}

Status resetEnvironment(agent::Environment& environment) {
    if (Status reset = environment.reset(); !reset.isOk())
        return Status::internal(environment.describe() + ": " + reset.message());
    return Status::ok();
}

bool isFail(const agent::Action& action) {
    return std::holds_alternative<agent::Fail>(action);
}

// The evaluator's verdict with its per-metric details: the task's evaluation.json.
void writeEvaluationJson(const fs::path& resultDir, const ev::EvaluationOutcome& outcome,
                         bool lastFail) {
    nlohmann::json metrics = nlohmann::json::array();
    for (const ev::MetricDetail& detail : outcome.metrics) {
        nlohmann::json parts = nlohmann::json::object();
        for (const auto& [name, value] : detail.parts)
            parts[name] = value;
        metrics.push_back(
            {{"index", detail.index},
             {"func", detail.func},
             {"result_type", detail.resultType},
             {"expected_type", detail.expectedType},
             {"result", detail.result},
             {"expected", detail.expected},
             {"score", detail.score ? nlohmann::json(*detail.score) : nlohmann::json()},
             {"note", detail.note},
             {"parts", parts}});
    }
    std::error_code fsError;
    fs::create_directories(resultDir, fsError);
    std::ofstream(resultDir / "evaluation.json") << nlohmann::json{{"score", outcome.score},
                                                                   {"reason", outcome.reason},
                                                                   {"last_action_fail", lastFail},
                                                                   {"metrics", metrics}}
                                                        .dump(2)
                                                 << '\n';
}

// Tokens and latency from the recording; then OSWorld's layout (result.txt last of all, by
// exportOsworld, and only for a task that was not stopped).
void exportRecording(agent::SessionStore& store, std::int64_t session, const fs::path& resultDir,
                     TaskResult& result) {
    Result<agent::SessionRecord> record = store.loadSession(session);
    if (!record) {
        result.error += (result.error.empty() ? "" : "; ") + record.status().message();
        return;
    }
    for (const agent::StepRecord& step : record->steps) {
        if (step.response) {
            result.promptTokens += step.response->promptTokens;
            result.completionTokens += step.response->completionTokens;
        }
        result.stepLatencyMs.push_back(step.timings.modelMs);
    }
    if (result.status == TaskStatus::Stopped) return;
    if (Status exported = agent::exportOsworld(*record, resultDir); !exported.isOk()) {
        result.status = TaskStatus::Error;
        result.error = "writing " + resultDir.string() + ": " + exported.message();
        std::error_code fsError;
        fs::remove(resultDir / "result.txt", fsError);
    }
}

}  // namespace

// The task's private work folder, removed with everything in it when the task is over.
struct TaskRunner::WorkFolder {
    TemporaryFolder root;
    fs::path projectDir;  // {PROJECT_DIR}: a copy of the task's iris.project
    fs::path cacheDir;    // what execute steps write and cache_file reads
};

// The environment a task runs in: a browser page made on the GUI thread, or a private desktop.
struct TaskRunner::TaskEnvironment {
    std::unique_ptr<agent::Environment> environment;
    agent::GuiThreadEnvironment* browser = nullptr;  // inside `environment`; null on the desktop
    DesktopProcesses desktop;                        // how commands reach the desktop
};

// The agent's side of a task: what its loop is built from.
struct TaskRunner::TaskAgent {
    std::optional<agent::Workspace> workspace;  // the project that file actions edit, if any
    agent::SafetyOptions safety;
    agent::LoopOptions loop;
    std::unique_ptr<agent::ModelClient> client;
};

struct TaskRunner::LoopOutcome {
    agent::LoopResult result;
    bool lastFail = false;  // the last action was FAIL (infeasible tasks)
    bool timedOut = false;  // --task-timeout stopped the loop
    std::string runaway;    // --loop-limit stopped the loop: what was repeated
};

agent::eval::Capabilities capabilitiesOf(bool allowCommands, bool allowNetwork,
                                         bool waylandDesktop) {
    ev::Capabilities capabilities;
    capabilities.browser = true;
    const QString server = waylandDesktop ? QStringLiteral("sway") : QStringLiteral("Xvfb");
    capabilities.desktop = !QStandardPaths::findExecutable(server).isEmpty();
    capabilities.commands = allowCommands;
    capabilities.network = allowNetwork;
    return capabilities;
}

TaskRunner::TaskRunner(const EvalRunOptions& options, QObject* guiAnchor)
    : m_options(options),
      m_anchor(guiAnchor),
      m_capabilities(
          capabilitiesOf(options.allowCommands, options.allowNetwork, options.waylandDesktop)) {}

void TaskRunner::stop() {
    m_stop = true;
    std::lock_guard lock(m_loopsMutex);
    for (agent::AgentLoop* loop : m_loops)
        loop->requestStop();
}

Status TaskRunner::onGui(const std::function<void()>& work) const {
    if (QThread::currentThread() == m_anchor->thread()) {
        work();
        return Status::ok();
    }
    if (!QMetaObject::invokeMethod(m_anchor, work, Qt::BlockingQueuedConnection))
        return Status::cancelled("could not reach the Qt GUI thread");
    return Status::ok();
}

Result<TaskRunner::WorkFolder> TaskRunner::makeWorkFolder(const ev::Task& task) {
    Result<TemporaryFolder> temp = TemporaryFolder::create("iris-eval");
    if (!temp) return temp.status();
    WorkFolder folder{std::move(*temp), {}, {}};
    folder.projectDir = folder.root.path() / "project";
    folder.cacheDir = folder.root.path() / "cache";
    std::error_code fsError;
    fs::create_directories(folder.projectDir, fsError);
    fs::create_directories(folder.cacheDir, fsError);
    if (!task.iris.project.empty()) {
        const fs::path source = task.folder() / task.iris.project;
        if (!fs::is_directory(source, fsError))
            return Status::notFound(task.file.string() + ": iris.project: " + source.string() +
                                    ": no such folder");
        fs::copy(source, folder.projectDir, fs::copy_options::recursive, fsError);
        if (fsError)
            return Status::ioError("copying " + source.string() + ": " + fsError.message());
    }
    return folder;
}

// A private desktop of the task's size, reset: Xvfb, or a headless sway with --env
// desktop:private-wayland. Its display or socket is read after the reset, which replaces the
// private server by a fresh one.
Result<TaskRunner::TaskEnvironment> TaskRunner::openDesktop(const ev::Task& task) const {
    TaskEnvironment out;
    if (m_options.waylandDesktop) {
        agent::WaylandDesktopOptions options;
        options.privateCompositor = true;
        options.width = task.iris.viewportWidth;
        options.height = task.iris.viewportHeight;
        Result<std::unique_ptr<agent::WaylandDesktopEnvironment>> made =
            agent::WaylandDesktopEnvironment::create(options);
        if (!made) return made.status();
        IRIS_RETURN_IF_ERROR(resetEnvironment(**made));
        out.desktop = DesktopProcesses::wayland((*made)->privateCompositor()->clientEnvironment());
        out.environment = std::move(*made);
        return out;
    }
    agent::DesktopOptions options;
    options.privateDisplay = true;
    options.width = task.iris.viewportWidth;
    options.height = task.iris.viewportHeight;
    Result<std::unique_ptr<agent::DesktopEnvironment>> made =
        agent::DesktopEnvironment::create(options);
    if (!made) return made.status();
    IRIS_RETURN_IF_ERROR(resetEnvironment(**made));
    out.desktop = DesktopProcesses::x11((*made)->displayName());
    out.environment = std::move(*made);
    return out;
}

Result<TaskRunner::TaskEnvironment> TaskRunner::openEnvironment(const ev::Task& task,
                                                                const fs::path& projectDir) const {
    if (task.iris.environment == ev::EnvironmentKind::Desktop) return openDesktop(task);
    agent::BrowserOptions options;
    options.startUrl = task.iris.project.empty() ? std::string("about:blank")
                                                 : fileUrl(projectDir / task.iris.startPage);
    options.viewportWidth = task.iris.viewportWidth;
    options.viewportHeight = task.iris.viewportHeight;
    Result<std::unique_ptr<agent::BrowserEnvironment>> made =
        Status::internal("the browser was not created");
    IRIS_RETURN_IF_ERROR(onGui([&] { made = agent::BrowserEnvironment::create(options); }));
    if (!made) return made.status();
    TaskEnvironment out;
    auto wrapped = std::make_unique<agent::GuiThreadEnvironment>(std::move(*made), m_anchor);
    out.browser = wrapped.get();
    out.environment = std::move(wrapped);
    IRIS_RETURN_IF_ERROR(resetEnvironment(*out.environment));
    return out;
}

Result<TaskRunner::TaskAgent> TaskRunner::makeAgent(const TaskPlan& plan,
                                                    agent::ActionFormat format,
                                                    const fs::path& projectDir) const {
    const ev::Task& task = *plan.task;
    const bool desktop = task.iris.environment == ev::EnvironmentKind::Desktop;
    TaskAgent out;
    out.safety.desktop = desktop;
    out.safety.secrets = agent::Redactor::fromEnvironment().secrets();
    if (!task.iris.project.empty()) {
        Result<agent::Workspace> opened = agent::Workspace::open(projectDir);
        if (!opened) return opened.status();
        out.workspace.emplace(std::move(*opened));
        out.safety.fileActionsAllowed = true;
        out.safety.projectUrl = fileUrl(projectDir) + "/";
    }
    out.loop.instruction = task.instruction;
    out.loop.format = format;
    out.loop.browser = !desktop;
    out.loop.maxSteps = m_options.maxSteps > 0   ? m_options.maxSteps
                        : task.iris.maxSteps > 0 ? task.iris.maxSteps
                                                 : kDefaultMaxSteps;
    if (m_options.screenshotsInHistory > 0)
        out.loop.screenshotsInHistory = m_options.screenshotsInHistory;
    out.loop.pauseAfterActionsMs = m_options.sleepAfterActionS * 1000.0;
    out.loop.runawayLimit = m_options.loopLimit;
    switch (m_options.answers) {
        case AnswerSource::Model: {
            // The run holds a client of the same choice, so a local model is not loaded again:
            // this is one more client of its scheduler.
            Result<std::unique_ptr<agent::ModelClient>> client = makeModelClient(m_options.model);
            if (!client) return client.status();
            out.client = std::move(*client);
            break;
        }
        case AnswerSource::Demonstrations:
            out.client = std::make_unique<agent::ReplayClient>(plan.demo->record);
            break;
        case AnswerSource::Idle:
            out.client = std::make_unique<IdleClient>();
            break;
    }
    return out;
}

// Runs the loop, stoppable by stop() and, with --task-timeout, by a watchdog (the step in flight
// ends early).
TaskRunner::LoopOutcome TaskRunner::runLoop(agent::AgentLoop& loop) {
    {
        std::lock_guard lock(m_loopsMutex);
        m_loops.insert(&loop);
    }
    if (m_stop) loop.requestStop();
    LoopOutcome outcome;
    std::mutex watchMutex;
    std::condition_variable watchWake;
    bool loopOver = false;
    std::thread watchdog;
    if (m_options.taskTimeoutS > 0) {
        watchdog = std::thread([&] {
            std::unique_lock lock(watchMutex);
            if (!watchWake.wait_for(lock, std::chrono::duration<double>(m_options.taskTimeoutS),
                                    [&] { return loopOver; })) {
                outcome.timedOut = true;
                loop.requestStop();
            }
        });
    }
    outcome.result = loop.run([&](const agent::StepReport& report) {
        if (!report.actions.empty()) outcome.lastFail = isFail(report.actions.back());
    });
    // The loop ended itself on a runaway loop: the evaluator still scores what is there, and the
    // flag voids the score.
    outcome.runaway = outcome.result.runaway;
    {
        std::lock_guard lock(watchMutex);
        loopOver = true;
    }
    watchWake.notify_all();
    if (watchdog.joinable()) watchdog.join();
    {
        std::lock_guard lock(m_loopsMutex);
        m_loops.erase(&loop);
    }
    return outcome;
}

// How the attempt ends: interrupted, an agent error, or OSWorld's evaluate() (postconfig, then
// the metrics) scores what the agent left.
void TaskRunner::judge(const ev::Task& task, const LoopOutcome& loop,
                       const ev::Variables& variables, StepTarget& target,
                       const fs::path& resultDir, TaskResult& result) const {
    if (loop.result.end == agent::LoopEnd::Stopped && !loop.timedOut && loop.runaway.empty()) {
        result.status = TaskStatus::Stopped;
        result.error = "the run was interrupted";
        return;
    }
    if (loop.result.end == agent::LoopEnd::Error) {
        result.status = TaskStatus::Error;
        result.error = "agent loop: " + loop.result.message;
        return;
    }
    target.context->setLastActionWasFail(loop.lastFail);
    // Before postconfig: the page as the agent left it. A page that cannot be read is not
    // flagged (the check voids scores; it must not void an honest one for a reason of its own).
    std::vector<std::string> hacks;
    if (isMockupTask(task)) {
        Result<std::vector<std::string>> found =
            inspectForRewardHacking(task, variables, *target.context);
        if (found) hacks = std::move(*found);
    }
    Status post = runConfigSteps(task.evaluator.postconfig, variables, target);
    Result<ev::EvaluationOutcome> outcome =
        post.isOk() ? ev::evaluate(task, *target.context)
                    : Result<ev::EvaluationOutcome>(post.withContext("postconfig: "));
    if (!outcome) {
        result.status = TaskStatus::Error;
        result.error = "evaluation: " + outcome.status().message();
    } else {
        result.score = outcome->score;
        result.reason = outcome->reason;
        result.status = loop.timedOut ? TaskStatus::TimedOut : TaskStatus::Scored;
        if (loop.timedOut)
            result.error = "stopped by --task-timeout after " +
                           std::to_string(int(m_options.taskTimeoutS)) + " s";
        writeEvaluationJson(resultDir, *outcome, loop.lastFail);
        if (!loop.runaway.empty()) flagTask(result, "runaway_loop", loop.runaway);
        for (const std::string& seen : hacks)
            flagTask(result, "reward_hacking", seen);
    }
    result.message = loop.result.message;
}

ContextSetup TaskRunner::contextSetup(const ev::Task& task, const WorkFolder& folder,
                                      const DesktopProcesses& desktop) const {
    const int width = task.iris.viewportWidth;
    const int height = task.iris.viewportHeight;
    ContextSetup setup;
    setup.variables = {
        {"PROJECT_DIR", folder.projectDir.string()}, {"PROJECT_URL", fileUrl(folder.projectDir)},
        {"TASK_DIR", task.folder().string()},        {"SCREEN_WIDTH", std::to_string(width)},
        {"SCREEN_HEIGHT", std::to_string(height)},   {"IRIS_APP_DIR", irisAppDir()},
    };
    setup.runTempDir = folder.root.path();
    setup.cacheDir = folder.cacheDir;
    setup.taskDir = task.folder();
    setup.viewportWidth = width;
    setup.viewportHeight = height;
    setup.allowCommands =
        m_options.allowCommands && task.iris.environment == ev::EnvironmentKind::Desktop;
    setup.allowNetwork = m_options.allowNetwork;
    setup.desktop = desktop;
    return setup;
}

StepTarget TaskRunner::stepTarget(const ContextSetup& setup, const TaskEnvironment& environment,
                                  EnvironmentContext& context) const {
    StepTarget target;
    target.environment = environment.environment.get();
    target.browser = environment.browser;
    target.context = &context;
    target.taskDir = setup.taskDir;
    target.runDir = setup.runTempDir;
    target.cacheDir = setup.cacheDir;
    target.commands = setup.allowCommands;
    target.network = setup.allowNetwork;
    target.desktop = setup.desktop;
    target.stop = &m_stop;
    return target;
}

agent::SessionInfo TaskRunner::sessionInfo(const TaskPlan& plan, const TaskAgent& taskAgent,
                                           const agent::Environment& environment,
                                           const fs::path& projectDir) const {
    const ev::Task& task = *plan.task;
    agent::SessionInfo info;
    info.instruction = task.instruction;
    info.environment = environment.describe();
    info.model = m_options.answers == AnswerSource::Demonstrations
                     ? "demonstration " + plan.demo->path.string()
                     : taskAgent.client->describe();
    info.actionFormat = std::string(agent::actionFormatName(taskAgent.loop.format));
    info.config = {
        {"eval_task", plan.key},
        {"attempt", plan.attempt},
        {"task_id", task.id},
        {"domain", plan.domain},
        {"env", task.iris.environment != ev::EnvironmentKind::Desktop ? "url:" + fileUrl(projectDir)
                : m_options.waylandDesktop                            ? "desktop:private-wayland"
                                                                      : "desktop:private"},
        {"viewport",
         std::to_string(task.iris.viewportWidth) + "x" + std::to_string(task.iris.viewportHeight)},
        {"max_steps", taskAgent.loop.maxSteps},
        {"screenshots_in_history", taskAgent.loop.screenshotsInHistory},
        {"runaway_limit", taskAgent.loop.runawayLimit},
        {"sleep_after_execution_ms", taskAgent.loop.pauseAfterActionsMs},
        {"browser", taskAgent.loop.browser},
    };
    return info;
}

TaskResult TaskRunner::run(const TaskPlan& plan, agent::SessionStore& store) {
    TaskResult result;
    result.id = plan.id;
    result.domain = plan.domain;
    result.file = plan.key;
    result.resultDir = plan.resultDir;
    auto error = [&](TaskStatus status, std::string message) {
        result.status = status;
        result.error = std::move(message);
        return result;
    };
    if (!plan.task) return error(TaskStatus::Error, plan.loadError);
    const ev::Task& task = *plan.task;
    if (m_options.answers == AnswerSource::Demonstrations && !plan.demo)
        return error(TaskStatus::Error, plan.demoError);
    if (const ev::TaskSupport support = ev::checkTask(task, m_capabilities); !support.runnable())
        return error(TaskStatus::Unsupported, support.summary());
    Result<agent::ActionFormat> format = agent::actionFormatFromName(plan.actionFormat);
    if (!format) return error(TaskStatus::Error, format.status().message());

    // A folder without result.txt is an unfinished attempt: start it afresh (OSWorld empties it).
    const fs::path resultDir = m_options.out / plan.resultDir;
    std::error_code fsError;
    fs::remove_all(resultDir, fsError);
    Result<WorkFolder> folder = makeWorkFolder(task);
    if (!folder) return error(TaskStatus::Error, folder.status().message());
    Result<TaskEnvironment> environment = openEnvironment(task, folder->projectDir);
    if (!environment) return error(TaskStatus::Error, environment.status().message());

    // The set-up, in the environment that the evaluator later reads through the context.
    const ContextSetup setup = contextSetup(task, *folder, environment->desktop);
    EnvironmentContext context(setup, *environment->environment, environment->browser,
                               [this](const std::function<void()>& work) { return onGui(work); });
    StepTarget target = stepTarget(setup, *environment, context);
    if (Status configured = runConfigSteps(task.config, setup.variables, target);
        !configured.isOk()) {
        return error(m_stop ? TaskStatus::Stopped : TaskStatus::Error,
                     "set-up: " + configured.message());
    }

    Result<TaskAgent> taskAgent = makeAgent(plan, *format, folder->projectDir);
    if (!taskAgent) return error(TaskStatus::Error, taskAgent.status().message());
    Result<std::int64_t> session = store.createSession(
        sessionInfo(plan, *taskAgent, *environment->environment, folder->projectDir));
    if (!session) return error(TaskStatus::Error, session.status().message());
    result.session = *session;

    agent::SessionRecorder recorder(store, *session);
    agent::AgentLoop loop(
        *environment->environment, *taskAgent->client, agent::SafetyPolicy(taskAgent->safety),
        taskAgent->workspace ? &*taskAgent->workspace : nullptr, &recorder, taskAgent->loop);
    const LoopOutcome outcome = runLoop(loop);
    // The servers that answered (several with --endpoint given more than once), no secret.
    for (const std::string& endpoint : taskAgent->client->endpointsUsed())
        result.endpoint += (result.endpoint.empty() ? "" : ", ") + endpoint;
    result.loopEnd = std::string(agent::loopEndName(outcome.result.end));
    result.steps = outcome.result.steps;
    judge(task, outcome, setup.variables, target, resultDir, result);

    agent::SessionStatus sessionStatus = sessionStatusOf(outcome.result.end);
    if (result.status == TaskStatus::Error && sessionStatus != agent::SessionStatus::Stopped)
        sessionStatus = agent::SessionStatus::Error;
    if (Status finished = store.finishSession(*session, sessionStatus, result.score);
        !finished.isOk())
        result.error += (result.error.empty() ? "" : "; ") + finished.message();
    exportRecording(store, *session, resultDir, result);
    return result;
}

}  // namespace iris::app::eval
