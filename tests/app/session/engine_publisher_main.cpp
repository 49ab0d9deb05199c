// A second Iris process for the engine-sharing tests (engine_sharing_test.cpp): loads a model
// through the registry with sharing on, as `iris run` does, so that it publishes the engine;
// prints "published" once it has, and exits cleanly (removing its entry) when its standard
// input closes.
//   iris_engine_publisher DIRECTORY MODEL MMPROJ|- CONTEXT PARALLEL
#include <cstdlib>
#include <iostream>
#include <string>

#include "app/session/engine_sharing.h"
#include "app/session/model_choice.h"

int main(int argc, char** argv) {
    using namespace iris::app;
    if (argc != 6) {
        std::cerr << "usage: iris_engine_publisher DIRECTORY MODEL MMPROJ|- CONTEXT PARALLEL\n";
        return 2;
    }
    configureEngineSharing({"run", argv[1]});
    ModelChoice choice;
    choice.backend = ModelChoice::Backend::LocalEngine;
    choice.modelPath = argv[2];
    if (std::string(argv[3]) != "-") choice.mmprojPath = argv[3];
    choice.contextSize = std::atoll(argv[4]);
    choice.parallel = std::atoi(argv[5]);
    choice.threads = 1;
    auto scheduler = sharedScheduler(choice);
    if (!scheduler) {
        std::cerr << scheduler.status().message() << '\n';
        return 1;
    }
    std::cout << "published" << std::endl;
    for (std::string line; std::getline(std::cin, line);) {
    }
    return 0;
}
