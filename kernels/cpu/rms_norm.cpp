#include "kernels/cpu/rms_norm.h"

#include <cmath>

#include "kernels/cpu/dispatch.h"
#include "kernels/rms_norm.h"

namespace iris::kernels {
namespace cpu {

void rmsNormScalar(const float* x, std::ptrdiff_t xStride, const float* w, float* y,
                   std::ptrdiff_t yStride, std::int64_t rows, std::int64_t cols, float eps) {
    for (std::int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * xStride;
        float* yr = y + r * yStride;
        double sumSquares = 0.0;
        for (std::int64_t i = 0; i < cols; ++i)
            sumSquares += double(xr[i]) * double(xr[i]);
        const float mean = cols > 0 ? float(sumSquares / double(cols)) : 0.0f;
        const float scale = 1.0f / std::sqrt(mean + eps);
        for (std::int64_t i = 0; i < cols; ++i)
            yr[i] = xr[i] * scale * w[i];
    }
}

}  // namespace cpu

namespace {
constexpr cpu::IsaVariants<cpu::RmsNormFn> kRmsNormVariants = {
    .scalar = cpu::rmsNormScalar,
    .avx2 = IRIS_X86_VARIANT(cpu::rmsNormAvx2),
    .avx512 = IRIS_X86_VARIANT(cpu::rmsNormAvx512),
};
}  // namespace

void rmsNorm(const float* x, std::ptrdiff_t xStride, const float* w, float* y,
             std::ptrdiff_t yStride, std::int64_t rows, std::int64_t cols, float eps) {
    cpu::pickVariant(kRmsNormVariants, activeIsa())(x, xStride, w, y, yStride, rows, cols, eps);
}

}  // namespace iris::kernels
