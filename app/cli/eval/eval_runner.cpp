#include "app/cli/eval/eval_runner.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <ostream>
#include <set>
#include <thread>

#include <stdlib.h>
#include <unistd.h>

#include <QCoreApplication>
#include <QGuiApplication>
#include <QMetaObject>
#include <QObject>
#include <QStandardPaths>
#include <QThread>

#include "agent/agent_loop.h"
#include "agent/clients/http_download.h"
#include "agent/env/browser/browser_environment.h"
#include "agent/env/browser/gui_thread_environment.h"
#include "agent/env/desktop/desktop_environment.h"
#include "agent/eval/evaluator.h"
#include "agent/eval/task.h"
#include "agent/eval/task_check.h"
#include "agent/recording/chat_json.h"
#include "agent/recording/osworld_export.h"
#include "agent/recording/redactor.h"
#include "agent/recording/replay_client.h"
#include "agent/recording/session_recorder.h"
#include "agent/recording/session_store.h"
#include "agent/workspace/workspace.h"
#include "app/cli/eval/eval_context.h"
#include "app/cli/eval/eval_results.h"
#include "app/cli/eval/progress.h"
#include "base/clock.h"
#include "base/temporary_folder.h"

namespace iris::app::eval {
namespace {

namespace fs = std::filesystem;
namespace ev = agent::eval;

constexpr int kDefaultMaxSteps = 15;
constexpr double kExecuteTimeoutS = 120;  // OSWorld's /setup/execute timeout

// Model calls from several workers go to one client one at a time: the local engine runs one
// request at once, and a server's rate limits are the person's to raise with --parallel 1.
class SerializedClient final : public agent::ModelClient {
public:
    explicit SerializedClient(agent::ModelClient& inner) : m_inner(inner) {}
    Result<agent::ChatResponse> complete(const agent::ChatRequest& request,
                                         const agent::TextStream& onText) override {
        std::lock_guard lock(mutex());
        return m_inner.complete(request, onText);
    }
    void cancel() override { m_inner.cancel(); }
    std::string describe() const override { return m_inner.describe(); }
    std::optional<inference::ImageSize> imageSizeFor(int width, int height) const override {
        return m_inner.imageSizeFor(width, height);
    }

    static std::mutex& mutex() {
        static std::mutex shared;
        return shared;
    }

private:
    agent::ModelClient& m_inner;
};

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

struct Demonstration {
    agent::SessionRecord record;
    std::string actionFormat;
    fs::path path;
};

// resources/demo/demonstration.json's format: {"about", "instruction", "action_format",
// "responses": [ChatResponse JSON, ...]}.
Result<Demonstration> readDemonstration(const fs::path& path) {
    std::ifstream file(path);
    if (!file) return Status::notFound(path.string() + ": cannot open the demonstration");
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(file);
    } catch (const nlohmann::json::parse_error& e) {
        return Status::corrupt(path.string() + ": byte " + std::to_string(e.byte) + ": not JSON");
    }
    if (!json.is_object()) return Status::corrupt(path.string() + ": expected a JSON object");
    Demonstration demo;
    demo.path = path;
    const auto format = json.find("action_format");
    if (format != json.end()) {
        if (!format->is_string())
            return Status::corrupt(path.string() + ": action_format: expected a string");
        demo.actionFormat = format->get<std::string>();
    }
    const auto responses = json.find("responses");
    if (responses == json.end() || !responses->is_array())
        return Status::corrupt(path.string() + ": responses: expected an array");
    for (std::size_t i = 0; i < responses->size(); ++i) {
        Result<agent::ChatResponse> response = agent::chatResponseFromJson((*responses)[i]);
        if (!response)
            return Status::corrupt(path.string() + ": responses[" + std::to_string(i) +
                                   "]: " + response.status().message());
        agent::StepRecord step;
        step.index = int(i);
        step.response = std::move(*response);
        demo.record.steps.push_back(std::move(step));
    }
    return demo;
}

// Everything known about a task before it runs.
struct TaskPlan {
    fs::path file;
    std::string key;  // the file relative to the tasks folder: results.json's "file"
    std::optional<ev::Task> task;
    std::string loadError;
    std::string id;
    std::string domain;
    std::string actionFormat;
    std::string resultDir;
    std::optional<Demonstration> demo;
    std::string demoError;

