#pragma once
// The CPU variants behind kernels::gemm, exposed for tests and benchmarks. Same contract as
// kernels/gemm.h. The x86 variants exist only when IRIS_KERNELS_X86 is defined and may only be
// called when the CPU has their level (see cpu_features.h).

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/dispatch.h"
#include "kernels/tensor_type.h"

namespace iris::kernels::cpu {

using GemmFn = void (*)(TensorType weightType, const void* w, std::ptrdiff_t wStride,
                        std::int64_t k, const float* x, std::ptrdiff_t xStride, std::int64_t m,
                        const float* bias, float* y, std::ptrdiff_t yStride, std::int64_t nBegin,
                        std::int64_t nEnd);

// Reference: one output at a time, f32 accumulation in index order.
void gemmScalar(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
                const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias, float* y,
                std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd);
// Packed W panels and a 6 x 16 (AVX2) or 12 x 32 (AVX-512) register-blocked micro-kernel.
void gemmAvx2(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
              const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias, float* y,
              std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd);
void gemmAvx512(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
                const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias, float* y,
                std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd);
// For tests: gemmAvx512's blocking (12 x 32 tiles, its row and column tails) computed with AVX2,
// so that CPUs without AVX-512 check everything of that variant but its vector operations.
// Slow; never dispatched to.
void gemmAvx2As12x32(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
                     const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias,
                     float* y, std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd);

IsaVariants<GemmFn> gemmVariants();

// GemmPrecision::Bf16. Reference: operands rounded to bf16 one at a time, f32 sums in index order.
void gemmBf16Scalar(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
                    const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias,
                    float* y, std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd);
// Without AMX: rounds chunks of x and the columns' W to bf16, then sums with the F32 gemm.
void gemmBf16Rounded(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
                     const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias,
                     float* y, std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd);
// x86/gemm_bf16.cpp. AMX tiles: 32 x 32 blocks of y in four tiles; only when
// cpuFeatures().amxBf16 and avx512bf16. AVX512-BF16 dot products: 12 x 32 blocks in registers;
// only when cpuFeatures().avx512bf16 (and the AVX-512 level).
void gemmBf16Avx512(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
                    const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias,
                    float* y, std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd);
void gemmBf16Amx(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
                 const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias,
                 float* y, std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd);

}  // namespace iris::kernels::cpu
