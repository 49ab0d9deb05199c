#pragma once
// The two small steps of a decoder layer on the GPU that have no CPU kernel of their own (the CPU
// does them in inference/models/model_parts.cpp and linear.cpp): storing a batch's K and V rows in
// their paged-cache slots, and adding a product's bias.

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/tensor_type.h"

namespace iris::kernels::cuda {

// For t < tokens: row t of k and of v (width floats each, contiguous) goes to pool row rows[t]
// (int64, device memory) of `keys` / `values`, i.e. at element rows[t] * width, rounded to f16
// (round to nearest even, as kernels/fp16.h) when `type` is F16, copied when F32. A row index
// below 0 skips the token. v and values both null store K alone (MiniMax-M3's index keys).
// cudaErrorInvalidValue for another type, negative sizes, or null pointers where work is to be
// done (one of v and values alone included). Asynchronous.
cudaError_t storeKvRows(const float* k, const float* v, std::int64_t tokens, std::int64_t width,
                        const std::int64_t* rows, TensorType type, void* keys, void* values,
                        cudaStream_t stream);

// y[r, n] += bias[n] for r < rows, n < width (y contiguous, rows of width).
cudaError_t addBias(float* y, const float* bias, std::int64_t rows, std::int64_t width,
                    cudaStream_t stream);

}  // namespace iris::kernels::cuda
