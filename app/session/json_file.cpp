#include "app/session/json_file.h"

#include <fstream>
#include <string>

namespace iris::app {

Result<nlohmann::json> readJsonFile(const std::filesystem::path& path, std::string_view missing) {
    std::ifstream file(path, std::ios::binary);
    if (!file) return Status::notFound(path.string() + ": " + std::string(missing));
    try {
        return nlohmann::json::parse(file);
    } catch (const nlohmann::json::parse_error& e) {
        return Status::corrupt(path.string() + ": byte " + std::to_string(e.byte) + ": not JSON");
    }
}

}  // namespace iris::app
