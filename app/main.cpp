#include <iostream>

#include "app/cli/command_line.h"

int main(int argc, char** argv) {
    return iris::app::runCommandLine(argc, argv, std::cout, std::cerr);
}
