#include "base/reserved_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <utility>

namespace iris {

namespace {

constexpr std::size_t kHugePage = std::size_t(2) << 20;

}  // namespace

Result<ReservedMemory> ReservedMemory::reserve(std::int64_t bytes, Pages pages) {
    ReservedMemory memory;
    if (bytes <= 0) return memory;
    const bool huge = pages == Pages::Huge;
    // A huge-page buffer is cut from a mapping one huge page longer, so that it can start on a
    // 2 MiB boundary (mmap aligns to 4 KiB only).
    const std::size_t mappedBytes = std::size_t(bytes) + (huge ? kHugePage : 0);
    void* mapped = mmap(nullptr, mappedBytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapped == MAP_FAILED) {
        return Status::outOfRange("cannot reserve " + std::to_string(bytes) +
                                  " bytes of address space: " + std::strerror(errno));
    }
    auto* start = static_cast<std::byte*>(mapped);
    if (huge) {
        // Both ends given back; munmap takes whole pages, so the kept part ends on one.
        const auto page = std::size_t(sysconf(_SC_PAGESIZE));
        const std::size_t kept = (std::size_t(bytes) + page - 1) / page * page;
        const auto address = reinterpret_cast<std::uintptr_t>(mapped);
        const std::size_t head = (kHugePage - address % kHugePage) % kHugePage;
        const std::size_t tail = mappedBytes - head - kept;
        if (head > 0) munmap(start, head);
        if (tail > 0) munmap(start + head + kept, tail);
        start += head;
        madvise(start, std::size_t(bytes), MADV_HUGEPAGE);  // a hint: its failure changes nothing
    }
    memory.m_data = start;
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

std::int64_t hugePageBytesInUse() {
    std::ifstream rollup("/proc/self/smaps_rollup");
    std::string key;
    std::int64_t kib = 0;
    while (rollup >> key) {
        if (key == "AnonHugePages:" && rollup >> kib) return kib * 1024;
        rollup.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    return -1;
}

}  // namespace iris