    std::string label() const { return domain + "/" + id; }
};

Result<std::vector<TaskPlan>> planTasks(const EvalRunOptions& options) {
    std::vector<ev::LoadedTaskFile> files;
    fs::path root = options.tasks;
    std::error_code error;
    if (fs::is_regular_file(options.tasks, error)) {
        files.push_back({fs::absolute(options.tasks), ev::loadTask(options.tasks)});
        root = options.tasks.parent_path();
    } else {
        Result<std::vector<ev::LoadedTaskFile>> loaded = ev::loadTaskDir(options.tasks);
        IRIS_RETURN_IF_ERROR(loaded.status());
        files = std::move(*loaded);
    }
    std::vector<TaskPlan> plans;
    for (ev::LoadedTaskFile& file : files) {
        TaskPlan plan;
        plan.file = file.path;
        fs::path relative = fs::relative(file.path, root, error);
        plan.key = (error || relative.empty() ? file.path : relative).generic_string();
        plan.id = file.path.stem().string();
        plan.domain = file.path.parent_path().filename().string();
        plan.actionFormat = options.actionFormat;
        if (!file.task) {
            plan.loadError = file.task.status().message();
        } else {
            plan.task = std::move(*file.task);
            if (!plan.task->id.empty()) plan.id = plan.task->id;
            if (!plan.task->domain.empty()) plan.domain = plan.task->domain;
            if (options.answers == AnswerSource::Demonstrations) {
                if (plan.task->iris.demonstration.empty()) {
                    plan.demoError = "the task has no iris.demonstration";
                } else {
                    Result<Demonstration> demo =
                        readDemonstration(plan.task->folder() / plan.task->iris.demonstration);
                    if (demo) {
                        plan.demo = std::move(*demo);
                        if (!plan.demo->actionFormat.empty())
                            plan.actionFormat = plan.demo->actionFormat;
                    } else {
                        plan.demoError = demo.status().message();
                    }
                }
            }
            if (!plan.task->iris.actionFormat.empty())
                plan.actionFormat = plan.task->iris.actionFormat;
        }
        // The folder uses the canonical format name, as OSWorld's action_space does.
        if (Result<agent::ActionFormat> format = agent::actionFormatFromName(plan.actionFormat))
            plan.actionFormat = std::string(agent::actionFormatName(*format));
        plan.resultDir = taskResultDir(plan.actionFormat, options.modelName, plan.domain, plan.id);
        plans.push_back(std::move(plan));
    }
    return plans;
}

ev::Capabilities capabilitiesOf(bool allowCommands, bool allowNetwork) {
    ev::Capabilities capabilities;
    capabilities.browser = true;
    capabilities.desktop = !QStandardPaths::findExecutable(QStringLiteral("Xvfb")).isEmpty();
    capabilities.commands = allowCommands;
    capabilities.network = allowNetwork;
    return capabilities;
}

std::string fileUrl(const fs::path& path) {
    return "file://" + path.generic_string();
}

bool sameUrl(std::string a, std::string b) {
    auto trim = [](std::string& url) {
        while (url.size() > 1 && url.back() == '/')
            url.pop_back();
    };
    trim(a);
    trim(b);
    return a == b;
}

// True when `path` (absolute, normalised) lies inside `root`.
bool inside(const fs::path& path, const fs::path& root) {
    const fs::path p = path.lexically_normal();
    const fs::path r = root.lexically_normal();
    auto [rootEnd, pathIt] = std::mismatch(r.begin(), r.end(), p.begin(), p.end());
    return rootEnd == r.end() || (std::next(rootEnd) == r.end() && rootEnd->empty());
}

// What config steps act on.
struct StepTarget {
    agent::Environment* environment = nullptr;
    agent::GuiThreadEnvironment* browser = nullptr;  // null on the desktop
    EnvironmentContext* context = nullptr;
    fs::path taskDir;
    fs::path runDir;
    fs::path cacheDir;
    bool commands = false;  // --allow-commands and an isolated environment
    bool network = false;
    std::string display;
    const std::atomic<bool>* stop = nullptr;
};

Status navigate(StepTarget& target, const std::string& url) {
    agent::ActionResult result = target.environment->execute(agent::Action(agent::Navigate{url}));
    return result.status.withContext("loading " + url + ": ");
}

Status runConfigStep(const ev::ConfigStep& step, StepTarget& target) {
    const std::string where = step.where + " (" + step.type + "): ";
    auto needCommands = [&]() -> Status {
        if (target.commands) return Status::ok();
        return Status::unsupported(where +
                                   "runs a command: needs --allow-commands and a private desktop "
                                   "environment (iris.environment \"desktop\")");
    };
    return std::visit(
        [&](const auto& params) -> Status {
            using T = std::decay_t<decltype(params)>;
            if constexpr (std::is_same_v<T, ev::LaunchStep>) {
                if (target.browser && ev::isBrowserPlumbingStep(step)) return Status::ok();
                IRIS_RETURN_IF_ERROR(needCommands());
                return startProcess(params.command, target.display).withContext(where);
            } else if constexpr (std::is_same_v<T, ev::ExecuteStep>) {
                IRIS_RETURN_IF_ERROR(needCommands());
                Result<ev::CommandOutput> output =
                    runProcess(params.command, target.display, kExecuteTimeoutS);
                IRIS_RETURN_IF_ERROR(output.status().withContext(where));
                std::error_code error;
                fs::create_directories(target.cacheDir, error);
                if (!params.stdoutFile.empty())
                    std::ofstream(target.cacheDir / params.stdoutFile) << output->out;
                if (!params.stderrFile.empty())
                    std::ofstream(target.cacheDir / params.stderrFile) << output->err;
                return Status::ok();
            } else if constexpr (std::is_same_v<T, ev::OpenStep>) {
                if (target.browser) {
                    const bool hasScheme = params.path.find("://") != std::string::npos ||
                                           params.path.starts_with("about:");
                    return navigate(target, hasScheme ? params.path : fileUrl(params.path))
                        .withContext(where);
                }
                IRIS_RETURN_IF_ERROR(needCommands());
                ev::CommandSpec open;
                open.argv = {"xdg-open", params.path};
                return startProcess(open, target.display).withContext(where);
            } else if constexpr (std::is_same_v<T, ev::SleepStep>) {
                const auto until = Clock::now() + std::chrono::duration<double>(params.seconds);
                while (Clock::now() < until && !(target.stop && target.stop->load()))
                    std::this_thread::sleep_for(std::chrono::milliseconds(50));
                return Status::ok();
            } else if constexpr (std::is_same_v<T, ev::DownloadStep>) {
                for (const ev::DownloadStep::File& file : params.files) {
                    fs::path destination = file.path;
                    if (destination.is_relative()) destination = target.runDir / destination;
                    if (!inside(destination, target.runDir))
                        return Status::invalidArgument(
                            where + "path " + file.path +
                            ": downloads go inside the task's work folder ({PROJECT_DIR})");
                    if (file.url.starts_with("http://") || file.url.starts_with("https://")) {
                        if (!target.network)
                            return Status::unsupported(where + file.url +
                                                       ": http(s) downloads need --allow-network");
                        IRIS_RETURN_IF_ERROR(
                            agent::downloadFile(file.url, destination).withContext(where));
                        continue;
                    }
                    fs::path source;
                    if (file.url.starts_with("file://")) {
                        source = file.url.substr(7);
                    } else {
                        source = fs::path(file.url).is_absolute() ? fs::path(file.url)
                                                                  : target.taskDir / file.url;
                    }
                    std::error_code error;
                    if (!fs::is_regular_file(source, error))
                        return Status::notFound(where + source.string() + ": no such file");
                    fs::create_directories(destination.parent_path(), error);
                    fs::copy_file(source, destination, fs::copy_options::overwrite_existing, error);
                    if (error)
                        return Status::ioError(where + "copying " + source.string() + " to " +
                                               destination.string() + ": " + error.message());
                }
                return Status::ok();
            } else if constexpr (std::is_same_v<T, ev::ChromeOpenTabsStep>) {
                if (!target.browser)
                    return Status::unsupported(where + "needs the browser environment");
                for (const std::string& url : params.urls)
                    target.context->tabs().push_back({"", url});
                if (!params.urls.empty())
                    return navigate(target, params.urls.back()).withContext(where);
                return Status::ok();
            } else if constexpr (std::is_same_v<T, ev::ChromeCloseTabsStep>) {
                if (!target.browser)
                    return Status::unsupported(where + "needs the browser environment");
                std::vector<ev::TabInfo>& tabs = target.context->tabs();
                const std::string active = tabs.empty() ? std::string() : tabs.back().url;
                for (const std::string& url : params.urls) {
                    auto match = std::find_if(tabs.begin(), tabs.end(), [&](const ev::TabInfo& t) {
                        return sameUrl(t.url, url);
                    });
                    if (match != tabs.end()) tabs.erase(match);
                }
                if (!tabs.empty() && tabs.back().url != active)
                    return navigate(target, tabs.back().url).withContext(where);
                if (tabs.empty() && !active.empty())
                    return navigate(target, "about:blank").withContext(where);
                return Status::ok();
            } else if constexpr (std::is_same_v<T, ev::ActivateWindowStep>) {
                if (target.browser) return Status::ok();  // the page is the only window
                IRIS_RETURN_IF_ERROR(needCommands());
                ev::CommandSpec activate;
                activate.argv = {"wmctrl"};
                if (params.byClass) activate.argv.push_back("-x");
                activate.argv.push_back(params.strict ? "-F" : "-a");
                if (params.strict) activate.argv.push_back("-a");
                activate.argv.push_back(params.windowName);
                Result<ev::CommandOutput> output = runProcess(activate, target.display, 10);
                IRIS_RETURN_IF_ERROR(output.status().withContext(where));
                return Status::ok();
            } else {
                return Status::unsupported(where + "step type '" + step.type +
                                           "' is not supported by Iris");
            }
        },
        step.params);
}

Status runSteps(const std::vector<ev::ConfigStep>& steps, const ev::Variables& variables,
                StepTarget& target) {
    for (const ev::ConfigStep& raw : steps) {
        if (target.stop && target.stop->load()) return Status::cancelled("the run was stopped");
        Result<ev::ConfigStep> step = ev::substituteStep(raw, variables);
        IRIS_RETURN_IF_ERROR(step.status());
        IRIS_RETURN_IF_ERROR(runConfigStep(*step, target));
    }
    return Status::ok();
}

bool isFail(const agent::Action& action) {
    return std::holds_alternative<agent::Fail>(action);
}

// State shared by the workers of one run.
class Runner {
public:
    Runner(const EvalRunOptions& options, std::vector<TaskPlan> plans, RunResults results,
           std::vector<std::size_t> todo, QObject* anchor, Progress& progress)
        : m_options(options),
          m_plans(std::move(plans)),
          m_results(std::move(results)),
          m_todo(std::move(todo)),
          m_anchor(anchor),
          m_progress(progress),
          m_capabilities(capabilitiesOf(options.allowCommands, options.allowNetwork)) {}

