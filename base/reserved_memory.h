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
    // `bytes` of zeros. OutOfRange naming the size (and the reason) when the address space is
    // refused.
    static Result<ReservedMemory> reserve(std::int64_t bytes);

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

}  // namespace iris
