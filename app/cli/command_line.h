#pragma once
// The `iris` command line: a table of subcommands, --help and --version.

#include <cstddef>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

namespace iris::app {

// A subcommand's entry point gets the arguments after its name; argv[0] stays the program name
// so that Qt (for `gui`) sees a normal command line. Returns the process exit code.
using SubcommandEntry = int (*)(int argc, char** argv);

struct Subcommand {
    std::string_view name;
    std::string_view summary;
    SubcommandEntry run;  // null for `gui`: runCommandLine's `gui` runs it
};

// Every subcommand, in the order --help lists them. The first one runs when none is named.
std::span<const Subcommand> subcommands();

// For tables of subcommands (iris's own, `iris models`'): the lines of a help text that list
// them, two spaces, the name padded to `width` columns and the summary; and the entry named
// argv[1] run with the arguments after that name (argv[0] kept), nullopt when none has that name.
// An entry without a function runs `fallback`.
std::string subcommandLines(std::span<const Subcommand> commands, std::size_t width);
std::optional<int> runNamedSubcommand(std::span<const Subcommand> commands, int argc, char** argv,
                                      SubcommandEntry fallback = nullptr);
bool isHelpArgument(std::string_view arg);  // -h, --help, help

// What `iris --help` prints.
std::string helpText();

// Entry point: dispatches argv to a subcommand. Errors go to `err` with exit code 2. `gui` is the
// desktop GUI's entry point (app/gui's runGui), passed in by app/main.cpp because app/cli does not
// depend on app/gui.
int runCommandLine(int argc, char** argv, std::ostream& out, std::ostream& err,
                   SubcommandEntry gui);

}  // namespace iris::app
