#pragma once
// SHA-256 (FIPS 180-4), for naming stored images by their content: two screenshots share a row
// exactly when their bytes are equal.
#include <cstdint>
#include <span>
#include <string>

namespace iris::agent {

// The digest as 64 lower-case hex digits.
std::string sha256Hex(std::span<const std::uint8_t> bytes);

}  // namespace iris::agent
