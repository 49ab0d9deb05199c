#pragma once
// Where Iris keeps and finds its files, for the command line and the GUI alike.
#include <filesystem>

namespace iris::app {

// $XDG_DATA_HOME/iris/sessions.db (~/.local/share/iris/sessions.db): the session database when
// none is named (iris --db, the GUI's storage setting).
std::filesystem::path defaultSessionDatabasePath();

// Where the KV disk tier keeps saved KV blocks (inference/kv_disk_store.h): $IRIS_KV_DIR, else
// $XDG_CACHE_HOME/iris/kv, else ~/.cache/iris/kv. A cache: anything in it may be deleted.
std::filesystem::path defaultKvDirectory();

// Iris's bundled data (demo project, target mockup, recorded demonstration, the model catalogue
// models/catalogue.json): $IRIS_DATA_DIR, the installed share/iris next to the executable, or the
// source tree's resources/.
std::filesystem::path dataDirectory();

// $XDG_CONFIG_HOME/iris/portal-restore-token (~/.config/iris/...): the token xdg-desktop-portal
// gave for the last desktop session, so that the next one does not ask for consent again.
std::filesystem::path portalRestoreTokenPath();

}  // namespace iris::app
