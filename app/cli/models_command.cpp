// `iris models`: one table of subcommands, each implemented in its own file (see
// app/cli/models_commands.h).
#include <array>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#include "app/cli/command_line.h"
#include "app/cli/models_commands.h"

namespace iris::app {
namespace {

// Every `iris models` subcommand, in the order `iris models --help` lists them.
constexpr std::array kModelsSubcommands = {
    Subcommand{"pull", "download a model and its projector into the store (resumable)",
               runModelsPull},
    Subcommand{"list", "pulled models (name, quantization, size, vision, last used)",
               runModelsList},
    Subcommand{"rm", "remove a pulled model and the files nothing else uses", runModelsRm},
    Subcommand{"verify", "re-hash pulled models' files against their SHA-256", runModelsVerify},
    Subcommand{"info", "architecture, parameters, context, tensor types, projector", runModelsInfo},
    Subcommand{"check", "how well a model clicks where it is asked to (grounding self-test)",
               runModelsCheck},
    Subcommand{"data", "synthetic training and evaluation tasks rendered in the browser",
               runModelsData},
};

std::string modelsHelpText() {
    return "Usage: iris models SUBCOMMAND [OPTIONS]\n\n"
           "Find, download, verify and check computer-use models; write synthetic data for "
           "them.\n\n"
           "Subcommands:\n" +
           subcommandLines(kModelsSubcommands, 10) +
           "\nRun 'iris models SUBCOMMAND --help' for a subcommand's options.\n";
}

}  // namespace

int runModels(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << modelsHelpText();
        return 2;
    }
    const std::string_view first = argv[1];
    if (isHelpArgument(first)) {
        std::cout << modelsHelpText();
        return 0;
    }
    if (std::optional<int> status = runNamedSubcommand(kModelsSubcommands, argc, argv))
        return *status;
    std::cerr << "iris models: unknown subcommand '" << first << "'\n"
              << "Run 'iris models --help' for the list of subcommands.\n";
    return 2;
}

}  // namespace iris::app
