#include "base/crc32c.h"

#include <array>
#include <cstring>

namespace iris {
namespace {

constexpr std::uint32_t kPolynomial = 0x82F63B78u;  // 0x1EDC6F41 bit-reversed

constexpr std::array<std::uint32_t, 256> makeTable() {
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t c = i;
        for (int bit = 0; bit < 8; ++bit)
            c = (c & 1u) ? (c >> 1) ^ kPolynomial : c >> 1;
        table[i] = c;
    }
    return table;
}

constexpr std::array<std::uint32_t, 256> kTable = makeTable();

// The register form: pre- and post-inverted by the callers.
std::uint32_t tableUpdate(std::uint32_t c, const std::byte* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        c = kTable[(c ^ std::uint32_t(p[i])) & 0xffu] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t hardwareUpdate(std::uint32_t c, const std::byte* p,
                                                               std::size_t n) {
    std::uint64_t wide = c;
    for (; n >= 8; n -= 8, p += 8) {
        std::uint64_t word;
        std::memcpy(&word, p, 8);
        wide = __builtin_ia32_crc32di(wide, word);
    }
    c = std::uint32_t(wide);
    for (; n > 0; --n, ++p)
        c = __builtin_ia32_crc32qi(c, std::uint8_t(*p));
    return c;
}

bool hasSse42() {
    static const bool has = __builtin_cpu_supports("sse4.2");
    return has;
}
#endif

}  // namespace

std::uint32_t crc32cPortable(std::span<const std::byte> bytes, std::uint32_t crc) {
    return ~tableUpdate(~crc, bytes.data(), bytes.size());
}

std::uint32_t crc32c(std::span<const std::byte> bytes, std::uint32_t crc) {
#if defined(__x86_64__)
    if (hasSse42()) return ~hardwareUpdate(~crc, bytes.data(), bytes.size());
#endif
    return crc32cPortable(bytes, crc);
}

}  // namespace iris
