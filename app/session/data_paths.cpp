#include "app/session/data_paths.h"

#include <cstdlib>
#include <system_error>

#include "app/build_info.h"

namespace iris::app {
namespace fs = std::filesystem;

fs::path defaultSessionDatabasePath() {
    if (const char* data = std::getenv("XDG_DATA_HOME"); data && *data)
        return fs::path(data) / "iris" / "sessions.db";
    if (const char* home = std::getenv("HOME"); home && *home)
        return fs::path(home) / ".local" / "share" / "iris" / "sessions.db";
    return fs::path("iris-sessions.db");
}

fs::path defaultKvDirectory() {
    if (const char* dir = std::getenv("IRIS_KV_DIR"); dir && *dir) return dir;
    if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache)
        return fs::path(cache) / "iris" / "kv";
    if (const char* home = std::getenv("HOME"); home && *home)
        return fs::path(home) / ".cache" / "iris" / "kv";
    return fs::path("iris-kv");
}

fs::path dataDirectory() {
    if (const char* dir = std::getenv("IRIS_DATA_DIR"); dir && *dir) return dir;
    std::error_code error;
    const fs::path executable = fs::read_symlink("/proc/self/exe", error);
    if (!error) {
        const fs::path installed = executable.parent_path().parent_path() / "share" / "iris";
        if (fs::exists(installed / "demo", error)) return installed;
    }
    return kSourceResources;
}

fs::path portalRestoreTokenPath() {
    if (const char* config = std::getenv("XDG_CONFIG_HOME"); config && *config)
        return fs::path(config) / "iris" / "portal-restore-token";
    if (const char* home = std::getenv("HOME"); home && *home)
        return fs::path(home) / ".config" / "iris" / "portal-restore-token";
    return fs::path("iris-portal-restore-token");
}

}  // namespace iris::app
