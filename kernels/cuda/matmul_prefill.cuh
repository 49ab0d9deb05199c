#pragma once
// CUDA products for many activation rows (a prefill chunk, the vision tower): y = x W^T on
// tensor cores, for W in any type matmulDecode reads.
//
//   y[i, n] = sum_j x[i, j] * W[n, j]      i < m, 0 <= n < N, k a multiple of 32
//
// A thread block computes a 64 x 64 tile of y: per step of 32 values along k it converts 64
// activation rows to bf16 and dequantises 64 weight rows to bf16 into shared memory, and four
// warps multiply them with 16 x 16 x 16 bf16 WMMA products accumulating in f32. Both operands
// are rounded to bf16 (8 significant bits), which is what the tensor cores multiply; the sums
// stay f32. This is the plain first version (no asynchronous copies, no pipelining).

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/tensor_type.h"

namespace iris::kernels::cuda {

// As above. Returns cudaErrorInvalidValue for an unsupported type, k not a multiple of 32,
// negative sizes or null pointers where work is to be done, cudaErrorNoKernelImageForDevice
// below compute capability 8.0, else the launch's error. Asynchronous.
cudaError_t matmulPrefill(TensorType weightType, const void* w, std::int64_t n, std::int64_t k,
                          const float* x, std::ptrdiff_t xStride, std::int64_t m, float* y,
                          std::ptrdiff_t yStride, cudaStream_t stream);

}  // namespace iris::kernels::cuda
