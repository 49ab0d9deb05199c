#pragma once
// CUDA RMSNorm: the same contract as kernels/rms_norm.h, on device pointers, on `stream`.

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace iris::kernels::cuda {

// y[r, i] = x[r, i] / sqrt(mean_i(x[r, i]^2) + eps) * w[i]; x, w, y in device memory.
// y may be x when the strides agree. Returns cudaErrorInvalidValue for negative sizes or a null
// pointer with rows*cols > 0, else the launch's error. Asynchronous: synchronise `stream` to wait.
cudaError_t rmsNorm(const float* x, std::ptrdiff_t xStride, const float* w, float* y,
                    std::ptrdiff_t yStride, std::int64_t rows, std::int64_t cols, float eps,
                    cudaStream_t stream);

}  // namespace iris::kernels::cuda
