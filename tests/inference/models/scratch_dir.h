#pragma once
// A folder of its own under the system temp directory for the files a test writes (GGUF models,
// images, task files), removed with its contents when the test ends.

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/temporary_folder.h"

namespace iris::inference::testing {

class ScratchDir {
public:
    // The folder is a fresh PREFIX-XXXXXX (makeTemporaryFolder), so that tests running side by
    // side never share it. When it cannot be made the test fails and path() is empty.
    explicit ScratchDir(const std::string& prefix) {
        Result<TemporaryFolder> folder = TemporaryFolder::create(prefix);
        if (folder) {
            m_folder.emplace(std::move(*folder));
        } else {
            ADD_FAILURE() << folder.status().message();
        }
    }

    const std::filesystem::path& path() const { return m_folder ? m_folder->path() : m_none; }

    // Writes `bytes` to the file `name` in the folder and returns its path.
    std::filesystem::path write(const std::string& name,
                                const std::vector<std::byte>& bytes) const {
        const std::filesystem::path file = path() / name;
        std::ofstream(file, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        return file;
    }

private:
    std::optional<TemporaryFolder> m_folder;
    std::filesystem::path m_none;
};

}  // namespace iris::inference::testing
