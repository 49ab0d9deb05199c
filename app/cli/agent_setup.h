#pragma once
// What the agent subcommands (run, demo, replay, sessions, export, render, eval) share on the
// command line: the options that choose a model and a session database, read into app/session's
// ModelChoice and database path.
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "agent/clients/model_client.h"
#include "app/cli/arguments.h"
#include "app/models/catalogue.h"
#include "app/session/model_choice.h"
#include "base/status.h"

namespace iris::app {

// What --model names: a GGUF file (as given), or a model pulled into the store by name
// (ui-tars-1.5-7b[:QUANT], user/repo[:QUANT]: app/models), found offline, with its projector and,
// when the catalogue (resources/models/catalogue.json) knows it, how to drive it.
struct ModelFiles {
    std::filesystem::path model;
    std::filesystem::path mmproj;  // the pulled or bundled projector; empty for a file or text
    std::string name;              // the name as given, or the file's stem
    bool pulled = false;           // found in the store by name
    std::optional<models::CatalogueEntry> entry;
};

// A value that is an existing file or ends in .gguf is a file; a bundled catalogue model's name
// means its installed files; anything else a name, looked up in the store (NotFound says how to
// pull it).
Result<ModelFiles> resolveModelOption(const std::string& value);

// --model, --mmproj, --endpoint, --model-name, --api-key-env, --threads, --ctx-size, --kv-disk-gb,
// --db.
std::vector<OptionSpec> modelAndDatabaseOptions();

// The base URLs of an --endpoints-file: one per line; blank lines and lines starting with '#'
// are skipped. Errors name the file and line (not http(s)://, two words, a repeat) or say that
// it lists none.
Result<std::vector<std::string>> readEndpointsFile(const std::filesystem::path& path);

// The model the options ask for: the local engine (--model), an OpenAI-compatible server
// (--endpoint), several (--endpoint given more than once, and/or the servers of an
// --endpoints-file where the command has that option: ModelChoice::endpoints), or
// Backend::None when none is given. Errors name the option (both given,
// --mmproj without --model, a --threads or --ctx-size out of range, an unset --api-key-env).
Result<ModelChoice> modelChoiceFromArguments(const Arguments& args);

// MiniMax-M3's KV tiers from --kv-resident-mb and --kv-host-mb (kvTierOptions in
// app/session/model_choice.h), spilling to disk under `diskBytes` (--kv-disk-gb).
Result<inference::KvTierOptions> kvTierOptionsFromArguments(const Arguments& args,
                                                            std::int64_t diskBytes);

// The catalogue's defaults for a pulled --model: the action format and coordinate frame (as
// `iris run --action-format` / `--coords` spell them) the caller uses where the options do not
// say. nullopt for a file, no --model, or a model the catalogue does not know.
std::optional<models::CatalogueEntry> catalogueEntryFromArguments(const Arguments& args);

// makeModelClient(modelChoiceFromArguments(args)): nullptr when no model is given.
Result<std::unique_ptr<agent::ModelClient>> modelClientFromArguments(const Arguments& args);

// Turns on engine sharing for this process (app/session/engine_sharing.h), whose entries call it
// `processKind` ("run", "eval", "replay"); a choice with --no-shared-engine still shares nothing.
void shareLocalEngines(const std::string& processKind);
// "engine: shared with iris gui (pid 1234)" or "engine: loaded here (...)" for a local
// engine's client; nothing for a server's.
void sayWhichEngine(const agent::ModelClient& client, std::ostream& out);

// --db, or defaultSessionDatabasePath().
std::filesystem::path sessionDatabasePath(const Arguments& args);

}  // namespace iris::app
