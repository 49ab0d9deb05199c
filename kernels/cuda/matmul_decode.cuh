#pragma once
// CUDA decode products: y = x W^T for the few rows of a decode step (one token per running
// sequence), with W in any computable GGUF type, on device pointers, on `stream`.
//
//   y[i, n] = sum_j x[i, j] * W[n, j]      i < m <= kMaxDecodeRows, 0 <= n < N
//   W: N rows of `weightType`, row stride rowBytes(weightType, k) (the file's layout, uploaded
//      unchanged), k a multiple of the type's block size
//   x: (m, k) f32, row stride xStride floats; y: row stride yStride floats
//
// Decoding is bound by reading W once: each warp owns one output row and walks it in 32-value
// units, so every weight byte is loaded once for all m activation rows. Quantised weights meet
// activations quantised to 8 bits per 32 values (one f32 scale each, the same block the CPU uses
// for the legacy types) and the products are __dp4a integer dot products; f32, f16 and bf16
// weights take the f32 activations as they are.

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/tensor_type.h"

namespace iris::kernels::cuda {

// More rows than this are a prefill and go to the tensor-core products.
inline constexpr std::int64_t kMaxDecodeRows = 8;

// Whether matmulDecode handles `weightType`: f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q4_K,
// q5_K, q6_K.
bool decodeSupports(TensorType weightType);

// Device scratch matmulDecode needs for m rows of k values: the quantised activations (0 for
// the float types). The caller allocates it once (per step, for the largest product).
std::int64_t decodeScratchBytes(TensorType weightType, std::int64_t m, std::int64_t k);

// y = x W^T as above. Returns cudaErrorInvalidValue for an unsupported type, m outside
// [1, kMaxDecodeRows], k not a multiple of the block size, a null pointer or a scratch that
// is null while decodeScratchBytes > 0; else the launches' error. Asynchronous.
cudaError_t matmulDecode(TensorType weightType, const void* w, std::int64_t n, std::int64_t k,
                         const float* x, std::ptrdiff_t xStride, std::int64_t m, float* y,
                         std::ptrdiff_t yStride, void* scratch, cudaStream_t stream);

// A mixture of experts' products for a decode step: `stack` holds `experts` matrices of n rows
// of k values each, one after the other (a GGUF expert tensor {k, n, experts}); activation row r
// (r < rows) goes to the perRow experts expertIds[r * perRow ...], and pair p = r * perRow + i
// writes y + p * yStride (n values). rows * perRow <= 65535. Scratch: decodeScratchBytes(type,
// rows, k). An expert id outside [0, experts) gives zeros. Asynchronous.
cudaError_t matmulDecodeGrouped(TensorType weightType, const void* stack, std::int64_t experts,
                                std::int64_t n, std::int64_t k, const float* x,
                                std::ptrdiff_t xStride, std::int64_t rows,
                                const std::int32_t* expertIds, int perRow, float* y,
                                std::ptrdiff_t yStride, void* scratch, cudaStream_t stream);

}  // namespace iris::kernels::cuda
