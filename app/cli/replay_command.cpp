// iris replay SESSION [--db FILE]: runs a recorded session's actions again in a fresh
//   environment and compares every step's screenshot with the recording.
// iris replay SESSION --from-step N (--model F.gguf | --endpoint URL): forks it: replays steps
//   before N, then a live model continues, recorded as a new session.
#include <cstdio>
#include <iostream>

#include <opencv2/core.hpp>

#include <QApplication>

#include "agent/image_codec.h"
#include "agent/prompt_builder.h"
#include "agent/recording/replay_client.h"
#include "agent/recording/session_store.h"
#include "agent/visual/visual_diff.h"
#include "app/cli/agent_commands.h"
#include "app/cli/agent_session.h"
#include "app/cli/agent_setup.h"
#include "app/session/browser_application.h"
#include "base/temporary_folder.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;

std::vector<OptionSpec> replayOptions() {
    std::vector<OptionSpec> options = {
        {"from-step", "", true, "fork: replay the steps before N, then continue with a live model"},
        {"max-steps", "", true, "fork: model calls at most, the replayed ones included"},
        {"tolerance", "", true, "share of pixels that may differ before a step diverges (0)"},
        {"project", "", true,
         "web sessions: start from a copy of this folder, not the recorded files"},
        {"help", "h", false, "show this help"},
    };
    for (const OptionSpec& spec : modelAndDatabaseOptions())
        options.push_back(spec);
    return options;
}

// Receives the replayed steps: compares each with the recording, and (when forking) writes the
// steps from `firstNewStep` on into the forked session.
class ReplayRecorder final : public agent::Recorder {
public:
    ReplayRecorder(const agent::SessionRecord& recording, double tolerance, std::ostream& out)
        : m_recording(recording), m_tolerance(tolerance), m_out(out) {}

    void forkInto(agent::SessionStore* store, std::int64_t session, int firstNewStep) {
        m_store = store;
        m_session = session;
        m_firstNewStep = firstNewStep;
    }

    Status recordStep(const agent::StepRecord& step) override {
        if (m_store && step.index >= m_firstNewStep) return m_store->appendStep(m_session, step);
        if (step.index >= int(m_recording.steps.size()) || step.index >= m_firstNewStep)
            return Status::ok();
        ++m_compared;
        Result<cv::Mat> replayed = agent::decodeImage(step.observationPng, "replayed screenshot");
        Result<cv::Mat> recorded = agent::decodeImage(
            m_recording.steps[std::size_t(step.index)].observationPng, "recorded screenshot");
        IRIS_RETURN_IF_ERROR(replayed.status());
        IRIS_RETURN_IF_ERROR(recorded.status());
        const agent::PixelDifference d = agent::pixelDifference(*replayed, *recorded);
        char line[160];
        if (!d.sameSize) {
            std::snprintf(line, sizeof line, "step %d: size %dx%d, recorded %dx%d", step.index + 1,
                          replayed->cols, replayed->rows, recorded->cols, recorded->rows);
        } else {
            std::snprintf(line, sizeof line,
                          "step %d: %.3f%% of pixels differ (mean difference %.3f of 255)",
                          step.index + 1, 100 * d.changedShare, d.meanAbsolute);
        }
        m_out << line << (d.changedShare > m_tolerance ? "  <- diverges" : "") << '\n';
        if (d.changedShare > m_tolerance && !m_firstDivergence) {
            m_firstDivergence = step.index;
            m_divergence = line;
        }
        return Status::ok();
    }
    Status recordEvent(const agent::SessionEvent& event) override {
        if (m_store && event.stepIndex.value_or(m_firstNewStep) >= m_firstNewStep)
            return m_store->addEvent(m_session, event);
        return Status::ok();
    }

