// iris demo [--model F.gguf | --endpoint URL] [--db FILE] [--workdir DIR]: the visual-feedback loop
// on the bundled sample web project towards the bundled target mockup.
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>
#include <stdlib.h>

#include <QApplication>

#include "agent/image_codec.h"
#include "agent/recording/chat_json.h"
#include "agent/recording/replay_client.h"
#include "app/cli/agent_commands.h"
#include "app/cli/agent_session.h"
#include "app/cli/agent_setup.h"

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

struct Demonstration {
    std::string instruction;
    agent::SessionRecord answers;  // as a recording, for the replay client
};

// resources/demo/demonstration.json: the scripted answers replayed when no model is configured.
Result<Demonstration> readDemonstration(const fs::path& path) {
    std::ifstream file(path);
    if (!file) return Status::notFound(path.string() + ": cannot open the demonstration");
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(file);
    } catch (const nlohmann::json::parse_error& e) {
        return Status::corrupt(path.string() + ": byte " + std::to_string(e.byte) + ": not JSON");
    }
    Demonstration demo;
    demo.instruction = json.value("instruction", "");
    const nlohmann::json responses = json.value("responses", nlohmann::json::array());
    for (std::size_t i = 0; i < responses.size(); ++i) {
        Result<agent::ChatResponse> response = agent::chatResponseFromJson(responses[i]);
        if (!response) {
            return Status::corrupt(path.string() + ": responses[" + std::to_string(i) +
                                   "]: " + response.status().message());
        }
        agent::StepRecord step;
        step.index = int(i);
        step.response = std::move(*response);
        demo.answers.steps.push_back(std::move(step));
    }
    if (demo.instruction.empty() || demo.answers.steps.empty())
        return Status::corrupt(path.string() + ": needs 'instruction' and 'responses'");
    return demo;
}

Result<fs::path> prepareWorkdir(const std::optional<std::string>& requested,
                                const fs::path& project) {
    fs::path dir;
    if (requested) {
        dir = *requested;
        std::error_code error;
        if (fs::exists(dir, error) && !fs::is_empty(dir, error))
            return Status::invalidArgument("--workdir " + dir.string() + " is not empty");
        fs::create_directories(dir, error);
        if (error) return Status::ioError(dir.string() + ": " + error.message());
    } else {
        std::string pattern = (fs::temp_directory_path() / "iris-demo-XXXXXX").string();
        if (!mkdtemp(pattern.data())) return Status::ioError("cannot create a folder in /tmp");
        dir = pattern;
    }
    std::error_code error;
    fs::copy(project, dir, fs::copy_options::recursive, error);
    if (error)
        return Status::ioError("copying the sample project to " + dir.string() + ": " +
                               error.message());
    return fs::canonical(dir);
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
    const fs::path demo = dataDirectory() / "demo";
    Result<Demonstration> demonstration = readDemonstration(demo / "demonstration.json");
    Result<cv::Mat> target = agent::readImageFile((demo / "target.png").string());
    for (const Status& s : {demonstration.status(), target.status()}) {
        if (!s.isOk()) {
            std::cerr << "iris demo: " << s.message() << " (set IRIS_DATA_DIR?)\n";
            return kExitError;
        }
    }
    const Result<std::int64_t> maxSteps = args->integer("max-steps", 12);
    if (!maxSteps || *maxSteps < 1) {
        std::cerr << "iris demo: --max-steps must be a number >= 1\n";
        return kExitUsage;
    }

    Result<std::unique_ptr<agent::ModelClient>> client = makeModelClient(*args);
    if (!client) {
        std::cerr << "iris demo: " << client.status().message() << '\n';
        return kExitError;
    }
    SessionPlan plan;
    std::unique_ptr<agent::ModelClient> replay;
    if (!*client) {
        std::cout << "No model given: replaying the bundled demonstration (answers scripted by the "
                     "Iris developers, not model output)\nthrough the real browser, file edits "
                     "and scoring. To run it live:\n"
                     "  iris demo --model MODEL.gguf          (Iris's engine)\n"
                     "  iris demo --endpoint http://HOST:PORT/v1 --model-name NAME   "
                     "(an OpenAI-compatible server)\n\n";
        replay = std::make_unique<agent::ReplayClient>(demonstration->answers);
        plan.clientDescription = "demonstration " + (demo / "demonstration.json").string();
    }

    Result<fs::path> workdir = prepareWorkdir(args->value("workdir"), demo / "project");
    if (!workdir) {
        std::cerr << "iris demo: " << workdir.status().message() << '\n';
        return kExitError;
    }
    std::cout << "project: " << workdir->string()
              << " (a copy; the bundled files stay as they are)\n"
              << "target:  " << (demo / "target.png").string() << '\n';

    plan.environment.kind = EnvironmentSpec::Kind::WebProject;
    plan.environment.location = workdir->string();
    plan.environmentText = "web:" + workdir->string();
    plan.environment.width = target->cols;
    plan.environment.height = target->rows;
    plan.loop.instruction = demonstration->instruction;
    plan.loop.format = agent::ActionFormat::ToolCalls;
    plan.loop.browser = true;
    plan.loop.maxSteps = int(*maxSteps);
    plan.loop.goal = agent::VisualGoal{*target, 0.99, 3};
    plan.database = sessionDatabasePath(*args);

    std::unique_ptr<QApplication> application = makeBrowserApplication(argc, argv);
    agent::ModelClient& answering = *client ? **client : *replay;
    return runAgentSession(plan, answering, std::cout, std::cerr, &interrupts);
}

}  // namespace iris::app
