#include "inference/gguf/gguf_value.h"

#include <array>
#include <limits>
#include <sstream>
#include <type_traits>

namespace iris::inference {
namespace {

void appendQuoted(std::ostringstream& out, std::string_view text) {
    out << '"';
    for (char c : text) {
        switch (c) {
            case '"':
                out << "\\\"";
                break;
            case '\\':
                out << "\\\\";
                break;
            case '\n':
                out << "\\n";
                break;
            case '\t':
                out << "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    out << "\\x"
                        << "0123456789abcdef"[(c >> 4) & 0xf] << "0123456789abcdef"[c & 0xf];
                } else {
                    out << c;
                }
        }
    }
    out << '"';
}

template <class V>
void appendScalar(std::ostringstream& out, const V& v) {
    if constexpr (std::is_same_v<V, std::string>) {
        appendQuoted(out, v);
    } else if constexpr (std::is_same_v<V, bool> || std::is_same_v<V, char>) {
        out << (v ? "true" : "false");
    } else if constexpr (std::is_same_v<V, std::uint8_t> || std::is_same_v<V, std::int8_t>) {
        out << int(v);
    } else {
        out << v;
    }
}

void appendArray(std::ostringstream& out, const GgufArray& array, std::size_t maxElements) {
    out << '[';
    std::visit(
        [&](const auto& elements) {
            for (std::size_t i = 0; i < elements.size() && i < maxElements; ++i) {
                if (i > 0) out << ", ";
                using E = std::decay_t<decltype(elements[i])>;
                if constexpr (std::is_same_v<E, GgufArray>) {
                    appendArray(out, elements[i], maxElements);
                } else {
                    appendScalar(out, E(elements[i]));
                }
            }
            if (elements.size() > maxElements) {
                out << ", ... (" << elements.size() << " " << ggufTypeName(array.elementType())
                    << " values)";
            }
        },
        array.elements);
    out << ']';
}

}  // namespace

std::string_view ggufTypeName(GgufType type) {
    static constexpr std::array<std::string_view, kGgufTypeCount> kNames = {
        "uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
        "bool",  "string", "array",  "uint64", "int64",  "float64"};
    const auto index = std::uint32_t(type);
    return index < kGgufTypeCount ? kNames[index] : std::string_view("unknown");
}

std::size_t GgufArray::size() const {
    return std::visit([](const auto& v) { return v.size(); }, elements);
}

std::optional<std::int64_t> ggufInteger(const GgufValue& value) {
    return std::visit(
        [](const auto& v) -> std::optional<std::int64_t> {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, bool> || !std::is_integral_v<V>) {
                return std::nullopt;
            } else if constexpr (std::is_same_v<V, std::uint64_t>) {
                if (v > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
                    return std::nullopt;
                return std::int64_t(v);
            } else {
                return std::int64_t(v);
            }
        },
        value);
}

std::string ggufToString(const GgufValue& value, std::size_t maxElements) {
    std::ostringstream out;
    std::visit(
        [&](const auto& v) {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, GgufArray>) {
                appendArray(out, v, maxElements);
            } else {
                appendScalar(out, v);
            }
        },
        value);
    return out.str();
}

}  // namespace iris::inference
