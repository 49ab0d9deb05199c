#pragma once
// SHA-256 (FIPS 180-4), incremental. Used to name content (an image's pixels, so that repeated
// screenshots share their embeddings and KV prefix) — not for secrets: no constant-time claims.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace iris {

using Sha256Digest = std::array<std::uint8_t, 32>;

class Sha256 {
public:
    Sha256();
    void update(std::span<const std::uint8_t> bytes);
    void update(std::string_view text);
    // The digest of everything updated so far. The object must not be updated afterwards.
    Sha256Digest finish();

    static Sha256Digest hash(std::span<const std::uint8_t> bytes);
    static Sha256Digest hash(std::string_view text);

private:
    void block(const std::uint8_t* data);

    std::array<std::uint32_t, 8> m_state;
    std::array<std::uint8_t, 64> m_buffer{};
    std::size_t m_buffered = 0;
    std::uint64_t m_length = 0;  // bytes so far
};

// 64 lowercase hex digits.
std::string toHex(const Sha256Digest& digest);

}  // namespace iris
