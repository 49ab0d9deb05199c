#include "base/temporary_folder.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

#include <stdlib.h>  // mkdtemp (POSIX)

namespace iris {

Result<std::filesystem::path> makeTemporaryFolder(std::string_view prefix) {
    std::error_code error;
    const std::filesystem::path base = std::filesystem::temp_directory_path(error);
    if (error) {
        const char* tmpdir = std::getenv("TMPDIR");
        return Status::ioError("no temporary directory" +
                               (tmpdir ? " (TMPDIR=" + std::string(tmpdir) + ")" : std::string()) +
                               ": " + error.message());
    }
    std::string pattern = (base / (std::string(prefix) + "-XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) {
        return Status::ioError("cannot create a folder in " + base.string() + ": " +
                               std::strerror(errno));
    }
    // Canonical, so that paths compared or shown later do not depend on a symlinked /tmp.
    std::filesystem::path canonical = std::filesystem::canonical(pattern, error);
    return error ? std::filesystem::path(pattern) : canonical;
}

Result<TemporaryFolder> TemporaryFolder::create(std::string_view prefix) {
    Result<std::filesystem::path> path = makeTemporaryFolder(prefix);
    if (!path) return path.status();
    return TemporaryFolder(std::move(*path));
}

TemporaryFolder::TemporaryFolder(TemporaryFolder&& other) noexcept
    : m_path(std::exchange(other.m_path, {})) {}

TemporaryFolder& TemporaryFolder::operator=(TemporaryFolder&& other) noexcept {
    if (this != &other) {
        remove();
        m_path = std::exchange(other.m_path, {});
    }
    return *this;
}

TemporaryFolder::~TemporaryFolder() {
    remove();
}

std::filesystem::path TemporaryFolder::release() {
    return std::exchange(m_path, {});
}

void TemporaryFolder::remove() {
    if (m_path.empty()) return;
    std::error_code ignored;  // best effort: a destructor cannot report, and /tmp is cleaned anyway
    std::filesystem::remove_all(m_path, ignored);
    m_path.clear();
}

}  // namespace iris
