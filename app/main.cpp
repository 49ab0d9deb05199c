// The `iris` executable: the command line (app/cli), which opens the desktop GUI (app/gui) for
// `iris gui` and when no subcommand is named. The only file that sees both front ends.
#include <iostream>

#include "app/cli/command_line.h"
#include "app/gui/gui_main.h"

int main(int argc, char** argv) {
    return iris::app::runCommandLine(argc, argv, std::cout, std::cerr, iris::app::runGui);
}
