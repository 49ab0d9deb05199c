#pragma once
// Fresh private folders under the system's temporary directory ($TMPDIR, else /tmp), made with
// mkdtemp so two processes (or two parallel evaluation tasks) never share one.

#include <filesystem>
#include <string_view>

#include "base/status.h"

namespace iris {

// Creates <tmp>/<prefix>-XXXXXX (mode 0700) and returns its canonical path; the caller owns it.
// IoError naming the directory when it cannot be made (full disk, no permission).
Result<std::filesystem::path> makeTemporaryFolder(std::string_view prefix);

// A temporary folder removed with everything in it when the object is destroyed, unless
// release() was called. Move-only.
class TemporaryFolder {
public:
    static Result<TemporaryFolder> create(std::string_view prefix);

    TemporaryFolder(TemporaryFolder&& other) noexcept;
    TemporaryFolder& operator=(TemporaryFolder&& other) noexcept;
    TemporaryFolder(const TemporaryFolder&) = delete;
    TemporaryFolder& operator=(const TemporaryFolder&) = delete;
    ~TemporaryFolder();

    const std::filesystem::path& path() const { return m_path; }
    // Keeps the folder on disk and returns its path; the object no longer owns it.
    std::filesystem::path release();

private:
    explicit TemporaryFolder(std::filesystem::path path) : m_path(std::move(path)) {}
    void remove();

    std::filesystem::path m_path;
};

}  // namespace iris
