#pragma once
// Matrix products against weight matrices stored in any computable type: the linear layers of a
// transformer, for one token (decode, m = 1) or many (prefill).
//
//   y[i, n] = sum_j x[i, j] * W[n, j]      i < m, nBegin <= n < nEnd
//   W: (N, k) rows of `weightType`, row stride rowBytes(weightType, k), k a multiple of 256 for
//      the K types and of 32 for the legacy ones
//   x: (m, k) f32, first turned into `prepared` by prepareActivations (once per product, shared
//      by all threads); y: row stride yStride floats
//
// Quantised weights meet activations quantised to 8 bits per 32 values, and the products are
// integer dot products (VNNI where the CPU has it). f32/f16/bf16 weights take f32 activations.
// The caller splits [0, N) between threads; both functions are reentrant.

#include <cstddef>
#include <cstdint>

#include "kernels/tensor_type.h"

namespace iris::kernels {

// How activations are prepared for a weight type: f32 as they are (f32/f16/bf16 weights),
// 8-bit with a scale per 32 values (legacy quantised types) or per 256 (K types). Products with
// weights of different types can share one preparation when the format is the same.
enum class ActivationFormat { Float, Q8PerBlock32, Q8PerBlock256 };
ActivationFormat activationFormat(TensorType weightType);

// Bytes of one prepared activation row of length k for weights of `weightType`.
std::int64_t preparedRowBytes(TensorType weightType, std::int64_t k);

// Prepares m rows of x (row stride xStride floats) into `prepared` (m * preparedRowBytes bytes).
void prepareActivations(TensorType weightType, const float* x, std::ptrdiff_t xStride,
                        std::int64_t m, std::int64_t k, void* prepared);

// Output columns [nBegin, nEnd) of y = x W^T; runs the variant for activeIsa().
void matmul(TensorType weightType, const void* w, std::int64_t k, const void* prepared,
            std::int64_t m, float* y, std::ptrdiff_t yStride, std::int64_t nBegin,
            std::int64_t nEnd);

// ---- packed weights -------------------------------------------------------------------------
// Some types have a second layout that the CPU multiplies faster: with AVX-512 VNNI, q8_0, q5_0
// and q4_0 weights are stored as unsigned values with 16 rows interleaved 4 values at a time, so
// that one vpdpbusd computes 4 products for each of 16 rows at once and the per-block scales
// apply to 16 rows with one vector multiply-add (no horizontal sums). The values keep their
// width (q4_0 and q5_0 as nibbles plus, for q5_0, a bit plane; unpacked in registers) and the
// scales stay f16, so a packed matrix has the file's size: decode reads as many bytes as the
// file's layout would, and packing on 36-byte blocks (unpacked q5_0/q4_0, f32 scales) made a
// Q4_K_M decode read 28% more (measured: 76-81 against 60-61 tokens/s on a Qwen2.5-0.5B-shaped
// file, AMD Zen 5, 2 threads). Packing copies the weights once, at load time; the layout is in
// kernels/cpu/matmul.h. On AVX2 (no vpdpbusd) the same layout feeds vpmaddubsw, 8 rows per
// register: q5_0 and q4_0 as stored, q8_0 through the sign trick (|q| against x with q's sign).
// q4_K, q5_K and q6_K are packed on AVX2 too: 16 rows interleaved the same way per 256-value
// super-block, the values kept at 4, 5 or 6 bits, the 6-bit sub-block scales and minimums
// unpacked to one byte per row (2432, 2944 and 3392 bytes per 16 x 256 values against 2304,
// 2816 and 3360 in the file); the layout is in kernels/cpu/matmul.h. Their file layout costs
// a horizontal sum per row and the scale unpacking per row and token, which the packed one
// does once at load.

// Bytes of the packed form of n rows of k values, or 0 when `weightType` has none on this CPU.
std::int64_t packedBytes(TensorType weightType, std::int64_t n, std::int64_t k);

// Writes the packed form of w (n rows of k values of `weightType`) to `packed`
// (packedBytes(...) bytes). Only for types with packedBytes(...) > 0.
void packWeights(TensorType weightType, const void* w, std::int64_t n, std::int64_t k,
                 void* packed);

// As matmul(), on packed weights; activations from prepareActivations(weightType, ...). nBegin
// must be a multiple of 16.
void matmulPacked(TensorType weightType, const void* packed, std::int64_t k, const void* prepared,
                  std::int64_t m, float* y, std::ptrdiff_t yStride, std::int64_t nBegin,
                  std::int64_t nEnd);

}  // namespace iris::kernels
