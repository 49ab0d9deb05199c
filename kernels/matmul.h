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

}  // namespace iris::kernels
