// iris eval validate DIR
// iris eval run TASKS (--model F.gguf [--mmproj F] | --endpoint URL... | --endpoints-file F |
//                      --demonstrations) [options]
// iris eval report DIR
// iris eval merge OUT DIR...
// iris eval compare A B
#include "app/cli/eval/eval_command.h"

#include <iostream>

#include <QApplication>

#include "agent/actions/action_format.h"
#include "app/cli/agent_setup.h"
#include "app/cli/arguments.h"
#include "app/cli/eval/eval_compare.h"
#include "app/cli/eval/eval_report.h"
#include "app/cli/eval/eval_runner.h"
#include "app/cli/eval/shard_merge.h"
#include "app/cli/eval/shards.h"
#include "app/cli/interrupt_watcher.h"
#include "app/session/browser_application.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;

constexpr int kUsage = 2;

constexpr OptionSpec kEnvOption = {
    "env", "", true,
    "where desktop tasks run: desktop:private (a private Xvfb, the default) or "
    "desktop:private-wayland (a private headless sway)"};

// --env: true for the private Wayland desktop; an error message for anything else.
Result<bool> waylandDesktopFrom(const Arguments& args) {
    const std::optional<std::string> env = args.value("env");
    if (!env || *env == "desktop:private") return false;
    if (*env == "desktop:private-wayland") return true;
    return Status::invalidArgument(
        "--env: expected desktop:private or desktop:private-wayland (where desktop tasks run; "
        "browser tasks always get a browser page), got '" +
        *env + "'");
}

std::vector<OptionSpec> runOptions() {
    std::vector<OptionSpec> options = {
        {"out", "o", true, "results folder (default ./eval-results); the same folder resumes"},
        {"demonstrations", "", false,
         "replay each task's iris.demonstration instead of asking a model"},
        {"idle", "", false, "diagnostic: an agent that never acts (every task must score 0)"},
        {"parallel", "j", true,
         "tasks at once (default 1); a local --model is loaded once and serves them together"},
        {"max-steps", "", true, "model calls per task (default: the task's, else 15)"},
        {"history", "", true,
         "screenshots kept in the prompt (default: the catalogue model's, else 3)"},
        {"sleep-after-action", "", true, "seconds to wait after each step's actions (default 0)"},
        {"task-timeout", "", true, "stop a task's agent after this many seconds (default: none)"},
        {"repeat", "", true,
         "run every task R times, each afresh (1-100, default 1): success-rate CI, pass@k"},
        {"loop-limit", "", true,
         "stop and flag a task whose agent repeats one action on an unchanged screen this many "
         "times in a row (default 5; 0: never)"},
        {"action-format", "", true,
         "pyautogui, computer_13, uitars or tools, for tasks that do not say (default pyautogui)"},
        {"allow-commands", "", false,
         "run launch/execute steps and command getters (private desktop tasks only)"},
        {"allow-network", "", false, "allow http(s) downloads in task set-up"},
        kEnvOption,
        {"shard", "", true,
         "K/N: run only shard K of N (balanced by estimated cost; merge with `iris eval merge`), "
         "or auto: K from JOB_COMPLETION_INDEX+1, N from IRIS_SHARD_COUNT"},
        {"endpoints-file", "", true,
         "the OpenAI-compatible servers to balance over, one base URL per line (# comments)"},
        {"help", "h", false, "show this help"},
    };
    for (const OptionSpec& spec : modelAndDatabaseOptions()) {
        if (spec.name != "db") options.push_back(spec);
    }
    return options;
}

std::string modelFolderName(const Arguments& args) {
    if (args.has("demonstrations")) return "demonstration";
    if (args.has("idle")) return "idle";
    if (std::optional<std::string> model = args.value("model")) {
        if (model->ends_with(".gguf")) return fs::path(*model).stem();
        // A pulled model's name (user/repo:QUANT): one folder name.
        std::string name = *model;
        for (char& c : name)
            if (c == '/' || c == ':') c = '_';
        return name;
    }
    return args.value("model-name").value_or("iris");
}

int usage(const std::string& message) {
    std::cerr << "iris eval: " << message << "\nRun 'iris eval --help' for usage.\n";
    return kUsage;
}

