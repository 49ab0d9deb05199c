#include "app/cli/command_line.h"

#include <array>
#include <iostream>
#include <sstream>
#include <vector>

#include "app/cli/agent_commands.h"
#include "app/cli/engine_commands.h"
#include "app/cli/eval/eval_command.h"
#include "app/cli/inspect_command.h"
#include "app/cli/models_commands.h"
#include "app/version.h"

namespace iris::app {
namespace {

int runVersion(int /*argc*/, char** /*argv*/) {
    std::cout << versionText();
    return 0;
}

constexpr std::array kSubcommands = {
    Subcommand{"gui", "open the Iris window (the default when no subcommand is given)", nullptr},
    Subcommand{
        "demo",
        "a bundled web project's visual-feedback loop (no model needed); --live: the bundled model",
        runDemo},
    Subcommand{"run", "let a model carry out a task in a browser page or on the desktop", runRun},
    Subcommand{"sessions", "list the recorded agent sessions", runSessions},
    Subcommand{"replay", "re-run a recorded session and compare, or fork it from a step",
               runReplay},
    Subcommand{"eval", "OSWorld-style evaluation: validate, run and report task suites", runEval},
    Subcommand{"export", "write a recorded session in OSWorld's result layout", runExport},
    Subcommand{"render", "a deterministic screenshot of a web page", runRender},
    Subcommand{"generate", "continue a prompt with a GGUF model (streams the text)", runGenerate},
    Subcommand{"serve", "an OpenAI-compatible HTTP server over a GGUF model", runServe},
    Subcommand{"models", "find, download, verify and check computer-use models", runModels},
    Subcommand{"tokenize", "print the token ids of a text under a model's tokenizer", runTokenize},
    Subcommand{"bench", "measure prefill and decode speed against this machine's memory bandwidth",
               runBench},
    Subcommand{"kv", "show (du) or trim (gc) the KV blocks saved on disk (--kv-disk-gb)", runKv},
    Subcommand{"inspect", "print the metadata and tensor table of a GGUF model file", runInspect},
    Subcommand{"version", "print version, build and hardware information (same as --version)",
               runVersion},
};

bool isVersionFlag(std::string_view arg) {
    return arg == "-V" || arg == "--version";
}

}  // namespace

std::span<const Subcommand> subcommands() {
    return kSubcommands;
}

bool isHelpArgument(std::string_view arg) {
    return arg == "-h" || arg == "--help" || arg == "help";
}

std::string subcommandLines(std::span<const Subcommand> commands, std::size_t width) {
    std::string lines;
    for (const Subcommand& command : commands) {
        lines += "  " + std::string(command.name);
        lines += std::string(width > command.name.size() ? width - command.name.size() : 1, ' ');
        lines += std::string(command.summary) + '\n';
    }
    return lines;
}

std::optional<int> runNamedSubcommand(std::span<const Subcommand> commands, int argc, char** argv,
                                      SubcommandEntry fallback) {
    if (argc < 2) return std::nullopt;
    for (const Subcommand& command : commands) {
        if (command.name != argv[1]) continue;
        // Drop the subcommand's name, keep argv[0].
        std::vector<char*> rest{argv[0]};
        rest.insert(rest.end(), argv + 2, argv + argc);
        rest.push_back(nullptr);
        return (command.run ? command.run : fallback)(argc - 1, rest.data());
    }
    return std::nullopt;
}

std::string helpText() {
    std::ostringstream text;
    text << "Usage: iris [SUBCOMMAND] [OPTIONS]\n\n"
            "Iris is a desktop computer-use agent with its own multimodal inference engine.\n\n"
            "Subcommands:\n"
         << subcommandLines(kSubcommands, 12)
         << "\nOptions:\n"
            "  -h, --help     show this help\n"
            "  -V, --version  same as the version subcommand\n\n"
            "Environment:\n"
            "  IRIS_CPU_ISA   cap the CPU kernels at scalar, avx2 or avx512\n"
            "  IRIS_API_KEY   the key sent to --endpoint servers (never recorded or logged)\n"
            "  IRIS_DATA_DIR  where the bundled demo lives (default: found next to iris)\n";
    return text.str();
}

int runCommandLine(int argc, char** argv, std::ostream& out, std::ostream& err,
                   SubcommandEntry gui) {
    auto entry = [gui](const Subcommand& command) { return command.run ? command.run : gui; };
    if (argc < 2) return entry(kSubcommands.front())(argc, argv);
    const std::string_view first = argv[1];
    if (isHelpArgument(first)) {
        out << helpText();
        return 0;
    }
    if (isVersionFlag(first)) {
        out << versionText();
        return 0;
    }
    if (std::optional<int> status = runNamedSubcommand(kSubcommands, argc, argv, gui))
        return *status;
    err << "iris: unknown subcommand '" << first << "'\n"
        << "Run 'iris --help' for the list of subcommands.\n";
    return 2;
}

}  // namespace iris::app
