#include "kernels/gemm.h"

#include <limits>

#include "kernels/cpu/gemm_internal.h"
#include "kernels/cpu_features.h"
#include "kernels/fp16.h"

namespace iris::kernels {

namespace cpu {
namespace {

float weightAt(TensorType type, const void* w, std::ptrdiff_t index) {
    switch (type) {
        case TensorType::F16:
            return fp16ToFp32(static_cast<const std::uint16_t*>(w)[index]);
        case TensorType::BF16:
            return bf16ToFp32(static_cast<const std::uint16_t*>(w)[index]);
        default:
            return static_cast<const float*>(w)[index];
    }
}

}  // namespace

void gemmScalar(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
                const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias, float* y,
                std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t n = nBegin; n < nEnd; ++n) {
            float sum = bias != nullptr ? bias[n] : 0.0f;
            for (std::int64_t j = 0; j < k; ++j)
                sum += x[i * xStride + j] * weightAt(weightType, w, n * wStride + j);
            y[i * yStride + n] = sum;
        }
    }
}

IsaVariants<GemmFn> gemmVariants() {
    return {.scalar = gemmScalar,
            .avx2 = IRIS_X86_VARIANT(gemmAvx2),
            .avx512 = IRIS_X86_VARIANT(gemmAvx512)};
}

}  // namespace cpu

void gemm(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
          const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias, float* y,
          std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    if (!gemmSupports(weightType)) {
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t n = nBegin; n < nEnd; ++n)
                y[i * yStride + n] = std::numeric_limits<float>::quiet_NaN();
        return;
    }
    static const cpu::GemmFn fn = cpu::pickVariant(cpu::gemmVariants(), activeIsa());
    fn(weightType, w, wStride, k, x, xStride, m, bias, y, yStride, nBegin, nEnd);
}

}  // namespace iris::kernels
