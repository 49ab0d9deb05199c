#include "inference/tokenizer/byte_level.h"

#include <array>

#include "base/utf8.h"

namespace iris::inference::byte_level {

namespace {

bool standsForItself(unsigned byte) {
    return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
}

struct Tables {
    std::array<char32_t, 256> codePoints{};
    std::array<std::int16_t, 0x144> bytes{};  // by code point; -1 outside the alphabet

    Tables() {
        bytes.fill(-1);
        char32_t next = 0x100;
        for (unsigned byte = 0; byte < 256; ++byte) {
            codePoints[byte] = standsForItself(byte) ? char32_t(byte) : next++;
            bytes[codePoints[byte]] = static_cast<std::int16_t>(byte);
        }
    }
};

const Tables& tables() {
    static const Tables instance;
    return instance;
}

}  // namespace

char32_t codePointOf(std::uint8_t byte) {
    return tables().codePoints[byte];
}

std::optional<std::uint8_t> byteOf(char32_t codePoint) {
    const Tables& t = tables();
    if (codePoint >= t.bytes.size() || t.bytes[codePoint] < 0) return std::nullopt;
    return static_cast<std::uint8_t>(t.bytes[codePoint]);
}

std::string encode(std::string_view raw) {
    std::string out;
    out.reserve(raw.size() * 2);
    for (const char c : raw)
        utf8::append(out, codePointOf(static_cast<std::uint8_t>(c)));
    return out;
}

std::optional<std::string> decode(std::string_view encoded) {
    std::string out;
    out.reserve(encoded.size());
    for (std::size_t pos = 0; pos < encoded.size();) {
        const utf8::Decoded d = utf8::decodeAt(encoded, pos);
        if (!d.valid) return std::nullopt;
        const std::optional<std::uint8_t> byte = byteOf(d.codePoint);
        if (!byte) return std::nullopt;
        out.push_back(static_cast<char>(*byte));
        pos += d.length;
    }
    return out;
}

}  // namespace iris::inference::byte_level
