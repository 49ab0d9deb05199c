#include "app/cli/eval/eval_runner.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <ostream>
#include <set>
#include <thread>

#include <unistd.h>

#include <QCoreApplication>
#include <QGuiApplication>
#include <QMetaObject>
#include <QObject>

#include "agent/eval/task_check.h"
#include "agent/recording/session_store.h"
#include "app/cli/agent_setup.h"
#include "app/cli/eval/eval_results.h"
#include "app/cli/eval/progress.h"
#include "app/cli/eval/shards.h"
#include "app/cli/eval/task_plan.h"
#include "app/cli/eval/task_runner.h"
#include "base/clock.h"

namespace iris::app::eval {
namespace {

namespace fs = std::filesystem;
namespace ev = agent::eval;

// The tasks still to do, shared by the workers of one run: each takes the next, runs it with
// the TaskRunner and records its result in results.json.
class Runner {
public:
    Runner(const EvalRunOptions& options, std::vector<TaskPlan> plans, RunResults results,
           std::vector<std::size_t> todo, QObject* anchor, Progress& progress)
        : m_options(options),
          m_plans(std::move(plans)),
          m_results(std::move(results)),
          m_todo(std::move(todo)),
          m_progress(progress),
          m_tasks(options, anchor) {}

    void stop() { m_tasks.stop(); }
    bool stopped() const { return m_tasks.stopped(); }