void printHelp() {
    std::cout
        << "Usage: iris eval validate TASKS [--allow-commands] [--allow-network]\n"
           "       iris eval run TASKS (--model F.gguf [--mmproj F] | --endpoint URL... | "
           "--endpoints-file F | --demonstrations) [options]\n"
           "       iris eval report DIR [--output FILE.html]\n"
           "       iris eval merge OUT DIR...   (the folders of run --shard K/N, into OUT)\n"
           "       iris eval compare A B [--output FILE.html]\n\n"
           "OSWorld-style evaluation. TASKS is a task file or a folder of them (OSWorld's\n"
           "examples/<domain>/<id>.json, or a flat folder). Each task runs in a fresh browser\n"
           "page or private desktop with its web project copied to a fresh folder, then OSWorld's\n"
           "evaluator scores it. Results go to DIR/results.json, DIR/sessions.db and OSWorld's\n"
           "layout DIR/<action_format>/<model>/<domain>/<id>/; running the same command again\n"
           "resumes (tasks with a result.txt are skipped). compare pairs two results folders\n"
           "over the same tasks: flipped tasks, B - A with a paired 95% CI, distributions.\n\n"
           "run options:\n"
        << Arguments::usage(runOptions());
}

int runValidate(int argc, char** argv) {
    const std::vector<OptionSpec> specs = {
        {"allow-commands", "", false, "count launch/execute steps as runnable"},
        {"allow-network", "", false, "count http(s) downloads as runnable"},
        kEnvOption,
        {"help", "h", false, "show this help"},
    };
    Result<Arguments> args = Arguments::parse(argc, argv, specs);
    if (!args) return usage(args.status().message());
    if (args->has("help") || args->positional().size() != 1) {
        if (!args->has("help")) return usage("validate takes one task file or folder");
        printHelp();
        return 0;
    }
    const Result<bool> wayland = waylandDesktopFrom(*args);
    if (!wayland) return usage(wayland.status().message());
    return eval::validateTasks(args->positional()[0], args->has("allow-commands"),
                               args->has("allow-network"), *wayland, std::cout);
}

int runRunCommand(int argc, char** argv) {
    InterruptWatcher interrupts;  // before any thread exists
    const std::vector<OptionSpec> specs = runOptions();
    Result<Arguments> args = Arguments::parse(argc, argv, specs);
    if (!args) return usage(args.status().message());
    if (args->has("help")) {
        printHelp();
        return 0;
    }
    if (args->positional().size() != 1) return usage("run takes one task file or folder");

    eval::EvalRunOptions options;
    options.tasks = args->positional()[0];
    options.out = args->value("out").value_or("eval-results");
    const int sources =
        int(args->has("demonstrations")) + int(args->has("idle")) +
        int(args->has("model") || args->has("endpoint") || args->has("endpoints-file"));
    if (sources != 1)
        return usage("give exactly one of --model, --endpoint, --demonstrations (or --idle)");
    options.answers = args->has("demonstrations") ? eval::AnswerSource::Demonstrations
                      : args->has("idle")         ? eval::AnswerSource::Idle
                                                  : eval::AnswerSource::Model;
    options.modelName = modelFolderName(*args);
    const std::optional<models::CatalogueEntry> entry = catalogueEntryFromArguments(*args);
    options.actionFormat =
        args->value("action-format").value_or(entry ? entry->actionFormat : "pyautogui");
    if (Result<agent::ActionFormat> format = agent::actionFormatFromName(options.actionFormat);
        !format)
        return usage("--action-format: " + format.status().message());

    const Result<std::int64_t> parallel = args->integer("parallel", 1);
    const Result<std::int64_t> maxSteps = args->integer("max-steps", 0);
    const Result<std::int64_t> history =
        args->integer("history", entry && entry->history > 0 ? entry->history : 0);
    const Result<double> sleep = args->number("sleep-after-action", 0);
    const Result<double> timeout = args->number("task-timeout", 0);
    const Result<std::int64_t> repeat = args->integer("repeat", 1);
    for (const Status& s : {parallel.status(), maxSteps.status(), history.status(), sleep.status(),
                            timeout.status(), repeat.status()}) {
        if (!s.isOk()) return usage(s.message());
    }
    if (*history < 0 || (args->has("history") && *history < 1))
        return usage("--history must be >= 1");
    options.screenshotsInHistory = int(*history);
    if (*parallel < 1 || *parallel > 64) return usage("--parallel must be between 1 and 64");
    if (*repeat < 1 || *repeat > 100) return usage("--repeat must be between 1 and 100");
    options.repeat = int(*repeat);
    if (*maxSteps < 0 || (args->has("max-steps") && *maxSteps < 1))
        return usage("--max-steps must be >= 1");
    if (*sleep < 0 || *timeout < 0)
        return usage("--sleep-after-action and --task-timeout must be >= 0");
    options.parallel = int(*parallel);
    options.maxSteps = int(*maxSteps);
    options.sleepAfterActionS = *sleep;
    options.taskTimeoutS = *timeout;
    const Result<std::int64_t> loopLimit = args->integer("loop-limit", 5);
    if (!loopLimit.status().isOk()) return usage(loopLimit.status().message());
    if (*loopLimit < 0) return usage("--loop-limit must be >= 0");
    options.loopLimit = int(*loopLimit);
    options.allowCommands = args->has("allow-commands");
    options.allowNetwork = args->has("allow-network");
    const Result<bool> wayland = waylandDesktopFrom(*args);
    if (!wayland) return usage(wayland.status().message());
    options.waylandDesktop = *wayland;
    if (std::optional<std::string> shard = args->value("shard")) {
        Result<eval::ShardSpec> spec = eval::resolveShard(*shard);
        if (!spec) return usage(spec.status().message());
        options.shard = spec->text();
    }

    Result<ModelChoice> model = modelChoiceFromArguments(*args);
    if (!model) return usage(model.status().message());
    options.model = *model;
    shareLocalEngines("eval");

    std::unique_ptr<QApplication> application = makeBrowserApplication(argc, argv);
    return eval::runEvaluation(options, std::cout, std::cerr, &interrupts);
}

