#pragma once
// Reading (and writing) the JSON files Iris's commands take (task files, demonstrations, results.json), with
// the errors every one of them gives: NotFound "<path>: <missing>" when the file cannot be opened,
// Corrupt "<path>: byte N: not JSON" when it does not parse.
#include <filesystem>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace iris::app {

Result<nlohmann::json> readJsonFile(const std::filesystem::path& path, std::string_view missing);

// `value` indented by 2, into `path` through a temporary file beside it renamed over it, so that
// a crash never leaves half a file. IoError names the file. `ownerOnly`: the file is created with
// mode 0600 (whatever the umask), for files that hold a secret.
Status writeJsonFileAtomically(const std::filesystem::path& path, const nlohmann::json& value,
                               bool ownerOnly = false);

}  // namespace iris::app