    void stop() {
        m_stop = true;
        std::lock_guard lock(m_loopsMutex);
        for (agent::AgentLoop* loop : m_loops)
            loop->requestStop();
    }
    bool stopped() const { return m_stop; }

    void work() {
        std::optional<agent::SessionStore> store;
        for (;;) {
            if (m_stop) return;
            const std::size_t slot = m_next++;
            if (slot >= m_todo.size()) return;
            const TaskPlan& plan = m_plans[m_todo[slot]];
            if (!store) {
                Result<agent::SessionStore> opened =
                    agent::SessionStore::open(m_options.out / "sessions.db");
                if (!opened) {
                    fail(opened.status().message());
                    return;
                }
                store.emplace(std::move(*opened));
            }
            m_progress.started(plan.label());
            const Clock::time_point start = Clock::now();
            TaskResult result = runTask(plan, *store);
            result.durationS = secondsSince(start);
            std::string note = result.error;
            if (note.size() > 160) note = note.substr(0, 157) + "...";
            if (result.status == TaskStatus::Stopped) note = "stopped";
            m_progress.finished(plan.label(), result.score, result.durationS,
                                result.status == TaskStatus::Scored ? std::string() : note);
            std::lock_guard lock(m_resultsMutex);
            m_results.put(std::move(result));
            if (Status saved = saveRunResults(m_results, m_options.out); !saved.isOk())
                fail(saved.message());
        }
    }

