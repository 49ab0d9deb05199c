#pragma once
// What the agent subcommands (run, demo, replay, sessions, export, render) share: the options
// that choose a model and a session database, the Qt application the browser needs, and where
// Iris's bundled data lives.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "agent/clients/model_client.h"
#include "app/cli/arguments.h"
#include "base/status.h"

class QApplication;

namespace iris::app {

// --model, --mmproj, --endpoint, --model-name, --api-key-env, --threads, --ctx-size, --db.
std::vector<OptionSpec> modelAndDatabaseOptions();

// The client the options ask for: the local engine (--model), an OpenAI-compatible server
// (--endpoint), or none (nullptr) when neither is given.
Result<std::unique_ptr<agent::ModelClient>> makeModelClient(const Arguments& args);

// --db, or defaultSessionDatabasePath().
std::filesystem::path sessionDatabasePath(const Arguments& args);

// $XDG_DATA_HOME/iris/sessions.db (~/.local/share/iris/sessions.db); the GUI's default too.
std::filesystem::path defaultSessionDatabasePath();

// Iris's bundled data (demo project, target mockup, recorded demonstration): $IRIS_DATA_DIR, the
// installed share/iris next to the executable, or the source tree's resources/.
std::filesystem::path dataDirectory();

// A QApplication for the browser environment: prepares Chromium for deterministic rendering,
// picks the offscreen platform when there is no display, and disables Chromium's sandbox when
// running as root (it refuses to start otherwise). Call once, before any Qt object exists.
std::unique_ptr<QApplication> makeBrowserApplication(int& argc, char** argv);

}  // namespace iris::app
