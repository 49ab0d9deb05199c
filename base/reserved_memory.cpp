#include "base/reserved_memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace iris {

Result<ReservedMemory> ReservedMemory::reserve(std::int64_t bytes) {
    ReservedMemory memory;
    if (bytes <= 0) return memory;
    void* mapped = mmap(nullptr, std::size_t(bytes), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapped == MAP_FAILED) {
        return Status::outOfRange("cannot reserve " + std::to_string(bytes) +
                                  " bytes of address space: " + std::strerror(errno));
    }
    memory.m_data = static_cast<std::byte*>(mapped);
    memory.m_size = bytes;
    return memory;
}

ReservedMemory::ReservedMemory(ReservedMemory&& other) noexcept
    : m_data(std::exchange(other.m_data, nullptr)), m_size(std::exchange(other.m_size, 0)) {}

ReservedMemory& ReservedMemory::operator=(ReservedMemory&& other) noexcept {
    if (this != &other) {
        if (m_data != nullptr) munmap(m_data, std::size_t(m_size));
        m_data = std::exchange(other.m_data, nullptr);
        m_size = std::exchange(other.m_size, 0);
    }
    return *this;
}

ReservedMemory::~ReservedMemory() {
    if (m_data != nullptr) munmap(m_data, std::size_t(m_size));
}

}  // namespace iris