int runReport(int argc, char** argv) {
    const std::vector<OptionSpec> specs = {
        {"output", "o", true, "the HTML file (default DIR/report.html)"},
        {"help", "h", false, "show this help"},
    };
    Result<Arguments> args = Arguments::parse(argc, argv, specs);
    if (!args) return usage(args.status().message());
    if (args->has("help")) {
        printHelp();
        return 0;
    }
    if (args->positional().size() != 1) return usage("report takes one results folder");
    const fs::path dir = args->positional()[0];
    const fs::path output = args->value("output").value_or((dir / "report.html").string());
    Result<std::string> summary = eval::writeReport(dir, output);
    if (!summary) {
        std::cerr << "iris eval report: " << summary.status().message() << '\n';
        return 3;
    }
    std::cout << *summary << "report: " << output.string() << '\n';
    return 0;
}

int runMerge(int argc, char** argv) {
    const std::vector<OptionSpec> specs = {{"help", "h", false, "show this help"}};
    Result<Arguments> args = Arguments::parse(argc, argv, specs);
    if (!args) return usage(args.status().message());
    if (args->has("help")) {
        printHelp();
        return 0;
    }
    if (args->positional().size() < 2)
        return usage("merge takes the merged results folder and the shard folders");
    const fs::path out = args->positional()[0];
    const std::vector<fs::path> dirs(args->positional().begin() + 1, args->positional().end());
    Result<std::string> summary = eval::mergeShards(out, dirs);
    if (!summary) {
        std::cerr << "iris eval merge: " << summary.status().message() << '\n';
        return 3;
    }
    std::cout << *summary << "merged " << dirs.size()
              << " shard folders: " << (out / "results.json").string()
              << ", report: " << (out / "report.html").string() << '\n';
    return 0;
}

int runCompare(int argc, char** argv) {
    const std::vector<OptionSpec> specs = {
        {"output", "o", true, "the HTML file (default B/compare.html)"},
        {"help", "h", false, "show this help"},
    };
    Result<Arguments> args = Arguments::parse(argc, argv, specs);
    if (!args) return usage(args.status().message());
    if (args->has("help")) {
        printHelp();
        return 0;
    }
    if (args->positional().size() != 2) return usage("compare takes two results folders");
    const fs::path a = args->positional()[0], b = args->positional()[1];
    const fs::path output = args->value("output").value_or((b / "compare.html").string());
    Result<std::string> summary = eval::writeComparison(a, b, output);
    if (!summary) {
        std::cerr << "iris eval compare: " << summary.status().message() << '\n';
        return 3;
    }
    std::cout << *summary << "comparison: " << output.string() << '\n';
    return 0;
}

}  // namespace

int runEval(int argc, char** argv) {
    if (argc < 2) return usage("give validate, run, report, merge or compare");
    const std::string_view verb = argv[1];
    if (verb == "-h" || verb == "--help" || verb == "help") {
        printHelp();
        return 0;
    }
    // argv[1] (the verb) takes argv[0]'s place for the option parser.
    if (verb == "validate") return runValidate(argc - 1, argv + 1);
    if (verb == "run") return runRunCommand(argc - 1, argv + 1);
    if (verb == "report") return runReport(argc - 1, argv + 1);
    if (verb == "merge") return runMerge(argc - 1, argv + 1);
    if (verb == "compare") return runCompare(argc - 1, argv + 1);
    return usage("unknown eval command '" + std::string(verb) +
                 "' (validate, run, report, merge, compare)");
}

}  // namespace iris::app
