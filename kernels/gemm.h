#pragma once
// Dense matrix products for many rows at once (the vision tower, long prefills, attention over
// thousands of tokens), where the work is bound by arithmetic, not by reading the weights:
// register-blocked micro-kernels over cache-sized panels (BLIS-style; see cpu/x86/gemm_x86.h).
//
//   y[i, n] = sum_j x[i, j] * W[n, j]    (+ bias[n] when bias is not null)
//   i < m, nBegin <= n < nEnd; x: (m, k) f32, row stride xStride floats
//   W: (N, k) rows of f32, f16 or bf16, row stride wStride elements (>= k); y: row stride yStride
//   floats. Only columns [nBegin, nEnd) of y's m rows are written; bias (when given) is indexed
//   by n, i.e. it holds at least nEnd floats.
//
// weightType must be F32, F16 or BF16 (gemmSupports); for any other type the written range of y
// is filled with NaN so the mistake shows instead of crashing. k == 0 writes the bias (or 0).
//
// Threads: the caller splits [0, N) between threads; gemm is reentrant (its packing buffers are
// per thread) and calls on disjoint N ranges may run concurrently. Buffers are not aliased: y must
// not overlap x, W or bias.
//
// Speed: W is converted and repacked once per call (per block of k), so many rows per call pay
// for it. Give each thread a range of whole 16-column (AVX-512: 32) panels where possible: a
// partial panel costs as much as a full one.
//
// Accuracy: f32 accumulation; results agree with a float64 product to within 1e-5 of
// sum_j |x[i, j] W[n, j]| for k up to a few thousand (what the tests check). The summation order
// differs from the scalar reference and between instruction-set variants, but not with the
// column range: splitting [nBegin, nEnd) between calls gives bit-identical results.

#include <cstddef>
#include <cstdint>

#include "kernels/tensor_type.h"

namespace iris::kernels {

void gemm(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
          const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias, float* y,
          std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd);

// How the products are formed.
//   F32   the contract above.
//   Bf16  x and W are first rounded to bfloat16 (to nearest even, 8 significant bits), then the
//         products (exact in f32) are summed in f32: what AMX tiles compute (Intel Xeon 4th
//         generation and later: about 5x the AVX-512 F32 kernel) and AVX512-BF16 dot products
//         compute (also AMD Zen 4 and 5: 2x the F32 kernel on a Zen 5; on an Intel Xeon 0.7x,
//         the conversions cost more than the dot products save), and the precision Qwen2.5-VL
//         and MiniMax-M3 were trained and are served in. The result agrees with a float64 product of the
//         rounded operands to within 1e-5 of sum_j |x[i, j] W[n, j]|, and with the unrounded
//         product to within 2^-8 of it. Without either the same rounding is done and the F32
//         kernel sums. Column splits are bit-identical as for F32.
enum class GemmPrecision { F32, Bf16 };

void gemm(GemmPrecision precision, TensorType weightType, const void* w, std::ptrdiff_t wStride,
          std::int64_t k, const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias,
          float* y, std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd);

// Whether GemmPrecision::Bf16 runs on AMX tiles here (usable by this process, with the AVX-512
// level active: IRIS_CPU_ISA=avx2 turns it off too).
bool gemmBf16OnAmx();

// One measurement of both precisions on the same vision-tower-shaped product (512 rows, k 1280,
// 256 columns of f16 W, one thread, best of three runs each, taken alternately).
struct Bf16Speed {
    double f32Seconds = 0;
    double bf16Seconds = 0;
};
Bf16Speed measureBf16Speed();

// Whether GemmPrecision::Bf16 is faster than F32 on this machine: measured once per process
// (measureBf16Speed, about 20 ms in a release build, at the first call) wherever the CPU has bf16
// products, false without them (rounding first is never faster). Which kernel wins is not a
// matter of the CPU's family: AMX tiles are about 5x F32, AVX512-BF16 dot products 2x on AMD
// Zen 5 but 0.7x on an Intel Xeon, where the conversions cost more than the dot products save.
bool gemmBf16Faster();

// Whether gemm computes with weights of `weightType` (F32, F16, BF16).
constexpr bool gemmSupports(TensorType weightType) {
    return weightType == TensorType::F32 || weightType == TensorType::F16 ||
           weightType == TensorType::BF16;
}

}  // namespace iris::kernels
