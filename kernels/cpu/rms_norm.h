#pragma once
// The CPU variants behind kernels::rmsNorm, exposed for tests and benchmarks.
// Same contract as kernels/rms_norm.h. The x86 variants exist only when IRIS_KERNELS_X86 is
// defined and may only be called when the CPU has their level (see cpu_features.h).

#include <cstddef>
#include <cstdint>

namespace iris::kernels::cpu {

using RmsNormFn = void (*)(const float* x, std::ptrdiff_t xStride, const float* w, float* y,
                           std::ptrdiff_t yStride, std::int64_t rows, std::int64_t cols, float eps);

// Reference: sum of squares in double, one element at a time.
void rmsNormScalar(const float* x, std::ptrdiff_t xStride, const float* w, float* y,
                   std::ptrdiff_t yStride, std::int64_t rows, std::int64_t cols, float eps);
void rmsNormAvx2(const float* x, std::ptrdiff_t xStride, const float* w, float* y,
                 std::ptrdiff_t yStride, std::int64_t rows, std::int64_t cols, float eps);
void rmsNormAvx512(const float* x, std::ptrdiff_t xStride, const float* w, float* y,
                   std::ptrdiff_t yStride, std::int64_t rows, std::int64_t cols, float eps);

}  // namespace iris::kernels::cpu