    std::int64_t session() const { return m_session; }
    int compared() const { return m_compared; }
    const std::optional<int>& firstDivergence() const { return m_firstDivergence; }
    const std::string& divergence() const { return m_divergence; }

private:
    const agent::SessionRecord& m_recording;
    double m_tolerance;
    std::ostream& m_out;
    agent::SessionStore* m_store = nullptr;
    std::int64_t m_session = 0;
    int m_firstNewStep = 1 << 30;
    int m_compared = 0;
    std::optional<int> m_firstDivergence;
    std::string m_divergence;
};

int fail(const std::string& message) {
    std::cerr << "iris replay: " << message << '\n';
    return kExitError;
}

// The recorded session's plan, recording into `database`: the recorded steps (a fork: up to
// --max-steps), and a web project restored into a new folder from the recorded files (or from a
// copy of --project).
Result<SessionPlan> replayPlan(const Arguments& args, const agent::SessionRecord& recording,
                               bool forking, const fs::path& database) {
    Result<SessionPlan> plan = planFromRecording(recording);
    IRIS_RETURN_IF_ERROR(plan.status());
    plan->database = database;
    plan->loop.maxSteps = forking ? int(args.integer("max-steps", plan->loop.maxSteps).value())
                                  : int(recording.steps.size());
    if (plan->environment.kind != EnvironmentSpec::Kind::WebProject) return plan;
    Result<fs::path> folder = makeTemporaryFolder("iris-replay");
    IRIS_RETURN_IF_ERROR(folder.status());
    const std::string copy = folder->string();
    if (std::optional<std::string> project = args.value("project")) {
        // Does the page as it is now still behave as recorded?
        std::error_code error;
        fs::copy(*project, copy, fs::copy_options::recursive, error);
        if (error) return Status::ioError("--project " + *project + ": " + error.message());
    } else {
        IRIS_RETURN_IF_ERROR(restoreProjectFiles(recording.config, copy));
    }
    plan->environment.location = copy;
    std::cout << "project restored to " << copy << '\n';
    return plan;
}

// Runs the loop with `client` answering; `recorder` sees every step; the steps from
// `printFrom` on are printed as `iris run` prints them. Ctrl-C stops it within one step.
agent::LoopResult runReplayLoop(PreparedSession& prepared, agent::ModelClient& client,
                                ReplayRecorder& recorder, const agent::LoopOptions& options,
                                InterruptWatcher& interrupts, std::optional<int> printFrom) {
    agent::AgentLoop loop(*prepared.environment, client, agent::SafetyPolicy(prepared.safety),
                          prepared.workspace ? &*prepared.workspace : nullptr, &recorder, options);
    interrupts.onInterrupt([&loop] { loop.requestStop(); });
    const agent::LoopResult result = loop.run([&](const agent::StepReport& report) {
        if (printFrom && report.index >= *printFrom) printStep(std::cout, report);
    });
    interrupts.onInterrupt({});
    return result;
}

// A fork's end: its session's status is the live continuation's.
int finishFork(agent::SessionStore& store, const ReplayRecorder& recorder,
               const agent::LoopResult& result) {
    if (Status finished =
            store.finishSession(recorder.session(), sessionStatusOf(result.end), result.score);
        !finished.isOk()) {
        std::cerr << "iris replay: " << finished.message() << '\n';
    }
    std::cout << "fork: " << agent::loopEndName(result.end) << " after " << result.steps << " steps"
              << (result.message.empty() ? "" : " (" + result.message + ")") << '\n';
    return result.end == agent::LoopEnd::Done ? kExitDone : kExitNotDone;
}

// A replay's verdict: the first step whose screenshot diverges, a replay that ended early, or
// every step identical.
int reportComparison(std::int64_t session, int recordedSteps, const ReplayRecorder& recorder,
                     const agent::LoopResult& result) {
    if (recorder.firstDivergence()) {
        std::cout << "session " << session << " diverges first at step "
                  << *recorder.firstDivergence() + 1 << ": " << recorder.divergence() << '\n';
        return kExitNotDone;
    }
    if (recorder.compared() < recordedSteps) {
        std::cout << "replay ended after " << recorder.compared() << " of " << recordedSteps
                  << " steps: " << agent::loopEndName(result.end) << " (" << result.message
                  << ")\n";
        return kExitNotDone;
    }
    std::cout << "session " << session << ": all " << recordedSteps
              << " steps replayed with identical screenshots\n";
    return kExitDone;
}

}  // namespace

