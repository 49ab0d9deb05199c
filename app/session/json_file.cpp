#include "app/session/json_file.h"

#include <fcntl.h>
#include <unistd.h>

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

Status writeJsonFileAtomically(const std::filesystem::path& path, const nlohmann::json& value,
                               bool ownerOnly) {
    const std::filesystem::path temporary = path.string() + ".tmp";
    if (ownerOnly) {
        // Created 0600 before a byte is written, so the secret is never readable by others.
        std::error_code ignored;
        std::filesystem::remove(temporary, ignored);  // a crashed writer's leftover
        const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) return Status::ioError(temporary.string() + ": cannot create");
        ::close(fd);
    }
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        if (!out) return Status::ioError(temporary.string() + ": cannot write");
        out << value.dump(2) << '\n';
        if (!out.flush()) return Status::ioError(temporary.string() + ": write failed");
    }
    std::error_code error;
    std::filesystem::rename(temporary, path, error);
    if (error) return Status::ioError(path.string() + ": " + error.message());
    return Status::ok();
}

}  // namespace iris::app
