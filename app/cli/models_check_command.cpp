// iris models check (NAME | F.gguf | --model NAME|F.gguf [--mmproj MM.gguf]
//                    | --endpoint URL [--model-name N])
//                   [--tasks N] [--seed S] [--screens WxH,...] [--action-format F] [--coords C]
//                   [--json] [--details]
// The grounding self-test: how well a model clicks where it is asked to, on seeded synthetic
// pages (app/session/grounding_check.h).
#include <atomic>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <QApplication>

#include "agent/grounding/grounding_report.h"
#include "app/cli/agent_setup.h"
#include "app/cli/coordinate_frame_option.h"
#include "app/cli/interrupt_watcher.h"
#include "app/cli/models_commands.h"
#include "app/session/browser_application.h"
#include "app/session/environment_spec.h"
#include "app/session/grounding_check.h"

namespace iris::app {
namespace {

namespace gr = agent::grounding;

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

std::vector<OptionSpec> checkOptions() {
    std::vector<OptionSpec> options = {
        {"tasks", "n", true, "pages to check (default 20)"},
        {"seed", "", true, "the pages' seed: the same seed gives the same pages (default 1)"},
        {"screens", "", true,
         "screen sizes the pages cycle through, e.g. 1280x800,1920x1080 (default: the model's "
         "image budget when known, then 1280x800, 1920x1080 and 1024x768)"},
        actionFormatOption(),
        coordinateFrameOption(/*resizedPerScreen=*/true),
        {"json", "", false, "print the report as JSON"},
        {"details", "", false, "one line (or JSON object) per page as well"},
        {"help", "h", false, "show this help"},
    };
    for (const OptionSpec& spec : modelAndDatabaseOptions())
        if (spec.name != "db") options.push_back(spec);
    return options;
}

int usageError(const std::string& message) {
    std::cerr << "iris models check: " << message
              << "\nRun 'iris models check --help' for the options.\n";
    return kExitUsage;
}

Result<std::vector<gr::ScreenSize>> parseScreens(const std::string& text) {
    std::vector<gr::ScreenSize> screens;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        Result<std::pair<int, int>> size = parseSize(text.substr(start, comma - start));
        if (!size) return size.status().withContext("--screens: ");
        if (size->first < 480 || size->second < 360 || size->first > 8192 || size->second > 8192)
            return Status::invalidArgument("--screens: " + text.substr(start, comma - start) +
                                           ": sizes from 480x360 to 8192x8192 are checked");
        screens.push_back({size->first, size->second});
        start = comma + 1;
    }
    return screens;
}

void printHelp(const std::vector<OptionSpec>& specs) {
    std::cout
        << "Usage: iris models check (NAME | F.gguf | --model NAME|F.gguf [--mmproj MM.gguf] |\n"
           "                          --endpoint URL) [options]\n\n"
           "NAME is a model pulled with 'iris models pull'; its catalogue entry sets the action\n"
           "format and coordinate frame unless --action-format or --coords say otherwise.\n\n"
           "Renders --tasks synthetic pages (buttons, links, text fields, checkboxes and labelled\n"
           "icons at random places, sizes and themes) in Iris's offscreen browser, asks the model\n"
           "in one agent step per page to click a described element, and reports the hit rate,\n"
           "the median and 90th percentile distance from the target's centre in screen pixels,\n"
           "the time per step and the answers that did not parse; overall, per element kind and\n"
           "per screen size. The same seed gives the same pages, so two quantizations of one\n"
           "model can be compared.\n\n"
        << Arguments::usage(specs)
        << "\nExit status: 0 the check ran, 1 it could not run, 2 bad usage.\n";
}

}  // namespace