int runReplay(int argc, char** argv) {
    InterruptWatcher interrupts;  // before any thread exists
    const std::vector<OptionSpec> specs = replayOptions();
    Result<Arguments> args = Arguments::parse(argc, argv, specs);
    if (!args) {
        std::cerr << "iris replay: " << args.status().message() << '\n';
        return kExitUsage;
    }
    if (args->has("help")) {
        std::cout
            << "Usage: iris replay SESSION [--db FILE]\n"
               "       iris replay SESSION --from-step N (--model F.gguf | --endpoint URL)\n\n"
            << Arguments::usage(specs);
        return 0;
    }
    if (args->positional().size() != 1) {
        std::cerr << "iris replay: give one SESSION id (see iris sessions)\n";
        return kExitUsage;
    }
    Result<std::int64_t> id = parseSessionId(args->positional()[0]);
    const Result<std::int64_t> fromStep = args->integer("from-step", -1);
    const Result<double> tolerance = args->number("tolerance", 0.0);
    for (const Status& s : {id.status(), fromStep.status(), tolerance.status()}) {
        if (!s.isOk()) {
            std::cerr << "iris replay: " << s.message() << '\n';
            return kExitUsage;
        }
    }
    shareLocalEngines("replay");
    Result<std::unique_ptr<agent::ModelClient>> live = modelClientFromArguments(*args);
    if (!live) return fail(live.status().message());
    if (*live) sayWhichEngine(**live, std::cerr);
    const bool forking = *fromStep >= 0;
    if (forking != bool(*live)) {
        std::cerr << "iris replay: --from-step and --model/--endpoint go together\n";
        return kExitUsage;
    }

    const fs::path database = sessionDatabasePath(*args);
    Result<agent::SessionStore> store = agent::SessionStore::open(database);
    if (!store) return fail(store.status().message());
    Result<agent::SessionRecord> recording = store->loadSession(*id);
    if (!recording) return fail(recording.status().message());
    const int recordedSteps = int(recording->steps.size());
    if (forking && *fromStep > recordedSteps) {
        return fail("session " + std::to_string(*id) + " has only " +
                    std::to_string(recordedSteps) + " steps");
    }
    Result<SessionPlan> plan = replayPlan(*args, *recording, forking, database);
    if (!plan) return fail(plan.status().message());

    std::unique_ptr<QApplication> application = makeBrowserApplication(argc, argv);
    Result<PreparedSession> prepared = prepareSession(*plan);
    if (!prepared) return fail(prepared.status().message());

    ReplayRecorder recorder(*recording, *tolerance, std::cout);
    agent::ReplayClient replay(*recording);
    std::optional<agent::ForkClient> fork;
    agent::ModelClient* client = &replay;
    if (forking) {
        Result<std::int64_t> forked = store->forkSession(*id, int(*fromStep));
        if (!forked) return fail(forked.status().message());
        recorder.forkInto(&*store, *forked, int(*fromStep));
        fork.emplace(*recording, int(*fromStep), std::move(*live));
        client = &*fork;
        std::cout << "session " << *forked << ": fork of session " << *id << " at step "
                  << *fromStep + 1 << '\n';
    }
    const agent::LoopResult result =
        runReplayLoop(*prepared, *client, recorder, plan->loop, interrupts,
                      forking ? std::optional<int>(int(*fromStep)) : std::nullopt);
    if (forking) return finishFork(*store, recorder, result);
    return reportComparison(*id, recordedSteps, recorder, result);
}

}  // namespace iris::app
