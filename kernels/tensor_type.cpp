#include "kernels/tensor_type.h"

#include <array>
#include <cassert>

namespace iris::kernels {
namespace {

using T = TensorType;

// Block sizes from ggml's block structs (ggml-common.h): e.g. q4_K = d, dmin (2 x f16),
// 12 bytes of 6-bit scales, 128 bytes of nibbles = 144 bytes per 256 values.
constexpr std::array kTypes = {
    TensorTypeInfo{T::F32, "f32", 1, 4, true},
    TensorTypeInfo{T::F16, "f16", 1, 2, true},
    TensorTypeInfo{T::Q4_0, "q4_0", 32, 18, true},
    TensorTypeInfo{T::Q4_1, "q4_1", 32, 20, true},
    TensorTypeInfo{T::Q5_0, "q5_0", 32, 22, true},
    TensorTypeInfo{T::Q5_1, "q5_1", 32, 24, true},
    TensorTypeInfo{T::Q8_0, "q8_0", 32, 34, true},
    TensorTypeInfo{T::Q8_1, "q8_1", 32, 36, false},
    TensorTypeInfo{T::Q2_K, "q2_K", 256, 84, false},
    TensorTypeInfo{T::Q3_K, "q3_K", 256, 110, false},
    TensorTypeInfo{T::Q4_K, "q4_K", 256, 144, true},
    TensorTypeInfo{T::Q5_K, "q5_K", 256, 176, true},
    TensorTypeInfo{T::Q6_K, "q6_K", 256, 210, true},
    TensorTypeInfo{T::Q8_K, "q8_K", 256, 292, false},
    TensorTypeInfo{T::IQ2_XXS, "iq2_xxs", 256, 66, false},
    TensorTypeInfo{T::IQ2_XS, "iq2_xs", 256, 74, false},
    TensorTypeInfo{T::IQ3_XXS, "iq3_xxs", 256, 98, false},
    TensorTypeInfo{T::IQ1_S, "iq1_s", 256, 50, false},
    TensorTypeInfo{T::IQ4_NL, "iq4_nl", 32, 18, false},
    TensorTypeInfo{T::IQ3_S, "iq3_s", 256, 110, false},
    TensorTypeInfo{T::IQ2_S, "iq2_s", 256, 82, false},
    TensorTypeInfo{T::IQ4_XS, "iq4_xs", 256, 136, false},
    TensorTypeInfo{T::I8, "i8", 1, 1, false},
    TensorTypeInfo{T::I16, "i16", 1, 2, false},
    TensorTypeInfo{T::I32, "i32", 1, 4, false},
    TensorTypeInfo{T::I64, "i64", 1, 8, false},
    TensorTypeInfo{T::F64, "f64", 1, 8, false},
    TensorTypeInfo{T::IQ1_M, "iq1_m", 256, 56, false},
    TensorTypeInfo{T::BF16, "bf16", 1, 2, true},
    TensorTypeInfo{T::TQ1_0, "tq1_0", 256, 54, false},
    TensorTypeInfo{T::TQ2_0, "tq2_0", 256, 66, false},
    TensorTypeInfo{T::MXFP4, "mxfp4", 32, 17, false},
};

}  // namespace

std::optional<TensorTypeInfo> tensorTypeInfo(std::uint32_t id) {
    for (const TensorTypeInfo& info : kTypes) {
        if (std::uint32_t(info.type) == id) return info;
    }
    return std::nullopt;
}

const TensorTypeInfo& tensorTypeInfo(TensorType type) {
    for (const TensorTypeInfo& info : kTypes) {
        if (info.type == type) return info;
    }
    assert(false && "every TensorType enumerator has a row in kTypes");
    return kTypes.front();
}

}  // namespace iris::kernels
