#pragma once
// The `iris` command line: a table of subcommands, --help and --version.

#include <ostream>
#include <span>
#include <string>
#include <string_view>

namespace iris::app {

// A subcommand gets the arguments after its name; argv[0] stays the program name so that Qt
// (for `gui`) sees a normal command line. Returns the process exit code.
struct Subcommand {
    std::string_view name;
    std::string_view summary;
    int (*run)(int argc, char** argv);
};

// Every subcommand, in the order --help lists them. The first one runs when none is named.
std::span<const Subcommand> subcommands();

// What `iris --help` prints.
std::string helpText();

// Entry point: dispatches argv to a subcommand. Errors go to `err` with exit code 2.
int runCommandLine(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace iris::app
