#include "inference/mapped_file.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace iris::inference {
namespace {

Status systemError(const std::string& path, const char* what) {
    return Status::ioError(path + ": " + what + ": " + std::strerror(errno));
}

}  // namespace

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::filesystem::path& path) {
    const std::string name = path.string();
    const int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return systemError(name, "cannot open");
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
        const Status error = systemError(name, "cannot stat");
        ::close(fd);
        return error;
    }
    if (!S_ISREG(info.st_mode)) {
        ::close(fd);
        return Status::ioError(name + ": not a regular file");
    }
    const auto size = std::size_t(info.st_size);
    void* data = nullptr;
    if (size > 0) {
        data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (data == MAP_FAILED) {
            const Status error = systemError(name, "cannot map");
            ::close(fd);
            return error;
        }
    }
    ::close(fd);  // the mapping keeps the file referenced
    return std::shared_ptr<const MappedFile>(
        new MappedFile(name, static_cast<const std::byte*>(data), size));
}

MappedFile::~MappedFile() {
    if (m_size > 0) ::munmap(const_cast<std::byte*>(m_data), m_size);
}

}  // namespace iris::inference
