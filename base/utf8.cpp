#include "base/utf8.h"

namespace iris::utf8 {

namespace {

bool isContinuation(unsigned char byte) {
    return (byte & 0xC0) == 0x80;
}

// Sequence length announced by a lead byte, or 0 for a byte that cannot start a sequence
// (continuation bytes, C0/C1 which would be overlong, F5..FF which would exceed U+10FFFF).
std::uint32_t sequenceLength(unsigned char lead) {
    if (lead < 0x80) return 1;
    if (lead < 0xC2) return 0;
    if (lead < 0xE0) return 2;
    if (lead < 0xF0) return 3;
    if (lead < 0xF5) return 4;
    return 0;
}

// The range the second byte must fall in after `lead`; it is narrower than 80..BF where the
// general rule would allow overlong forms (E0, F0), surrogates (ED) or values past U+10FFFF (F4).
bool secondByteFits(unsigned char lead, unsigned char second) {
    switch (lead) {
        case 0xE0:
            return second >= 0xA0 && second <= 0xBF;
        case 0xED:
            return second >= 0x80 && second <= 0x9F;
        case 0xF0:
            return second >= 0x90 && second <= 0xBF;
        case 0xF4:
            return second >= 0x80 && second <= 0x8F;
        default:
            return isContinuation(second);
    }
}

}  // namespace

Decoded decodeAt(std::string_view text, std::size_t pos) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[pos + i]); };
    const unsigned char lead = byte(0);
    const std::uint32_t length = sequenceLength(lead);
    if (length == 1) return {lead, 1, true};
    if (length == 0 || text.size() - pos < length || !secondByteFits(lead, byte(1))) return {};
    for (std::uint32_t i = 2; i < length; ++i) {
        if (!isContinuation(byte(i))) return {};
    }
    char32_t codePoint = lead & (0x7Fu >> length);
    for (std::uint32_t i = 1; i < length; ++i)
        codePoint = (codePoint << 6) | (byte(i) & 0x3Fu);
    return {codePoint, length, true};
}

Result<std::u32string> decode(std::string_view text) {
    std::u32string out;
    out.reserve(text.size());
    for (std::size_t pos = 0; pos < text.size();) {
        const Decoded d = decodeAt(text, pos);
        if (!d.valid) {
            // Name the byte that breaks the sequence rather than its lead byte where they differ.
            const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
            std::size_t bad = pos;
            const std::uint32_t length = sequenceLength(byte(pos));
            for (std::uint32_t k = 1; length > 1 && k < length && pos + k < text.size(); ++k) {
                const bool fits = k == 1 ? secondByteFits(byte(pos), byte(pos + 1))
                                         : isContinuation(byte(pos + k));
                if (!fits) {
                    bad = pos + k;
                    break;
                }
            }
            return Status::invalidArgument("text is not valid UTF-8 at byte " +
                                           std::to_string(bad));
        }
        out.push_back(d.codePoint);
        pos += d.length;
    }
    return out;
}

std::u32string decodeLossy(std::string_view text) {
    std::u32string out;
    out.reserve(text.size());
    for (std::size_t pos = 0; pos < text.size();) {
        const Decoded d = decodeAt(text, pos);
        out.push_back(d.codePoint);
        pos += d.length;
    }
    return out;
}

void append(std::string& out, char32_t codePoint) {
    const auto put = [&](std::uint32_t value) { out.push_back(static_cast<char>(value)); };
    if ((codePoint >= 0xD800 && codePoint <= 0xDFFF) || codePoint > 0x10FFFF)
        codePoint = kReplacementCharacter;
    if (codePoint < 0x80) {
        put(codePoint);
    } else if (codePoint < 0x800) {
        put(0xC0 | (codePoint >> 6));
        put(0x80 | (codePoint & 0x3F));
    } else if (codePoint < 0x10000) {
        put(0xE0 | (codePoint >> 12));
        put(0x80 | ((codePoint >> 6) & 0x3F));
        put(0x80 | (codePoint & 0x3F));
    } else {
        put(0xF0 | (codePoint >> 18));
        put(0x80 | ((codePoint >> 12) & 0x3F));
        put(0x80 | ((codePoint >> 6) & 0x3F));
        put(0x80 | (codePoint & 0x3F));
    }
}

bool isValid(std::string_view text) {
    return !firstInvalid(text).has_value();
}

std::optional<std::size_t> firstInvalid(std::string_view text) {
    for (std::size_t pos = 0; pos < text.size();) {
        if (static_cast<unsigned char>(text[pos]) < 0x80) {
            ++pos;
            continue;
        }
        const Decoded decoded = decodeAt(text, pos);
        if (!decoded.valid) return pos;
        pos += decoded.length;
    }
    return std::nullopt;
}

std::string repair(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 8);
    for (std::size_t pos = 0; pos < text.size();) {
        const Decoded decoded = decodeAt(text, pos);
        if (decoded.valid) {
            out.append(text.substr(pos, decoded.length));
        } else {
            append(out, kReplacementCharacter);
        }
        pos += decoded.length;
    }
    return out;
}

std::size_t completePrefixLength(std::string_view bytes) {
    // Only the last three bytes can belong to a sequence that is still open.
    const std::size_t size = bytes.size();
    const std::size_t earliest = size >= 3 ? size - 3 : 0;
    for (std::size_t start = size; start > earliest;) {
        --start;
        const auto lead = static_cast<unsigned char>(bytes[start]);
        if (isContinuation(lead)) continue;
        const std::uint32_t length = sequenceLength(lead);
        const std::size_t have = size - start;
        if (length <= have) return size;  // complete, or a byte that can never start a sequence
        if (have >= 2 && !secondByteFits(lead, static_cast<unsigned char>(bytes[start + 1])))
            return size;
        for (std::size_t i = start + 2; i < size; ++i) {
            if (!isContinuation(static_cast<unsigned char>(bytes[i]))) return size;
        }
        return start;
    }
    return size;
}

}  // namespace iris::utf8
