#pragma once
// A large zero-filled buffer whose pages the OS provides on first touch: an anonymous private
// mapping without swap reservation. Reserving the KV cache of a long context this way costs
// address space, not memory; the memory in use grows with the blocks actually written. (A
// std::vector of the same size writes every byte at construction, so a 1M-token context would
// need its whole KV pool in RAM before the first token.)

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace iris {

class ReservedMemory {
public:
    // Huge: aligned to 2 MiB and marked for transparent huge pages (MADV_HUGEPAGE), for large
    // buffers read from end to end many times (packed weights): one TLB entry covers 2 MiB
    // instead of 4 KiB. A hint; where the kernel has THP off, the pages are the normal ones.
    // Memory is then committed 2 MiB at a time, so not for sparse buffers like the KV pool.
    enum class Pages { Normal, Huge };

    // `bytes` of zeros. OutOfRange naming the size (and the reason) when the address space is
    // refused.
    static Result<ReservedMemory> reserve(std::int64_t bytes, Pages pages = Pages::Normal);

    ReservedMemory() = default;
    ReservedMemory(ReservedMemory&& other) noexcept;
    ReservedMemory& operator=(ReservedMemory&& other) noexcept;
    ReservedMemory(const ReservedMemory&) = delete;
    ReservedMemory& operator=(const ReservedMemory&) = delete;
    ~ReservedMemory();

    std::byte* data() { return m_data; }
    const std::byte* data() const { return m_data; }
    std::int64_t size() const { return m_size; }

private:
    std::byte* m_data = nullptr;
    std::int64_t m_size = 0;
};

// Bytes of this process's memory on transparent huge pages now (AnonHugePages of
// /proc/self/smaps_rollup), or -1 where the kernel does not say: tells whether a Pages::Huge
// hint was taken.
std::int64_t hugePageBytesInUse();

}  // namespace iris
