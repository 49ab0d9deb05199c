// iris run --instruction TEXT | --task FILE.json  --env web:DIR|url:URL|desktop[:private]
//          [--target IMAGE] (--model F.gguf|NAME | --endpoint URL) [--action-format F] [--max-steps
//          N]
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include <QApplication>

#include "agent/image_codec.h"
#include "app/cli/agent_commands.h"
#include "app/cli/agent_session.h"
#include "app/cli/agent_setup.h"
#include "app/cli/coordinate_frame_option.h"
#include "app/session/browser_application.h"
#include "app/session/environment_spec.h"
#include "app/session/json_file.h"

namespace iris::app {
namespace {

std::vector<OptionSpec> runOptions() {
    std::vector<OptionSpec> options = {
        {"instruction", "i", true, "what the agent should do"},
        {"task", "", true, "an OSWorld-style task JSON file (its instruction, and its start URL)"},
        {"env", "e", true,
         "web:DIR, url:URL, desktop[:x11|:wayland] or desktop:private[-wayland] (default web:. "
         "with --target)"},
        {"target", "", true, "a mockup image: visual-feedback mode (score, keep or revert edits)"},
        actionFormatOption(),
        coordinateFrameOption(),
        {"max-steps", "", true, "model calls at most (default 15)"},
        {"history", "", true,
         "screenshots kept in the prompt (default: the catalogue model's, else 3)"},
        {"viewport", "", true, "browser viewport or private display size (default 1280x800)"},
        {"patience", "", true, "visual mode: edits without improvement before giving up (3)"},
        {"good-enough", "", true, "visual mode: stop once the score reaches this (0.99)"},
        {"pause-ms", "", true, "wait after each step's actions before looking (default 0)"},
        {"loop-limit", "", true,
         "stop when the agent repeats one action on an unchanged screen this many times in a "
         "row (default 5; 0: never)"},
        {"allow-shell", "", false, "let the agent run shell commands (off by default)"},
        {"help", "h", false, "show this help"},
    };
    for (const OptionSpec& spec : modelAndDatabaseOptions())
        options.push_back(spec);
    return options;
}

int usageError(const std::string& message) {
    std::cerr << "iris run: " << message << "\nRun 'iris run --help' for the options.\n";
    return kExitUsage;
}

// The instruction (and a start URL, when the task opens one) of an OSWorld task file.
struct TaskFile {
    std::string instruction;
    std::string startUrl;
};

Result<TaskFile> readTaskFile(const std::string& path) {
    Result<nlohmann::json> read = readJsonFile(path, "cannot open the task file");
    if (!read) return read.status();
    const nlohmann::json& json = *read;
    if (!json.is_object()) return Status::corrupt(path + ": a task is a JSON object");
    const auto instruction = json.find("instruction");
    if (instruction == json.end() || !instruction->is_string() ||
        instruction->get<std::string>().empty()) {
        return Status::corrupt(path + ": field 'instruction': expected a non-empty string");
    }
    TaskFile task{instruction->get<std::string>(), {}};
    if (const auto config = json.find("config"); config != json.end() && config->is_array()) {
        for (const nlohmann::json& step : *config) {
            if (!step.is_object() || step.value("type", "") != "chrome_open_tabs") continue;
            const nlohmann::json urls = step.value("parameters", nlohmann::json::object())
                                            .value("urls_to_open", nlohmann::json::array());
            if (!urls.empty() && urls[0].is_string()) task.startUrl = urls[0].get<std::string>();
        }
    }
    return task;
}

}  // namespace

int runRun(int argc, char** argv) {
    InterruptWatcher interrupts;  // before any thread exists
    const std::vector<OptionSpec> specs = runOptions();
    Result<Arguments> args = Arguments::parse(argc, argv, specs);
    if (!args) return usageError(args.status().message());
    if (args->has("help")) {
        std::cout << "Usage: iris run (--instruction TEXT | --task FILE.json) --env ENV "
                     "(--model F.gguf | --endpoint URL) [options]\n\n"
                  << Arguments::usage(specs)
                  << "\nExit status: 0 done, 1 the agent gave up (fail, step limit, no "
                     "improvement), 2 bad usage, 3 error or stopped.\n";
        return 0;
    }

    SessionPlan plan;
    std::string startUrl;
    if (std::optional<std::string> task = args->value("task")) {
        Result<TaskFile> file = readTaskFile(*task);
        if (!file) {
            std::cerr << "iris run: " << file.status().message() << '\n';
            return kExitError;
        }
        plan.loop.instruction = file->instruction;
        startUrl = file->startUrl;
    }
    if (std::optional<std::string> instruction = args->value("instruction"))
        plan.loop.instruction = *instruction;
    if (plan.loop.instruction.empty()) return usageError("give --instruction or --task");

    std::string env = args->value("env").value_or("");
    if (env.empty())
        env = !startUrl.empty() ? "url:" + startUrl : (args->has("target") ? "web:." : "");
    if (env.empty())
        return usageError(
            "give --env (web:DIR, url:URL, desktop[:x11|:wayland], desktop:private[-wayland])");
    Result<EnvironmentSpec> environment = parseEnvironmentSpec(env);
    if (!environment) return usageError(environment.status().message());
    plan.environment = *environment;
    if (std::optional<std::string> viewport = args->value("viewport")) {
        Result<std::pair<int, int>> size = parseSize(*viewport);
        if (!size) return usageError("--viewport: " + size.status().message());
        plan.environment.width = size->first;
        plan.environment.height = size->second;
    }

    // A pulled catalogue model (--model ui-tars-1.5-7b) brings its format and frame; the options
    // still win.
    const std::optional<models::CatalogueEntry> entry = catalogueEntryFromArguments(*args);
    Result<agent::ActionFormat> format = agent::actionFormatFromName(
        args->value("action-format").value_or(entry ? entry->actionFormat : "tools"));
    if (!format) return usageError(format.status().message());
    plan.loop.format = *format;
    std::optional<std::pair<int, int>> screen;
    if (plan.environment.kind != EnvironmentSpec::Kind::Desktop)
        screen = std::pair(plan.environment.width, plan.environment.height);
    // Without --coords the loop takes the format's default (defaultCoordinateFrame).
    std::optional<std::string> coords = args->value("coords");
    if (!coords && entry && !args->has("action-format")) coords = entry->coords;
    if (coords) {
        Result<agent::CoordinateFrame> frame = parseCoordinateFrame(*coords, screen);
        if (!frame) return usageError(frame.status().message());
        plan.loop.frame = *frame;
    }

    const Result<std::int64_t> maxSteps = args->integer("max-steps", 15);
    const Result<std::int64_t> history =
        args->integer("history", entry && entry->history > 0 ? entry->history : 3);
    const Result<std::int64_t> patience = args->integer("patience", 3);
    const Result<double> goodEnough = args->number("good-enough", 0.99);
    const Result<double> pause = args->number("pause-ms", 0);
    const Result<std::int64_t> loopLimit =
        args->integer("loop-limit", agent::RunawayDetector::kDefaultLimit);
    for (const Status& s : {maxSteps.status(), history.status(), patience.status(),
                            goodEnough.status(), pause.status(), loopLimit.status()}) {
        if (!s.isOk()) return usageError(s.message());
    }
    if (*maxSteps < 1 || *history < 1 || *patience < 1 || *pause < 0 || *loopLimit < 0)
        return usageError(
            "--max-steps, --history and --patience must be >= 1, --pause-ms and --loop-limit "
            ">= 0");
    plan.loop.runawayLimit = int(*loopLimit);
    plan.loop.maxSteps = int(*maxSteps);
    plan.loop.screenshotsInHistory = int(*history);
    plan.loop.pauseAfterActionsMs = *pause;
    plan.loop.browser = plan.environment.kind == EnvironmentSpec::Kind::WebProject ||
                        plan.environment.kind == EnvironmentSpec::Kind::Url;
    plan.allowShell = args->has("allow-shell");
    plan.database = sessionDatabasePath(*args);

    if (std::optional<std::string> target = args->value("target")) {
        if (plan.environment.kind != EnvironmentSpec::Kind::WebProject)
            return usageError("--target needs a web project (--env web:DIR)");
        Result<cv::Mat> image = agent::readImageFile(*target);
        if (!image) {
            std::cerr << "iris run: " << image.status().message() << '\n';
            return kExitError;
        }
        plan.loop.goal = agent::VisualGoal{*image, *goodEnough, int(*patience)};
    }

    shareLocalEngines("run");
    Result<std::unique_ptr<agent::ModelClient>> client = modelClientFromArguments(*args);
    if (!client) {
        std::cerr << "iris run: " << client.status().message() << '\n';
        return kExitError;
    }
    if (!*client) return usageError("give --model F.gguf or --endpoint URL");
    sayWhichEngine(**client, std::cerr);

    std::unique_ptr<QApplication> application = makeBrowserApplication(argc, argv);
    return runAgentSession(plan, **client, std::cout, std::cerr, &interrupts);
}

}  // namespace iris::app
