#pragma once
// Element types of weight and activation tensors, numbered exactly as ggml numbers them (the
// ids GGUF files store), with the block geometry of each: a row of n elements of type t takes
// n / blockElements(t) * blockBytes(t) bytes.

#include <cstdint>
#include <optional>
#include <string_view>

namespace iris::kernels {

enum class TensorType : std::uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
};

struct TensorTypeInfo {
    TensorType type;
    std::string_view name;       // ggml's name: "f32", "q4_K", ...
    std::int64_t blockElements;  // elements per block (1 for plain types)
    std::int64_t blockBytes;     // bytes per block
    bool computable;             // Iris has dequantize and dot kernels for it
};

// The facts for ggml type id `id`, or nullopt for an id ggml does not define (or retired).
std::optional<TensorTypeInfo> tensorTypeInfo(std::uint32_t id);

// Same for a known type (never fails).
const TensorTypeInfo& tensorTypeInfo(TensorType type);

// Bytes of `elements` values of `type`; elements must be a multiple of the block size.
inline std::int64_t rowBytes(TensorType type, std::int64_t elements) {
    const TensorTypeInfo& info = tensorTypeInfo(type);
    return elements / info.blockElements * info.blockBytes;
}

}  // namespace iris::kernels
