#pragma once
// GPT-2's byte-level alphabet: every byte value has a printable stand-in code point, so that a
// vocabulary of Unicode strings covers arbitrary bytes. Bytes that are printable Latin-1 ('!'..'~',
// U+00A1..U+00AC, U+00AE..U+00FF) stand for themselves; the other 68 (controls, space, DEL, NBSP,
// soft hyphen) map in byte order to U+0100..U+0143, so ' ' is 'Ġ' (U+0120) and '\n' is 'Ċ'.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace iris::inference::byte_level {

char32_t codePointOf(std::uint8_t byte);

// The byte `codePoint` stands for, or nullopt when it is not part of the alphabet.
std::optional<std::uint8_t> byteOf(char32_t codePoint);

// `raw` in the alphabet: each byte replaced by the UTF-8 of its stand-in.
std::string encode(std::string_view raw);

// The bytes a byte-level string stands for; nullopt when it holds a code point outside the
// alphabet (or is not valid UTF-8).
std::optional<std::string> decode(std::string_view encoded);

}  // namespace iris::inference::byte_level
