// iris demo [--model F.gguf | --endpoint URL] [--db FILE] [--workdir DIR]: the visual-feedback loop
// on the bundled sample web project towards the bundled target mockup.
// iris demo --live [--task NAME|all]: the model bundled with Iris on bundled grounding tasks.
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include <QApplication>

#include "agent/recording/replay_client.h"
#include "app/cli/agent_commands.h"
#include "app/cli/agent_session.h"
#include "app/cli/agent_setup.h"
#include "app/cli/eval/eval_runner.h"
#include "app/session/browser_application.h"
#include "app/session/demo_project.h"
#include "app/session/live_demo.h"
#include "base/temporary_folder.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;

std::vector<OptionSpec> demoOptions() {
    std::vector<OptionSpec> options = {
        {"live", "", false,
         "run the model bundled with Iris (iris-tiny-cua) on a bundled grounding task instead: "
         "no model to give, nothing to download"},
        {"task", "", true,
         "with --live: which task of tasks/examples/synthetic-grounding (default " +
             std::string(kLiveDemoTask) + "), or all"},
        {"workdir", "", true,
         "copy the sample project here (default: a new folder in /tmp); with --live, the "
         "results folder"},
        {"max-steps", "", true, "model calls at most (default 12)"},
        {"help", "h", false, "show this help"},
    };
    for (const OptionSpec& spec : modelAndDatabaseOptions())
        options.push_back(spec);
    return options;
}

// Each step's answer, from the trajectory the evaluation wrote for every task under `results`.
void printAnswers(const fs::path& results, std::ostream& out) {
    std::error_code error;
    for (const auto& file : fs::recursive_directory_iterator(results, error)) {
        if (file.path().filename() != "traj.jsonl") continue;
        out << file.path().parent_path().filename().string() << ":\n";
        std::ifstream in(file.path());
        for (std::string line; std::getline(in, line);) {
            const nlohmann::json step = nlohmann::json::parse(line, nullptr, false);
            if (!step.is_object()) continue;
            out << "  step " << step.value("step_num", 0) << ": "
                << step.value("response", std::string()) << '\n';
        }
    }
}

int runLiveDemo(const Arguments& args, int argc, char** argv, InterruptWatcher& interrupts) {
    Result<LiveDemo> demo = prepareLiveDemo(args.value("task").value_or(kLiveDemoTask));
    if (!demo) {
        std::cerr << "iris demo: " << demo.status().message() << '\n';
        return kExitError;
    }
    fs::path out;
    if (std::optional<std::string> workdir = args.value("workdir")) {
        out = *workdir;
    } else {
        Result<TemporaryFolder> folder = TemporaryFolder::create("iris-demo-live");
        if (!folder) {
            std::cerr << "iris demo: " << folder.status().message() << '\n';
            return kExitError;
        }
        out = folder->release();  // kept: the answers, screenshots and recording are the demo
    }
    eval::EvalRunOptions options;
    options.tasks = demo->tasks;
    options.out = out;
    options.model = demo->model;
    options.model.shareEngine = false;
    const Result<std::int64_t> threads = args.integer("threads", options.model.threads);
    if (!threads || *threads < 1) {
        std::cerr << "iris demo: --threads must be a number >= 1\n";
        return kExitUsage;
    }
    options.model.threads = int(*threads);
    options.modelName = kBundledModelName;
    options.actionFormat = demo->entry.actionFormat;
    options.screenshotsInHistory = demo->entry.history;
    std::cout << "Live: " << kBundledModelName << " (" << demo->model.modelPath.string()
              << ", bundled with Iris) on " << demo->tasks.string() << "\n"
              << "Every answer below is the model's own output, acted out in the real browser "
                 "and scored by the task's checker.\n\n";
    std::unique_ptr<QApplication> application = makeBrowserApplication(argc, argv);
    const int status = eval::runEvaluation(options, std::cout, std::cerr, &interrupts);
    std::cout << '\n';
    printAnswers(out, std::cout);
    std::cout << "\nscreenshots, trajectory and a video of each task: " << out.string()
              << "\n(iris eval report " << out.string() << " writes an HTML page of them)\n";
    return status;
}

}  // namespace

int runDemo(int argc, char** argv) {
    InterruptWatcher interrupts;  // before any thread exists
    const std::vector<OptionSpec> specs = demoOptions();
    Result<Arguments> args = Arguments::parse(argc, argv, specs);
    if (!args) {
        std::cerr << "iris demo: " << args.status().message() << '\n';
        return kExitUsage;
    }
    if (args->has("help")) {
        std::cout << "Usage: iris demo [--model F.gguf | --endpoint URL] [options]\n"
                     "       iris demo --live [--task NAME|all]\n\n"
                     "Runs the visual-feedback loop on a bundled sample web project until it "
                     "matches a bundled mockup.\nWithout a model it replays a scripted "
                     "demonstration through the real browser, edits and scoring.\n"
                     "--live runs the small model bundled with Iris on a bundled grounding task "
                     "instead (real model output,\nreal clicks, the task's own checker).\n\n"
                  << Arguments::usage(specs);
        return 0;
    }
    if (args->has("live")) {
        if (args->has("model") || args->has("endpoint")) {
            std::cerr << "iris demo: --live runs the bundled model; to run another on these "
                         "tasks: iris eval run --model\n";
            return kExitUsage;
        }
        return runLiveDemo(*args, argc, argv, interrupts);
    }
    if (args->has("task")) {
        std::cerr << "iris demo: --task needs --live\n";
        return kExitUsage;
    }
    const Result<std::int64_t> maxSteps = args->integer("max-steps", 12);
    if (!maxSteps || *maxSteps < 1) {
        std::cerr << "iris demo: --max-steps must be a number >= 1\n";
        return kExitUsage;
    }
    Result<std::unique_ptr<agent::ModelClient>> client = modelClientFromArguments(*args);
    if (!client) {
        std::cerr << "iris demo: " << client.status().message() << '\n';
        return kExitError;
    }
    std::optional<fs::path> workdir;
    if (std::optional<std::string> requested = args->value("workdir")) workdir = *requested;
    Result<DemoProject> demo = prepareDemoProject(workdir);
    if (!demo) {
        std::cerr << "iris demo: " << demo.status().message() << '\n';
        return kExitError;
    }

    SessionPlan plan = makeDemoPlan(*demo, int(*maxSteps));
    std::unique_ptr<agent::ModelClient> replay;
    if (!*client) {
        std::cout << "No model given: replaying the bundled demonstration (answers scripted by the "
                     "Iris developers, not model output)\nthrough the real browser, file edits "
                     "and scoring. To run it live:\n"
                     "  iris demo --model MODEL.gguf          (Iris's engine)\n"
                     "  iris demo --endpoint http://HOST:PORT/v1 --model-name NAME   "
                     "(an OpenAI-compatible server)\n\n";
        replay = std::make_unique<agent::ReplayClient>(demo->demonstration);
        plan.clientDescription = "demonstration " + demo->demonstrationPath.string();
    }
    std::cout << "project: " << demo->workdir.string()
              << " (a copy; the bundled files stay as they are)\n"
              << "target:  " << demo->targetPath.string() << '\n';

    plan.database = sessionDatabasePath(*args);

    std::unique_ptr<QApplication> application = makeBrowserApplication(argc, argv);
    agent::ModelClient& answering = *client ? **client : *replay;
    return runAgentSession(plan, answering, std::cout, std::cerr, &interrupts);
}

}  // namespace iris::app
