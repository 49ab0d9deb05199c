#pragma once
// `iris models SUBCOMMAND ...`: find, download, verify, inspect and check computer-use models.
// runModels dispatches on the first argument through the table in models_command.cpp; each
// subcommand's entry point has its own file and returns the process exit code (0 success, 1 the
// work failed, 2 bad usage).

namespace iris::app {

int runModels(int argc, char** argv);       // models_command.cpp
int runModelsCheck(int argc, char** argv);  // models_check_command.cpp
int runModelsData(int argc, char** argv);   // models_data_command.cpp

// The model store (app/models): models_store_commands.cpp.
int runModelsPull(int argc, char** argv);
int runModelsList(int argc, char** argv);
int runModelsRm(int argc, char** argv);
int runModelsVerify(int argc, char** argv);
int runModelsInfo(int argc, char** argv);

}  // namespace iris::app
