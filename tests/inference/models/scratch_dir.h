#pragma once
// A folder of its own under the system temp directory for the files a test writes (the GGUF
// models and images it makes), removed with its contents when the test ends.

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace iris::inference::testing {

class ScratchDir {
public:
    // The folder is PREFIX_<pid>, so that test binaries running side by side do not share it.
    explicit ScratchDir(const std::string& prefix)
        : m_path(std::filesystem::temp_directory_path() /
                 (prefix + "_" + std::to_string(::getpid()))) {
        std::filesystem::create_directories(m_path);
    }
    ~ScratchDir() {
        std::error_code ignored;
        std::filesystem::remove_all(m_path, ignored);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    const std::filesystem::path& path() const { return m_path; }

    // Writes `bytes` to the file `name` in the folder and returns its path.
    std::filesystem::path write(const std::string& name,
                                const std::vector<std::byte>& bytes) const {
        const std::filesystem::path path = m_path / name;
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        return path;
    }

private:
    std::filesystem::path m_path;
};

}  // namespace iris::inference::testing
