#include "base/crc32c.h"

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace iris {
namespace {

std::vector<std::byte> bytesOf(std::string_view text) {
    std::vector<std::byte> out;
    for (char c : text)
        out.push_back(std::byte(c));
    return out;
}

std::vector<std::byte> filled(std::size_t n, int (*value)(std::size_t)) {
    std::vector<std::byte> out(n);
    for (std::size_t i = 0; i < n; ++i)
        out[i] = std::byte(value(i));
    return out;
}

// The check value of the CRC catalogue and the iSCSI examples of RFC 3720, appendix B.4.
TEST(Crc32c, MatchesTheStandardCheckValues) {
    EXPECT_EQ(crc32c(bytesOf("123456789")), 0xE3069283u);
    EXPECT_EQ(crc32c(filled(32, [](std::size_t) { return 0; })), 0x8A9136AAu);
    EXPECT_EQ(crc32c(filled(32, [](std::size_t) { return 0xff; })), 0x62A8AB43u);
    EXPECT_EQ(crc32c(filled(32, [](std::size_t i) { return int(i); })), 0x46DD794Eu);
    EXPECT_EQ(crc32c(filled(32, [](std::size_t i) { return int(31 - i); })), 0x113FDB5Cu);
    EXPECT_EQ(crc32cPortable(bytesOf("123456789")), 0xE3069283u);
    EXPECT_EQ(crc32c({}), 0u);
}

// The fast path (SSE4.2 where the CPU has it) against the table, at every length and alignment
// around its 8-byte steps, and in pieces.
TEST(Crc32c, TheFastPathEqualsTheTableAtAnyLengthAndInPieces) {
    std::mt19937 rng(5);
    std::vector<std::byte> data(1000);
    for (std::byte& b : data)
        b = std::byte(rng() & 0xff);
    for (std::size_t start = 0; start < 9; ++start) {
        for (std::size_t n = 0; n + start <= 80; ++n) {
            const std::span<const std::byte> part(data.data() + start, n);
            ASSERT_EQ(crc32c(part), crc32cPortable(part)) << start << " " << n;
        }
    }
    const std::span<const std::byte> all(data);
    EXPECT_EQ(crc32c(all.subspan(333), crc32c(all.first(333))), crc32cPortable(all));
}

}  // namespace
}  // namespace iris