    RunResults results() {
        std::lock_guard lock(m_resultsMutex);
        return m_results;
    }
    std::string failure() {
        std::lock_guard lock(m_resultsMutex);
        return m_failure;
    }

private:
    void fail(const std::string& message) {
        {
            std::lock_guard lock(m_resultsMutex);
            if (m_failure.empty()) m_failure = message;
        }
        stop();
    }

    Status onGui(const std::function<void()>& work) const {
        if (QThread::currentThread() == m_anchor->thread()) {
            work();
            return Status::ok();
        }
        if (!QMetaObject::invokeMethod(m_anchor, work, Qt::BlockingQueuedConnection))
            return Status::cancelled("could not reach the Qt GUI thread");
        return Status::ok();
    }

    TaskResult runTask(const TaskPlan& plan, agent::SessionStore& store);

    const EvalRunOptions& m_options;
    std::vector<TaskPlan> m_plans;
    std::mutex m_resultsMutex;
    RunResults m_results;
    std::string m_failure;
    std::vector<std::size_t> m_todo;
    std::atomic<std::size_t> m_next{0};
    QObject* m_anchor;
    Progress& m_progress;
    ev::Capabilities m_capabilities;
    std::atomic<bool> m_stop{false};
    std::mutex m_loopsMutex;
    std::set<agent::AgentLoop*> m_loops;
};

TaskResult Runner::runTask(const TaskPlan& plan, agent::SessionStore& store) {
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

    Result<TemporaryFolder> temp = TemporaryFolder::create("iris-eval");
    if (!temp) return error(TaskStatus::Error, temp.status().message());
    const fs::path runDir = temp->path();
    const fs::path projectDir = runDir / "project";
    const fs::path cacheDir = runDir / "cache";
    fs::create_directories(projectDir, fsError);
    fs::create_directories(cacheDir, fsError);
    if (!task.iris.project.empty()) {
        const fs::path source = task.folder() / task.iris.project;
        if (!fs::is_directory(source, fsError))
            return error(TaskStatus::Error, task.file.string() + ": iris.project: " +
                                                source.string() + ": no such folder");
        fs::copy(source, projectDir, fs::copy_options::recursive, fsError);
        if (fsError)
            return error(TaskStatus::Error,
                         "copying " + source.string() + ": " + fsError.message());
    }
    const bool desktop = task.iris.environment == ev::EnvironmentKind::Desktop;
    const int width = task.iris.viewportWidth;
    const int height = task.iris.viewportHeight;
    ev::Variables variables = {
        {"PROJECT_DIR", projectDir.string()},      {"PROJECT_URL", fileUrl(projectDir)},
        {"TASK_DIR", task.folder().string()},      {"SCREEN_WIDTH", std::to_string(width)},
        {"SCREEN_HEIGHT", std::to_string(height)},
    };

    // The environment: a browser page made on the GUI thread, or a private desktop.
    std::unique_ptr<agent::Environment> environment;
    agent::GuiThreadEnvironment* browser = nullptr;
    std::string display;
    if (desktop) {
        agent::DesktopOptions options;
        options.privateDisplay = true;
        options.width = width;
        options.height = height;
        Result<std::unique_ptr<agent::DesktopEnvironment>> made =
            agent::DesktopEnvironment::create(options);
        if (!made) return error(TaskStatus::Error, made.status().message());
        display = (*made)->displayName();
        environment = std::move(*made);
    } else {
        agent::BrowserOptions options;
        options.startUrl = task.iris.project.empty() ? std::string("about:blank")
                                                     : fileUrl(projectDir / task.iris.startPage);
        options.viewportWidth = width;
        options.viewportHeight = height;
        Result<std::unique_ptr<agent::BrowserEnvironment>> made =
            Status::internal("the browser was not created");
        if (Status reached = onGui([&] { made = agent::BrowserEnvironment::create(options); });
            !reached.isOk())
            return error(TaskStatus::Error, reached.message());
        if (!made) return error(TaskStatus::Error, made.status().message());
        auto wrapped = std::make_unique<agent::GuiThreadEnvironment>(std::move(*made), m_anchor);
        browser = wrapped.get();
        environment = std::move(wrapped);
    }
    if (Status reset = environment->reset(); !reset.isOk())
        return error(TaskStatus::Error, environment->describe() + ": " + reset.message());

    ContextSetup setup;
    setup.variables = variables;
    setup.runTempDir = runDir;
    setup.cacheDir = cacheDir;
    setup.taskDir = task.folder();
    setup.viewportWidth = width;
    setup.viewportHeight = height;
    setup.allowCommands = m_options.allowCommands && desktop;
    setup.allowNetwork = m_options.allowNetwork;
    setup.display = display;
    EnvironmentContext context(setup, *environment, browser,
                               [this](const std::function<void()>& work) { return onGui(work); });

    StepTarget target;
    target.environment = environment.get();
    target.browser = browser;
    target.context = &context;
    target.taskDir = task.folder();
    target.runDir = runDir;
    target.cacheDir = cacheDir;
    target.commands = setup.allowCommands;
    target.network = m_options.allowNetwork;
    target.display = display;
    target.stop = &m_stop;
    if (Status configured = runSteps(task.config, variables, target); !configured.isOk()) {
        return error(m_stop ? TaskStatus::Stopped : TaskStatus::Error,
                     "set-up: " + configured.message());
    }

    // The agent.
    std::optional<agent::Workspace> workspace;
    agent::SafetyOptions safety;
    safety.desktop = desktop;
    safety.secrets = agent::Redactor::fromEnvironment().secrets();
    if (!task.iris.project.empty()) {
        Result<agent::Workspace> opened = agent::Workspace::open(projectDir);
        if (!opened) return error(TaskStatus::Error, opened.status().message());
        workspace.emplace(std::move(*opened));
        safety.fileActionsAllowed = true;
        safety.projectUrl = fileUrl(projectDir) + "/";
    }
    agent::LoopOptions loopOptions;
    loopOptions.instruction = task.instruction;
    loopOptions.format = *format;
    loopOptions.browser = !desktop;
    loopOptions.maxSteps = m_options.maxSteps > 0   ? m_options.maxSteps
                           : task.iris.maxSteps > 0 ? task.iris.maxSteps
                                                    : kDefaultMaxSteps;
    loopOptions.pauseAfterActionsMs = m_options.sleepAfterActionS * 1000.0;

    std::unique_ptr<agent::ModelClient> client;
    switch (m_options.answers) {
        case AnswerSource::Model:
            client = std::make_unique<SerializedClient>(*m_options.model);
            break;
        case AnswerSource::Demonstrations:
            client = std::make_unique<agent::ReplayClient>(plan.demo->record);
            break;
        case AnswerSource::Idle:
            client = std::make_unique<IdleClient>();
            break;
    }

    agent::SessionInfo info;
    info.instruction = task.instruction;
    info.environment = environment->describe();
    info.model = m_options.answers == AnswerSource::Demonstrations
                     ? "demonstration " + plan.demo->path.string()
                     : client->describe();
    info.actionFormat = std::string(agent::actionFormatName(*format));
    info.config = {
        {"eval_task", plan.key},
        {"task_id", task.id},
        {"domain", plan.domain},
        {"env", desktop ? "desktop:private" : "url:" + fileUrl(projectDir)},
        {"viewport", std::to_string(width) + "x" + std::to_string(height)},
        {"max_steps", loopOptions.maxSteps},
        {"sleep_after_execution_ms", loopOptions.pauseAfterActionsMs},
        {"browser", loopOptions.browser},
    };
    Result<std::int64_t> session = store.createSession(info);
    if (!session) return error(TaskStatus::Error, session.status().message());
    result.session = *session;

    agent::SessionRecorder recorder(store, *session);
    agent::AgentLoop loop(*environment, *client, agent::SafetyPolicy(safety),
                          workspace ? &*workspace : nullptr, &recorder, loopOptions);
    {
        std::lock_guard lock(m_loopsMutex);
        m_loops.insert(&loop);
    }
    if (m_stop) loop.requestStop();
    // The per-task timeout: a watchdog that stops the loop (the step in flight ends early).
    std::mutex watchMutex;
    std::condition_variable watchWake;
    bool loopOver = false;
    bool timedOut = false;
    std::thread watchdog;
    if (m_options.taskTimeoutS > 0) {
        watchdog = std::thread([&] {
            std::unique_lock lock(watchMutex);
            if (!watchWake.wait_for(lock, std::chrono::duration<double>(m_options.taskTimeoutS),
                                    [&] { return loopOver; })) {
                timedOut = true;
                loop.requestStop();
            }
        });
    }
    bool lastFail = false;
    const agent::LoopResult loopResult = loop.run([&](const agent::StepReport& report) {
        if (!report.actions.empty()) lastFail = isFail(report.actions.back());
    });
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
    result.loopEnd = std::string(agent::loopEndName(loopResult.end));
    result.steps = loopResult.steps;

    agent::SessionStatus sessionStatus = agent::SessionStatus::Error;
    switch (loopResult.end) {
        case agent::LoopEnd::Done:
            sessionStatus = agent::SessionStatus::Done;
            break;
        case agent::LoopEnd::Failed:
            sessionStatus = agent::SessionStatus::Failed;
            break;
        case agent::LoopEnd::MaxSteps:
            sessionStatus = agent::SessionStatus::MaxSteps;
            break;
        case agent::LoopEnd::NoImprovement:
            sessionStatus = agent::SessionStatus::NoImprovement;
            break;
        case agent::LoopEnd::Stopped:
            sessionStatus = agent::SessionStatus::Stopped;
            break;
        case agent::LoopEnd::Error:
            break;
    }

    std::optional<double> score;
    if (loopResult.end == agent::LoopEnd::Stopped && !timedOut) {
        result.status = TaskStatus::Stopped;
        result.error = "the run was interrupted";
    } else if (loopResult.end == agent::LoopEnd::Error) {
        result.status = TaskStatus::Error;
        result.error = "agent loop: " + loopResult.message;
    } else {
        // OSWorld's evaluate(): postconfig, then the metrics.
        context.setLastActionWasFail(lastFail);
        Status post = runSteps(task.evaluator.postconfig, variables, target);
        Result<ev::EvaluationOutcome> outcome =
            post.isOk() ? ev::evaluate(task, context)
                        : Result<ev::EvaluationOutcome>(post.withContext("postconfig: "));
        if (!outcome) {
            result.status = TaskStatus::Error;
            result.error = "evaluation: " + outcome.status().message();
        } else {
            score = outcome->score;
            result.score = score;
            result.reason = outcome->reason;
            result.status = timedOut ? TaskStatus::TimedOut : TaskStatus::Scored;
            if (timedOut)
                result.error = "stopped by --task-timeout after " +
                               std::to_string(int(m_options.taskTimeoutS)) + " s";
            nlohmann::json metrics = nlohmann::json::array();
            for (const ev::MetricDetail& detail : outcome->metrics) {
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
            fs::create_directories(resultDir, fsError);
            std::ofstream(resultDir / "evaluation.json")
                << nlohmann::json{{"score", outcome->score},
                                  {"reason", outcome->reason},
                                  {"last_action_fail", lastFail},
                                  {"metrics", metrics}}
                       .dump(2)
                << '\n';
        }
        result.message = loopResult.message;
    }
    if (result.status == TaskStatus::Error && sessionStatus != agent::SessionStatus::Stopped)
        sessionStatus = agent::SessionStatus::Error;
    if (Status finished = store.finishSession(*session, sessionStatus, score); !finished.isOk())
        result.error += (result.error.empty() ? "" : "; ") + finished.message();

    // Tokens and latency from the recording; then OSWorld's layout (result.txt last of all, by
    // exportOsworld, and only for a scored task).
    Result<agent::SessionRecord> record = store.loadSession(*session);
    if (record) {
        for (const agent::StepRecord& step : record->steps) {
            if (step.response) {
                result.promptTokens += step.response->promptTokens;
                result.completionTokens += step.response->completionTokens;
            }
            result.stepLatencyMs.push_back(step.timings.modelMs);
        }
        if (result.status != TaskStatus::Stopped) {
            if (Status exported = agent::exportOsworld(*record, resultDir); !exported.isOk()) {
                result.status = TaskStatus::Error;
                result.error = "writing " + resultDir.string() + ": " + exported.message();
                fs::remove(resultDir / "result.txt", fsError);
            }
        }
    } else {
        result.error += (result.error.empty() ? "" : "; ") + record.status().message();
    }
    return result;
}

}  // namespace

int runEvaluation(const EvalRunOptions& options, std::ostream& out, std::ostream& err,
                  InterruptWatcher* interrupts) {
    Result<std::vector<TaskPlan>> plans = planTasks(options);
    if (!plans) {
        err << "iris eval run: " << plans.status().message() << '\n';
        return 3;
    }
    std::error_code error;
    fs::create_directories(options.out, error);
    if (error) {
        err << "iris eval run: " << options.out.string() << ": " << error.message() << '\n';
        return 3;
    }

    RunResults results;
    if (Result<RunResults> previous = loadRunResults(options.out); previous) {
        results = std::move(*previous);
    } else if (previous.status().code() != StatusCode::NotFound) {
        err << "iris eval run: " << previous.status().message() << '\n';
        return 3;
    }
    results.settings.actionFormat = options.actionFormat;
    results.settings.model = options.modelName;
    results.settings.modelDescription =
        options.answers == AnswerSource::Model && options.model ? options.model->describe()
        : options.answers == AnswerSource::Demonstrations       ? "the tasks' demonstrations"
                                                                : "idle (diagnostic)";
    results.settings.maxSteps = options.maxSteps;
    results.settings.sleepAfterActionS = options.sleepAfterActionS;
    results.settings.taskTimeoutS = options.taskTimeoutS;
    results.settings.parallel = options.parallel;
    results.settings.tasksPath = options.tasks.string();
    results.tasksTotal = int(plans->size());
    // Keep only this task set's entries; tasks finished earlier keep theirs (or get one from
    // their result.txt when results.json missed it).
    std::set<std::string> keys;
    for (const TaskPlan& plan : *plans)
        keys.insert(plan.key);
    std::erase_if(results.tasks, [&](const TaskResult& r) { return !keys.count(r.file); });

    const std::vector<std::size_t> todo =
        unfinishedTasks(options.out, plans->size(), [&](std::size_t i) {
            const TaskPlan& plan = (*plans)[i];
            return plan.task ? plan.resultDir : std::string();
        });
    std::set<std::size_t> pending(todo.begin(), todo.end());
    for (std::size_t i = 0; i < plans->size(); ++i) {
        if (pending.count(i)) continue;
        const TaskPlan& plan = (*plans)[i];
        const TaskResult* known = results.find(plan.key);
        if (known && known->score) continue;
        TaskResult recovered;
        recovered.id = plan.id;
        recovered.domain = plan.domain;
        recovered.file = plan.key;
        recovered.status = TaskStatus::Scored;
        recovered.score = readResultTxt(options.out / plan.resultDir);
        recovered.resultDir = plan.resultDir;
        recovered.error = "recovered from result.txt";
        results.put(std::move(recovered));
    }
    const std::size_t skipped = plans->size() - todo.size();
    out << "iris eval: " << plans->size() << " tasks in " << options.tasks.string();
    if (skipped) out << ", " << skipped << " already finished in " << options.out.string();
    out << "; running " << todo.size() << (options.parallel > 1 ? " at a time of " : "")
        << (options.parallel > 1 ? std::to_string(options.parallel) : std::string()) << '\n';
    out.flush();
    if (Status saved = saveRunResults(results, options.out); !saved.isOk()) {
        err << "iris eval run: " << saved.message() << '\n';
        return 3;
    }

    Progress progress(err, int(todo.size()), options.parallel, isatty(STDERR_FILENO) != 0);
    QObject anchor;
    Runner runner(options, std::move(*plans), std::move(results), todo, &anchor, progress);
    if (interrupts) interrupts->onInterrupt([&runner] { runner.stop(); });

    // Browser views come and go with the tasks: their closing must not end the event loop.
    QGuiApplication::setQuitOnLastWindowClosed(false);
    std::atomic<bool> finished{false};
    std::thread coordinator([&] {
        std::vector<std::thread> workers;
        const int lanes = std::max(1, std::min<int>(options.parallel, int(todo.size())));
        for (int i = 0; i < lanes; ++i)
            workers.emplace_back([&runner] { runner.work(); });
        for (std::thread& worker : workers)
            worker.join();
        finished = true;
        QMetaObject::invokeMethod(
            QCoreApplication::instance(), [] { QCoreApplication::quit(); }, Qt::QueuedConnection);
    });
    while (!finished)
        QCoreApplication::exec();  // returns early only on a stray quit; keep serving the workers
    coordinator.join();
    if (interrupts) interrupts->onInterrupt({});
    progress.close();

    const RunResults final = runner.results();
    if (Status saved = saveRunResults(final, options.out); !saved.isOk()) {
        err << "iris eval run: " << saved.message() << '\n';
        return 3;
    }
    out << summaryText(final);
    out << "results: " << (options.out / "results.json").string() << '\n';
    if (const std::string failure = runner.failure(); !failure.empty()) {
        err << "iris eval run: " << failure << '\n';
        return 3;
    }
    if (runner.stopped()) {
        err << "iris eval run: interrupted; run the same command again to resume\n";
        return 3;
    }
    return 0;
}

int validateTasks(const fs::path& tasks, bool allowCommands, bool allowNetwork, std::ostream& out) {
    EvalRunOptions options;
    options.tasks = tasks;
    Result<std::vector<TaskPlan>> plans = planTasks(options);
    if (!plans) {
        out << "iris eval validate: " << plans.status().message() << '\n';
        return 3;
    }
    const ev::Capabilities capabilities = capabilitiesOf(allowCommands, allowNetwork);
    int runnable = 0, unsupported = 0, malformed = 0;
    for (const TaskPlan& plan : *plans) {
        if (!plan.task) {
            ++malformed;
            out << "malformed    " << plan.key << ": " << plan.loadError << '\n';
            continue;
        }
        ev::TaskSupport support = ev::checkTask(*plan.task, capabilities);
        std::vector<std::string> notes;
        std::error_code error;
        if (!plan.task->iris.project.empty() &&
            !fs::is_directory(plan.task->folder() / plan.task->iris.project, error)) {
            support.problems.push_back(
                {"iris.project",
                 (plan.task->folder() / plan.task->iris.project).string() + ": no such folder"});
        }
        if (!plan.task->iris.demonstration.empty()) {
            Result<Demonstration> demo =
                readDemonstration(plan.task->folder() / plan.task->iris.demonstration);
            if (!demo) notes.push_back("demonstration: " + demo.status().message());
        }
        if (support.runnable()) {
            ++runnable;
            out << "runnable     " << plan.label() << " (" << plan.key << ")";
        } else {
            ++unsupported;
            out << "not runnable " << plan.label() << " (" << plan.key
                << "): " << support.summary();
        }
        for (const std::string& note : notes)
            out << "; " << note;
        out << '\n';
    }
    out << plans->size() << " tasks: " << runnable << " runnable here, " << unsupported
        << " not runnable, " << malformed << " malformed\n";
    return malformed ? 1 : 0;
}

}  // namespace iris::app::eval