int runModelsCheck(int argc, char** argv) {
    InterruptWatcher interrupts;  // before any thread exists
    const std::vector<OptionSpec> specs = checkOptions();
    Result<Arguments> args = Arguments::parse(argc, argv, specs);
    if (!args) return usageError(args.status().message());
    if (args->has("help")) {
        printHelp(specs);
        return kExitOk;
    }
    if (args->positional().size() > 1)
        return usageError("give one model, not " + std::to_string(args->positional().size()));

    GroundingCheckOptions options;
    const Result<std::int64_t> tasks = args->integer("tasks", 20);
    const Result<std::int64_t> seed = args->integer("seed", 1);
    for (const Status& s : {tasks.status(), seed.status()})
        if (!s.isOk()) return usageError(s.message());
    if (*tasks < 1 || *tasks > 100000) return usageError("--tasks must be from 1 to 100000");
    if (*seed < 0) return usageError("--seed must be >= 0");
    options.pages = int(*tasks);
    options.seed = std::uint64_t(*seed);
    if (std::optional<std::string> screens = args->value("screens")) {
        Result<std::vector<gr::ScreenSize>> parsed = parseScreens(*screens);
        if (!parsed) return usageError(parsed.status().message());
        options.screens = *parsed;
    }
    // A model named on its own is --model: a GGUF file, or a model pulled by name (iris models
    // pull), whose catalogue entry brings its action format and coordinate frame.
    std::vector<char*> withModel(argv, argv + argc);
    std::string modelFlag = "--model";
    std::string name;
    if (!args->positional().empty()) {
        name = args->positional()[0];
        if (args->has("model") || args->has("endpoint"))
            return usageError(
                "give the model as F.gguf or NAME, or as --model/--endpoint, not both");
        if (name.ends_with(".gguf") && !std::filesystem::is_regular_file(name))
            return usageError("'" + name +
                              "' is not a GGUF file; give F.gguf, a pulled model's "
                              "NAME, --model F.gguf [--mmproj MM.gguf] or --endpoint URL");
        withModel.push_back(modelFlag.data());
        withModel.push_back(name.data());
        args = Arguments::parse(int(withModel.size()), withModel.data(), specs);
        if (!args) return usageError(args.status().message());
    }
    const std::optional<models::CatalogueEntry> entry = catalogueEntryFromArguments(*args);
    Result<agent::ActionFormat> format = agent::actionFormatFromName(
        args->value("action-format").value_or(entry ? entry->actionFormat : "tools"));
    if (!format) return usageError(format.status().message());
    options.format = *format;
    std::optional<std::string> coords = args->value("coords");
    if (!coords && entry && !args->has("action-format")) coords = entry->coords;
    if (coords) {
        // The pages come in several screen sizes: "resized" follows each one.
        if (*coords == "resized") {
            options.resizedFramePerScreen = true;
        } else {
            Result<agent::CoordinateFrame> frame = parseCoordinateFrame(*coords, std::nullopt);
            if (!frame) return usageError(frame.status().message());
            options.frame = *frame;
        }
    }

    Result<ModelChoice> choice = modelChoiceFromArguments(*args);
    if (!choice) return usageError(choice.status().message());
    if (choice->backend == ModelChoice::Backend::None)
        return usageError(
            "give a model: F.gguf, --model F.gguf [--mmproj MM.gguf] or --endpoint URL");

    Result<std::unique_ptr<agent::ModelClient>> client = makeModelClient(*choice);
    if (!client) {
        std::cerr << "iris models check: " << client.status().message() << '\n';
        return kExitFailed;
    }
    agent::ModelClient& model = **client;

    std::unique_ptr<QApplication> application = makeBrowserApplication(argc, argv);
    std::atomic<bool> stop{false};
    interrupts.onInterrupt([&] {
        stop = true;
        model.cancel();
    });
    const bool json = args->has("json");
    const bool details = args->has("details");
    Result<gr::GroundingReport> report = runGroundingCheck(
        model, options,
        [](const gr::PageOutcome& outcome, int done, int total) {
            std::cerr << "[" << done << '/' << total << "] " << gr::pageLine(outcome) << '\n';
        },
        &stop);
    interrupts.onInterrupt({});
    if (!report) {
        std::cerr << "iris models check: " << report.status().message() << '\n';
        return kExitFailed;
    }
    if (json) {
        std::cout << gr::reportJson(*report, details).dump(2) << '\n';
    } else {
        std::cout << gr::reportText(*report, details);
    }
    return kExitOk;
}

}  // namespace iris::app
