#include <algorithm>
#include <climits>

#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/warp.cuh"

namespace iris::kernels::cuda {
namespace {

// Sum of `v` over the whole block; every thread gets the result.
template <int kBlock>
__device__ float blockSum(float v) {
    static_assert(kBlock % kWarp == 0 && kBlock / kWarp <= kWarp);
    __shared__ float warpSums[kBlock / kWarp];
    const int warp = threadIdx.x / kWarp;
    const int lane = threadIdx.x % kWarp;
    v = warpSum(v);
    if (lane == 0) warpSums[warp] = v;
    __syncthreads();
    v = lane < kBlock / kWarp ? warpSums[lane] : 0.0f;
    v = warpSum(v);   // every warp reduces the partial sums, so no second broadcast is needed
    __syncthreads();  // warpSums may be reused by the next row
    return v;
}

// One block per row (grid-stride over rows). kVec4: cols, strides and pointers allow float4
// accesses, which halve the number of memory instructions on this bandwidth-bound op.
// x and y are not __restrict__: in-place use is allowed.
template <int kBlock, bool kVec4>
__global__ void rmsNormKernel(const float* x, std::ptrdiff_t xStride, const float* __restrict__ w,
                              float* y, std::ptrdiff_t yStride, std::int64_t rows,
                              std::int64_t cols, float eps) {
    for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* xr = x + row * xStride;
        float* yr = y + row * yStride;
        float sumSquares = 0.0f;
        if constexpr (kVec4) {
            const auto* x4 = reinterpret_cast<const float4*>(xr);
            for (std::int64_t i = threadIdx.x; i < cols / 4; i += kBlock) {
                const float4 v = x4[i];
                sumSquares += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
            }
        } else {
            for (std::int64_t i = threadIdx.x; i < cols; i += kBlock)
                sumSquares += xr[i] * xr[i];
        }
        const float scale = rsqrtf(blockSum<kBlock>(sumSquares) / float(cols) + eps);
        if constexpr (kVec4) {
            const auto* x4 = reinterpret_cast<const float4*>(xr);
            const auto* w4 = reinterpret_cast<const float4*>(w);
            auto* y4 = reinterpret_cast<float4*>(yr);
            for (std::int64_t i = threadIdx.x; i < cols / 4; i += kBlock) {
                const float4 v = x4[i];
                const float4 g = w4[i];
                y4[i] = make_float4(v.x * scale * g.x, v.y * scale * g.y, v.z * scale * g.z,
                                    v.w * scale * g.w);
            }
        } else {
            for (std::int64_t i = threadIdx.x; i < cols; i += kBlock)
                yr[i] = xr[i] * scale * w[i];
        }
    }
}

template <int kBlock>
cudaError_t launch(bool vec4, const float* x, std::ptrdiff_t xStride, const float* w, float* y,
                   std::ptrdiff_t yStride, std::int64_t rows, std::int64_t cols, float eps,
                   cudaStream_t stream) {
    const unsigned grid = unsigned(std::min<std::int64_t>(rows, INT_MAX));
    if (vec4) {
        rmsNormKernel<kBlock, true>
            <<<grid, kBlock, 0, stream>>>(x, xStride, w, y, yStride, rows, cols, eps);
    } else {
        rmsNormKernel<kBlock, false>
            <<<grid, kBlock, 0, stream>>>(x, xStride, w, y, yStride, rows, cols, eps);
    }
    return cudaGetLastError();
}

bool aligned16(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

}  // namespace

cudaError_t rmsNorm(const float* x, std::ptrdiff_t xStride, const float* w, float* y,
                    std::ptrdiff_t yStride, std::int64_t rows, std::int64_t cols, float eps,
                    cudaStream_t stream) {
    if (rows < 0 || cols < 0) return cudaErrorInvalidValue;
    if (rows == 0 || cols == 0) return cudaSuccess;
    if (x == nullptr || w == nullptr || y == nullptr ||
        (rows > 1 && (xStride < cols || yStride < cols)))
        return cudaErrorInvalidValue;
    const bool vec4 = cols % 4 == 0 && xStride % 4 == 0 && yStride % 4 == 0 && aligned16(x) &&
                      aligned16(w) && aligned16(y);
    // Wide rows get more threads so each thread keeps a few elements in flight.
    if (cols >= 4096) return launch<1024>(vec4, x, xStride, w, y, yStride, rows, cols, eps, stream);
    return launch<256>(vec4, x, xStride, w, y, yStride, rows, cols, eps, stream);
}

}  // namespace iris::kernels::cuda
