#pragma once
// UTF-8 helpers for every layer (tokenizer, action parsers, workspace, recordings). Validation is
// strict (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). Text that breaks it
// is repaired the way llama.cpp's tokenizer repairs it: every byte that does not begin a
// well-formed sequence becomes one U+FFFD.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace iris::utf8 {

inline constexpr char32_t kReplacementCharacter = 0xFFFD;

struct Decoded {
    char32_t codePoint = kReplacementCharacter;
    std::uint32_t length = 1;  // bytes consumed: 1 for an invalid byte
    bool valid = false;
};

// The code point whose encoding starts at text[pos] (pos < text.size()); an invalid or truncated
// sequence gives {U+FFFD, 1, false} so that decoding resumes at the next byte.
Decoded decodeAt(std::string_view text, std::size_t pos);

// Appends the UTF-8 encoding of `codePoint`; a surrogate or a value above U+10FFFF (not a Unicode
// scalar value, e.g. from a \ud800 escape in model output) is written as U+FFFD.
void append(std::string& out, char32_t codePoint);

bool isValid(std::string_view text);

// The byte offset where the first ill-formed or truncated sequence starts, or nullopt when `text`
// is valid.
std::optional<std::size_t> firstInvalid(std::string_view text);

// The code points of `text`, or InvalidArgument "text is not valid UTF-8 at byte N" naming the
// first byte that breaks it (the lead byte, the first bad continuation byte, or the start of a
// sequence cut off by the end of the text).
Result<std::u32string> decode(std::string_view text);

// The code points of `text`, each byte that does not begin a well-formed sequence decoded as one
// U+FFFD (the same rule as repair()).
std::u32string decodeLossy(std::string_view text);

// `text` with each byte that does not start or continue a well-formed sequence replaced by U+FFFD.
std::string repair(std::string_view text);

// The length of the longest prefix of `bytes` that does not end inside a sequence that later bytes
// could still complete: what a streaming decoder may hand out now. Bytes that can never become
// valid UTF-8 are not held back.
std::size_t completePrefixLength(std::string_view bytes);

}  // namespace iris::utf8
