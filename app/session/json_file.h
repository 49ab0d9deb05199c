#pragma once
// Reading the JSON files Iris's commands take (task files, demonstrations, results.json), with
// the errors every one of them gives: NotFound "<path>: <missing>" when the file cannot be opened,
// Corrupt "<path>: byte N: not JSON" when it does not parse.
#include <filesystem>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace iris::app {

Result<nlohmann::json> readJsonFile(const std::filesystem::path& path, std::string_view missing);

}  // namespace iris::app
