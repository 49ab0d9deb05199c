// iris models data --split train|heldout [--seed S] [--count N] [--first N] [--max-pixels P]
//                  [--invented-text] [--invented-labels] [--more-templates] --out DIR
//                  [--osworld]
// Synthetic training and evaluation data for a small computer-use model: seeded template pages
// played step by step in Iris's offscreen browser (app/session/grounding_data.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <QApplication>
#include <QCoreApplication>
#include <QProcess>
#include <QStringList>

#include "app/cli/arguments.h"
#include "app/cli/interrupt_watcher.h"
#include "app/cli/models_commands.h"
#include "app/session/browser_application.h"
#include "app/session/grounding_data.h"

namespace iris::app {
namespace {

namespace gr = agent::grounding;

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

const std::vector<OptionSpec>& dataOptions() {
    static const std::vector<OptionSpec> options = {
        {"split", "", true, "train or heldout: which template family and seed stream"},
        {"seed", "", true, "the tasks' seed (default 1)"},
        {"count", "n", true, "tasks to write (default 100)"},
        {"first", "", true, "index of the first task (default 0), to write a set in parts"},
        {"max-pixels", "", true,
         "pixel budget of the model's image (default 3211264 = 4096 x 28 x 28); screenshots "
         "are smart-resized with it and answers are in its pixels"},
        {"invented-text", "", false,
         "make up the text tasks ask to type (names, words, addresses, file names) instead of "
         "drawing it from the generator's word lists, so that a model learns to copy it from "
         "the instruction; the pages stay the same"},
        {"invented-labels", "", false,
         "replace every word the pages show (labels, headings, field names) by a made-up one, "
         "in the instruction too, so that a model learns to match labels letter by letter "
         "instead of memorising the generator's few dozen; the layouts stay the same"},
        {"more-templates", "", false,
         "train split: 11 templates instead of 8 (adds form/contact, list/todo, nav/tabs), "
         "more kinds of page to generalise from; the heldout split is the same either way"},
        {"out", "o", true, "the folder to write"},
        {"jobs", "j", true,
         "processes writing parts of the set at once (default 1); the result is the same "
         "files, in far less time where rendering waits on frames"},
        {"messages", "", false,
         "add to every example the chat request Iris's agent loop sends at that step "
         "(messages, images named by their files)"},
        {"osworld", "", false,
         "write OSWorld task files with demonstrations (answers in screen pixels) for "
         "'iris eval run' instead of training examples"},
        {"help", "h", false, "show this help"},
    };
    return options;
}

int usageError(const std::string& message) {
    std::cerr << "iris models data: " << message
              << "\nRun 'iris models data --help' for the options.\n";
    return kExitUsage;
}

void printHelp() {
    std::cout
        << "Usage: iris models data --split train|heldout --out DIR [options]\n\n"
           "Writes synthetic computer-use tasks (forms, toolbars, tables and lists, dialogs,\n"
           "navigation bars, cards) played in Iris's offscreen browser: every step's screenshot\n"
           "resized to the model's input (DIR/images/), one JSON line per step with the\n"
           "instruction, the previous answers and the correct UI-TARS answer\n"
           "(DIR/examples.jsonl), and DIR/dataset.json. The heldout split uses templates and\n"
           "seed streams the train split never uses. The same options give the same\n"
           "examples.jsonl, byte for byte.\n\n"
        << Arguments::usage(dataOptions())
        << "\nExit status: 0 written, 1 a task could not be rendered or written, 2 bad usage.\n";
}

// Runs `jobs` child processes of this program, each writing a contiguous part of the tasks into
// its own folder under options.out, and joins their output.
Result<GroundingDataSummary> writeInParts(const GroundingDataOptions& options, int jobs) {
    const QString program = QCoreApplication::applicationFilePath();
    std::vector<std::unique_ptr<QProcess>> children;
    std::vector<std::filesystem::path> parts;
    const int per = (options.count + jobs - 1) / jobs;
    for (int begin = 0; begin < options.count; begin += per) {
        const int count = std::min(per, options.count - begin);
        parts.push_back(options.out / (".part-" + std::to_string(parts.size())));
        QStringList arguments = {
            QStringLiteral("models"),       QStringLiteral("data"),
            QStringLiteral("--split"),      QString::fromUtf8(gr::splitName(options.split).data()),
            QStringLiteral("--seed"),       QString::number(options.seed),
            QStringLiteral("--first"),      QString::number(options.firstIndex + begin),
            QStringLiteral("--count"),      QString::number(count),
            QStringLiteral("--max-pixels"), QString::number(options.maxPixels),
            QStringLiteral("--out"),        QString::fromStdString(parts.back().string())};
        if (options.osworld) arguments << QStringLiteral("--osworld");
        if (options.tasks.typed == gr::TypedText::Invented)
            arguments << QStringLiteral("--invented-text");
        if (options.tasks.inventedLabels) arguments << QStringLiteral("--invented-labels");
        if (options.tasks.moreTemplates) arguments << QStringLiteral("--more-templates");
        if (options.messages) arguments << QStringLiteral("--messages");
        auto child = std::make_unique<QProcess>();
        child->setProcessChannelMode(QProcess::ForwardedErrorChannel);
        child->setStandardOutputFile(QProcess::nullDevice());
        child->start(program, arguments);
        if (!child->waitForStarted(-1))
            return Status::ioError(program.toStdString() +
                                   ": cannot start a part: " + child->errorString().toStdString());
        children.push_back(std::move(child));
    }
    Status failed = Status::ok();
    for (std::size_t i = 0; i < children.size(); ++i) {
        children[i]->waitForFinished(-1);
        if (failed.isOk() &&
            (children[i]->exitStatus() != QProcess::NormalExit || children[i]->exitCode() != 0))
            failed = Status::internal("part " + std::to_string(i) + " (" + parts[i].string() +
                                      ") failed; its messages are above");
    }
    IRIS_RETURN_IF_ERROR(failed);
    return joinGroundingDataParts(options, parts);
}

}  // namespace

int runModelsData(int argc, char** argv) {
    InterruptWatcher interrupts;  // before any thread exists
    Result<Arguments> args = Arguments::parse(argc, argv, dataOptions());
    if (!args) return usageError(args.status().message());
    if (args->has("help")) {
        printHelp();
        return kExitOk;
    }
    if (!args->positional().empty()) return usageError("no positional arguments are taken");
    GroundingDataOptions options;
    const std::string split = args->value("split").value_or("");
    if (split == "train") {
        options.split = gr::Split::Train;
    } else if (split == "heldout") {
        options.split = gr::Split::HeldOut;
    } else {
        return usageError("--split must be train or heldout");
    }
    const std::optional<std::string> out = args->value("out");
    if (!out) return usageError("--out DIR is needed");
    options.out = *out;
    const Result<std::int64_t> seed = args->integer("seed", 1);
    const Result<std::int64_t> count = args->integer("count", 100);
    const Result<std::int64_t> first = args->integer("first", 0);
    const Result<std::int64_t> maxPixels = args->integer("max-pixels", options.maxPixels);
    const Result<std::int64_t> jobs = args->integer("jobs", 1);
    for (const Status& s :
         {seed.status(), count.status(), first.status(), maxPixels.status(), jobs.status()})
        if (!s.isOk()) return usageError(s.message());
    if (*seed < 0) return usageError("--seed must be >= 0");
    if (*count < 1 || *count > 10000000) return usageError("--count must be from 1 to 10000000");
    if (*first < 0 || *first > 100000000) return usageError("--first must be from 0 to 100000000");
    if (*jobs < 1 || *jobs > 64) return usageError("--jobs must be from 1 to 64");
    if (*maxPixels < 8 * 28 * 28)
        return usageError("--max-pixels must be at least 6272 (8 x 28 x 28)");
    options.seed = std::uint64_t(*seed);
    options.count = int(*count);
    options.firstIndex = int(*first);
    options.maxPixels = *maxPixels;
    options.osworld = args->has("osworld");
    options.messages = args->has("messages");
    if (args->has("invented-text")) options.tasks.typed = gr::TypedText::Invented;
    options.tasks.moreTemplates = args->has("more-templates");
    options.tasks.inventedLabels = args->has("invented-labels");

    std::unique_ptr<QApplication> application = makeBrowserApplication(argc, argv);
    std::atomic<bool> stop{false};
    interrupts.onInterrupt([&] { stop = true; });
    const auto started = std::chrono::steady_clock::now();
    Result<GroundingDataSummary> summary =
        *jobs > 1 && options.count > 1
            ? writeInParts(options, int(*jobs))
            : writeGroundingData(
                  options,
                  [](int done, int total, int steps) {
                      if (done % 50 == 0 || done == total)
                          std::cerr << "[" << done << '/' << total << "] " << steps << " steps\n";
                  },
                  &stop);
    interrupts.onInterrupt({});
    if (summary)
        summary->seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!summary) {
        std::cerr << "iris models data: " << summary.status().message() << '\n';
        return kExitFailed;
    }
    char rate[64];
    std::snprintf(rate, sizeof rate, "%.1f s, %.2f steps/s", summary->seconds,
                  summary->seconds > 0 ? summary->steps / summary->seconds : 0.0);
    std::cout << "wrote " << summary->tasks << " tasks, " << summary->steps << " steps to "
              << options.out.string() << " in " << rate << "\n";
    for (const auto& [kind, n] : summary->stepsPerKind)
        std::cout << "  " << kind << ": " << n << '\n';
    return kExitOk;
}

}  // namespace iris::app