    void work() {
        std::optional<agent::SessionStore> store;
        for (;;) {
            if (stopped()) return;
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
            TaskResult result = m_tasks.run(plan, *store);
            result.attempt = plan.attempt;
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

    const EvalRunOptions& m_options;
    std::vector<TaskPlan> m_plans;
    std::mutex m_resultsMutex;
    RunResults m_results;
    std::string m_failure;
    std::vector<std::size_t> m_todo;
    std::atomic<std::size_t> m_next{0};
    Progress& m_progress;
    TaskRunner m_tasks;
};

// results.json as a resumed run starts it: the earlier run's entries for this task set (none
// for a new folder) under this run's settings. Fails when an existing file cannot be read.
Result<RunResults> resumedResults(const EvalRunOptions& options, const std::vector<TaskPlan>& plans,
                                  const std::string& modelDescription) {
    RunResults results;
    if (Result<RunResults> previous = loadRunResults(options.out); previous) {
        results = std::move(*previous);
    } else if (previous.status().code() != StatusCode::NotFound) {
        return previous.status();
    }
    results.settings.actionFormat = options.actionFormat;
    results.settings.model = options.modelName;
    results.settings.modelDescription =
        options.answers == AnswerSource::Model            ? modelDescription
        : options.answers == AnswerSource::Demonstrations ? "the tasks' demonstrations"
                                                          : "idle (diagnostic)";
    results.settings.maxSteps = options.maxSteps;
    results.settings.sleepAfterActionS = options.sleepAfterActionS;
    results.settings.taskTimeoutS = options.taskTimeoutS;
    results.settings.parallel = options.parallel;
    results.settings.tasksPath = options.tasks.string();
    results.settings.shard = options.shard;
    results.settings.repeat = options.repeat;
    results.settings.loopLimit = options.loopLimit;
    results.tasksTotal = int(plans.size()) / std::max(1, options.repeat);
    // Keep only this task set's entries (and attempts); tasks finished earlier keep theirs (or
    // get one from their result.txt when results.json missed it: recoverFinished).
    std::set<std::string> keys;
    for (const TaskPlan& plan : plans)
        keys.insert(plan.key);
    std::erase_if(results.tasks, [&](const TaskResult& r) {
        return !keys.count(r.file) || r.attempt >= std::max(1, options.repeat);
    });
    return results;
}

// An entry from result.txt for each finished task (not in `todo`) that results.json has no
// score for.
void recoverFinished(const fs::path& out, const std::vector<TaskPlan>& plans,
                     const std::vector<std::size_t>& todo, RunResults& results) {
    std::set<std::size_t> pending(todo.begin(), todo.end());
    for (std::size_t i = 0; i < plans.size(); ++i) {
        if (pending.count(i)) continue;
        const TaskPlan& plan = plans[i];
        const TaskResult* known = results.find(plan.key, plan.attempt);
        if (known && known->score) continue;
        TaskResult recovered;
        recovered.attempt = plan.attempt;
        recovered.id = plan.id;
        recovered.domain = plan.domain;
        recovered.file = plan.key;
        recovered.status = TaskStatus::Scored;
        recovered.score = readResultTxt(out / plan.resultDir);
        recovered.resultDir = plan.resultDir;
        recovered.error = "recovered from result.txt";
        results.put(std::move(recovered));
    }
}

// Runs `lanes` workers while this thread (the QApplication's) serves their GUI work.
void runWorkers(Runner& runner, int lanes) {
    // Browser views come and go with the tasks: their closing must not end the event loop.
    QGuiApplication::setQuitOnLastWindowClosed(false);
    std::atomic<bool> finished{false};
    std::thread coordinator([&] {
        std::vector<std::thread> workers;
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
}

// The summary and the exit status once the workers are done.
int finishRun(Runner& runner, const EvalRunOptions& options, std::ostream& out, std::ostream& err) {
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

// Runs the tasks of `todo` on `lanes` workers and writes the summary.
int runTasks(const EvalRunOptions& options, std::vector<TaskPlan> plans, RunResults results,
             const std::vector<std::size_t>& todo, int lanes, std::ostream& out, std::ostream& err,
             InterruptWatcher* interrupts) {
    const std::size_t skipped = plans.size() - todo.size();
    out << "iris eval: " << plans.size() / std::size_t(std::max(1, options.repeat)) << " tasks";
    if (options.repeat > 1) out << " x " << options.repeat << " runs = " << plans.size();
    out << " in " << options.tasks.string();
    if (!options.shard.empty()) out << " (shard " << options.shard << ")";
    if (skipped) out << ", " << skipped << " already finished in " << options.out.string();
    out << "; running " << todo.size();
    if (options.parallel > 1) out << ", " << options.parallel << " at a time";
    out << '\n';
    out.flush();
    if (Status saved = saveRunResults(results, options.out); !saved.isOk()) {
        err << "iris eval run: " << saved.message() << '\n';
        return 3;
    }

    Progress progress(err, int(todo.size()), options.parallel, isatty(STDERR_FILENO) != 0);
    QObject anchor;
    Runner runner(options, std::move(plans), std::move(results), todo, &anchor, progress);
    if (interrupts) interrupts->onInterrupt([&runner] { runner.stop(); });
    runWorkers(runner, lanes);
    if (interrupts) interrupts->onInterrupt({});
    progress.close();
    return finishRun(runner, options, out, err);
}

}  // namespace

int runEvaluation(const EvalRunOptions& requested, std::ostream& out, std::ostream& err,
                  InterruptWatcher* interrupts) {
    Result<std::vector<TaskPlan>> plans = planTasks(requested);
    if (!plans) {
        err << "iris eval run: " << plans.status().message() << '\n';
        return 3;
    }
    std::error_code error;
    fs::create_directories(requested.out, error);
    if (error) {
        err << "iris eval run: " << requested.out.string() << ": " << error.message() << '\n';
        return 3;
    }
    if (!requested.shard.empty()) {
        if (Status selected = selectShard(requested.shard, requested.maxSteps, requested.tasks,
                                          requested.out, *plans);
            !selected.isOk()) {
            err << "iris eval run: " << selected.message() << '\n';
            return 3;
        }
    }
    // After the shard's share is chosen: every attempt of a task runs in the same shard.
    *plans = repeatPlans(std::move(*plans), requested.repeat);
    const std::vector<std::size_t> todo =
        unfinishedTasks(requested.out, plans->size(), [&](std::size_t i) {
            const TaskPlan& plan = (*plans)[i];
            return plan.task ? plan.resultDir : std::string();
        });
    const int lanes = std::max(1, std::min<int>(requested.parallel, int(todo.size())));
    EvalRunOptions options = requested;
    options.model.parallel = lanes;
    // Held for the whole run: the engine stays loaded between tasks (each task's client is a
    // client of its scheduler), and a model that does not load fails the run before any task.
    std::unique_ptr<agent::ModelClient> model;
    if (options.answers == AnswerSource::Model) {
        Result<std::unique_ptr<agent::ModelClient>> made = makeModelClient(options.model);
        if (made && !*made) made = Status::invalidArgument("no model given");
        if (!made) {
            err << "iris eval run: " << made.status().message() << '\n';
            return 3;
        }
        model = std::move(*made);
        sayWhichEngine(*model, err);
    }
    Result<RunResults> results =
        resumedResults(options, *plans, model ? model->describe() : std::string());
    if (!results) {
        err << "iris eval run: " << results.status().message() << '\n';
        return 3;
    }
    recoverFinished(options.out, *plans, todo, *results);
    return runTasks(options, std::move(*plans), std::move(*results), todo, lanes, out, err,
                    interrupts);
}

int validateTasks(const fs::path& tasks, bool allowCommands, bool allowNetwork, bool waylandDesktop,
                  std::ostream& out) {
    EvalRunOptions options;
    options.tasks = tasks;
    Result<std::vector<TaskPlan>> plans = planTasks(options);
    if (!plans) {
        out << "iris eval validate: " << plans.status().message() << '\n';
        return 3;
    }
    const ev::Capabilities capabilities =
        capabilitiesOf(allowCommands, allowNetwork, waylandDesktop);
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
