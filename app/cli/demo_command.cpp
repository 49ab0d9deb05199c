// iris demo [--model F.gguf | --endpoint URL] [--db FILE] [--workdir DIR]: the visual-feedback loop
// on the bundled sample web project towards the bundled target mockup.
#include <iostream>

#include <QApplication>

#include "agent/recording/replay_client.h"
#include "app/cli/agent_commands.h"
#include "app/cli/agent_session.h"
#include "app/cli/agent_setup.h"
#include "app/session/browser_application.h"
#include "app/session/demo_project.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;

std::vector<OptionSpec> demoOptions() {
    std::vector<OptionSpec> options = {
        {"workdir", "", true, "copy the sample project here (default: a new folder in /tmp)"},
        {"max-steps", "", true, "model calls at most (default 12)"},
        {"help", "h", false, "show this help"},
    };
    for (const OptionSpec& spec : modelAndDatabaseOptions())
        options.push_back(spec);
    return options;
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
        std::cout << "Usage: iris demo [--model F.gguf | --endpoint URL] [options]\n\n"
                     "Runs the visual-feedback loop on a bundled sample web project until it "
                     "matches a bundled mockup.\nWithout a model it replays a scripted "
                     "demonstration through the real browser, edits and scoring.\n\n"
                  << Arguments::usage(specs);
        return 0;
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
