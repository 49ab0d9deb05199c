#include "kernels/matmul.h"

#include <cstring>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu_features.h"

namespace iris::kernels {
namespace {

bool takesFloatActivations(TensorType type) {
    return type == TensorType::F32 || type == TensorType::F16 || type == TensorType::BF16;
}

}  // namespace

namespace cpu {

IsaVariants<MatmulFn> matmulVariants(TensorType weightType) {
    return {
        .scalar = matmulScalar(weightType),
#if defined(IRIS_KERNELS_X86)
        .avx2 = matmulAvx2(weightType), .avx512 = matmulAvx512(weightType)
#endif
    };
}

}  // namespace cpu

namespace cpu {

bool usesQ8KActivations(TensorType weightType) {
    return weightType == TensorType::Q4_K || weightType == TensorType::Q5_K ||
           weightType == TensorType::Q6_K;
}

}  // namespace cpu

ActivationFormat activationFormat(TensorType weightType) {
    if (takesFloatActivations(weightType)) return ActivationFormat::Float;
    return cpu::usesQ8KActivations(weightType) ? ActivationFormat::Q8PerBlock256
                                               : ActivationFormat::Q8PerBlock32;
}

std::int64_t preparedRowBytes(TensorType weightType, std::int64_t k) {
    if (takesFloatActivations(weightType)) return k * std::int64_t(sizeof(float));
    if (cpu::usesQ8KActivations(weightType))
        return k / cpu::kQKK * std::int64_t(sizeof(cpu::BlockQ8K));
    return k / cpu::kQK * std::int64_t(sizeof(cpu::BlockQ8Act));
}

void prepareActivations(TensorType weightType, const float* x, std::ptrdiff_t xStride,
                        std::int64_t m, std::int64_t k, void* prepared) {
    using QuantizeFn = void (*)(const float*, std::int64_t, void*);
    constexpr cpu::IsaVariants<QuantizeFn> kQ8{cpu::quantizeActivationRow, nullptr,
                                               IRIS_X86_VARIANT(cpu::quantizeActivationRowAvx512)};
    constexpr cpu::IsaVariants<QuantizeFn> kQ8K{
        cpu::quantizeActivationRowK, nullptr, IRIS_X86_VARIANT(cpu::quantizeActivationRowKAvx512)};
    const QuantizeFn quantize =
        cpu::pickVariant(cpu::usesQ8KActivations(weightType) ? kQ8K : kQ8, activeIsa());
    auto* out = static_cast<std::uint8_t*>(prepared);
    const std::int64_t rowBytes = preparedRowBytes(weightType, k);
    for (std::int64_t i = 0; i < m; ++i, out += rowBytes) {
        if (takesFloatActivations(weightType))
            std::memcpy(out, x + i * xStride, std::size_t(rowBytes));
        else
            quantize(x + i * xStride, k, out);
    }
}

void matmul(TensorType weightType, const void* w, std::int64_t k, const void* prepared,
            std::int64_t m, float* y, std::ptrdiff_t yStride, std::int64_t nBegin,
            std::int64_t nEnd) {
    const cpu::MatmulFn fn = cpu::pickVariant(cpu::matmulVariants(weightType), activeIsa());
    fn(w, k, prepared, m, y, yStride, nBegin, nEnd);
}

}  // namespace iris::kernels
