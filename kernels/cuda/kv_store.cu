#include <algorithm>

#include <cuda_fp16.h>

#include "kernels/cuda/kv_store.cuh"

namespace iris::kernels::cuda {
namespace {

constexpr int kThreads = 256;

unsigned gridFor(std::int64_t items) {
    return unsigned(std::clamp<std::int64_t>((items + kThreads - 1) / kThreads, 1, 65535));
}

// A thread per (token, value), grid-stride; consecutive threads write consecutive values of one
// row, so the stores coalesce.
template <class T>
__global__ void storeKvKernel(const float* __restrict__ k, const float* __restrict__ v,
                              std::int64_t tokens, std::int64_t width,
                              const std::int64_t* __restrict__ rows, T* keys, T* values) {
    const std::int64_t n = tokens * width;
    for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t row = rows[i / width];
        if (row < 0) continue;
        const std::int64_t at = row * width + i % width;
        if constexpr (sizeof(T) == 2) {
            keys[at] = __float2half_rn(k[i]);
            if (values != nullptr) values[at] = __float2half_rn(v[i]);
        } else {
            keys[at] = k[i];
            if (values != nullptr) values[at] = v[i];
        }
    }
}

__global__ void addBiasKernel(float* y, const float* __restrict__ bias, std::int64_t rows,
                              std::int64_t width) {
    const std::int64_t n = rows * width;
    for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += std::int64_t(gridDim.x) * blockDim.x)
        y[i] += bias[i % width];
}

}  // namespace

cudaError_t storeKvRows(const float* k, const float* v, std::int64_t tokens, std::int64_t width,
                        const std::int64_t* rows, TensorType type, void* keys, void* values,
                        cudaStream_t stream) {
    if (tokens < 0 || width < 0 || (type != TensorType::F16 && type != TensorType::F32))
        return cudaErrorInvalidValue;
    if (tokens * width == 0) return cudaSuccess;
    if (k == nullptr || rows == nullptr || keys == nullptr || (v == nullptr) != (values == nullptr))
        return cudaErrorInvalidValue;
    const unsigned grid = gridFor(tokens * width);
    if (type == TensorType::F16) {
        storeKvKernel<<<grid, kThreads, 0, stream>>>(
            k, v, tokens, width, rows, static_cast<__half*>(keys), static_cast<__half*>(values));
    } else {
        storeKvKernel<<<grid, kThreads, 0, stream>>>(
            k, v, tokens, width, rows, static_cast<float*>(keys), static_cast<float*>(values));
    }
    return cudaGetLastError();
}

cudaError_t addBias(float* y, const float* bias, std::int64_t rows, std::int64_t width,
                    cudaStream_t stream) {
    if (rows < 0 || width < 0) return cudaErrorInvalidValue;
    if (rows * width == 0) return cudaSuccess;
    if (y == nullptr || bias == nullptr) return cudaErrorInvalidValue;
    addBiasKernel<<<gridFor(rows * width), kThreads, 0, stream>>>(y, bias, rows, width);
    return cudaGetLastError();
}

}  // namespace iris::kernels::cuda
