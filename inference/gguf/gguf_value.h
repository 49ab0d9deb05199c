#pragma once
// GGUF metadata values: the 13 value types of the format, with arrays (also arrays of arrays)
// stored as typed vectors, so the tokenizer's 151k strings are one std::vector<std::string>.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace iris::inference {

// The type ids GGUF stores (gguf.h's gguf_type).
enum class GgufType : std::uint32_t {
    Uint8 = 0,
    Int8 = 1,
    Uint16 = 2,
    Int16 = 3,
    Uint32 = 4,
    Int32 = 5,
    Float32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    Uint64 = 10,
    Int64 = 11,
    Float64 = 12,
};
inline constexpr std::uint32_t kGgufTypeCount = 13;

std::string_view ggufTypeName(GgufType type);  // "uint32", "string", "array", ...

// An array's elements. The alternative index of `elements` is the GgufType of the elements
// (std::vector<char> stands for bool, which std::vector<bool> could not hand out by reference).
struct GgufArray {
    using Elements =
        std::variant<std::vector<std::uint8_t>, std::vector<std::int8_t>,
                     std::vector<std::uint16_t>, std::vector<std::int16_t>,
                     std::vector<std::uint32_t>, std::vector<std::int32_t>, std::vector<float>,
                     std::vector<char>, std::vector<std::string>, std::vector<GgufArray>,
                     std::vector<std::uint64_t>, std::vector<std::int64_t>, std::vector<double>>;
    Elements elements;

    GgufType elementType() const { return GgufType(elements.index()); }
    std::size_t size() const;
    bool operator==(const GgufArray&) const = default;
};

// One metadata value. The alternative index is its GgufType.
using GgufValue = std::variant<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t,
                               std::uint32_t, std::int32_t, float, bool, std::string, GgufArray,
                               std::uint64_t, std::int64_t, double>;

inline GgufType ggufTypeOf(const GgufValue& value) {
    return GgufType(value.index());
}

// The value as a signed 64-bit integer when it is any integer type and fits; else nullopt.
std::optional<std::int64_t> ggufInteger(const GgufValue& value);

// Short human-readable rendering: numbers, quoted strings, arrays summarised past `maxElements`.
std::string ggufToString(const GgufValue& value, std::size_t maxElements = 8);

}  // namespace iris::inference
