#include "base/sha256.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace iris {
namespace {

std::string hexOf(std::string_view text) {
    return toHex(Sha256::hash(text));
}

// FIPS 180-4 examples and the NIST long-message vector.
TEST(Sha256, MatchesTheStandardTestVectors) {
    EXPECT_EQ(hexOf(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(hexOf("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(hexOf("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(
        hexOf("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnop"
              "qklmnopqrlmnopqrsmnopqrstnopqrstu"),
        "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    EXPECT_EQ(hexOf(std::string(1'000'000, 'a')),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    // 55 and 56 bytes: the last lengths with one and two padding blocks.
    EXPECT_EQ(hexOf(std::string(55, 'a')),
              "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    EXPECT_EQ(hexOf(std::string(56, 'a')),
              "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
}

TEST(Sha256, ByteSpansHashLikeText) {
    const std::string text = "abc";
    const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(text.data()),
                                              text.size());
    EXPECT_EQ(Sha256::hash(bytes), Sha256::hash(std::string_view(text)));
}

TEST(Sha256, ThousandUpdatesOfAThousandBytesGiveTheMillionVector) {
    Sha256 million;
    const std::string chunk(1000, 'a');
    for (int i = 0; i < 1000; ++i)
        million.update(chunk);
    EXPECT_EQ(toHex(million.finish()),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecewiseUpdatesEqualOneShot) {
    std::string text;
    for (int i = 0; i < 300; ++i)
        text += char('a' + i % 26);
    const Sha256Digest whole = Sha256::hash(text);
    for (std::size_t split : {1u, 55u, 56u, 63u, 64u, 65u, 128u, 299u}) {
        Sha256 sha;
        sha.update(std::string_view(text).substr(0, split));
        sha.update(std::string_view(text).substr(split));
        EXPECT_EQ(sha.finish(), whole) << split;
    }
}

}  // namespace
}  // namespace iris
