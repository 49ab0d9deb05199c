#pragma once
// A whole file mapped read-only into memory. Model weights are used straight from the mapping:
// nothing is copied, and the OS pages them in on first use and shares them between processes.

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "base/status.h"

namespace iris::inference {

class MappedFile {
public:
    // Maps `path`. Errors (IoError) name the path and the system's reason.
    static Result<std::shared_ptr<const MappedFile>> open(const std::filesystem::path& path);

    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    std::span<const std::byte> bytes() const { return {m_data, m_size}; }
    const std::string& path() const { return m_path; }

private:
    MappedFile(std::string path, const std::byte* data, std::size_t size)
        : m_path(std::move(path)), m_data(data), m_size(size) {}

    std::string m_path;
    const std::byte* m_data = nullptr;
    std::size_t m_size = 0;
};

}  // namespace iris::inference
