#pragma once
// What the agent subcommands (run, demo, replay, sessions, export, render, eval) share on the
// command line: the options that choose a model and a session database, read into app/session's
// ModelChoice and database path.
#include <filesystem>
#include <memory>
#include <vector>

#include "agent/clients/model_client.h"
#include "app/cli/arguments.h"
#include "app/session/model_choice.h"
#include "base/status.h"

namespace iris::app {

// --model, --mmproj, --endpoint, --model-name, --api-key-env, --threads, --ctx-size, --db.
std::vector<OptionSpec> modelAndDatabaseOptions();

// The model the options ask for: the local engine (--model), an OpenAI-compatible server
// (--endpoint), or Backend::None when neither is given. Errors name the option (both given,
// --mmproj without --model, a --threads or --ctx-size out of range, an unset --api-key-env).
Result<ModelChoice> modelChoiceFromArguments(const Arguments& args);

// makeModelClient(modelChoiceFromArguments(args)): nullptr when no model is given.
Result<std::unique_ptr<agent::ModelClient>> modelClientFromArguments(const Arguments& args);

// --db, or defaultSessionDatabasePath().
std::filesystem::path sessionDatabasePath(const Arguments& args);

}  // namespace iris::app
