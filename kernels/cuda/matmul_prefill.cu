#include <algorithm>

#include <cuda_bf16.h>
#include <mma.h>

#include "kernels/cuda/matmul_prefill.cuh"
#include "kernels/cuda/quant_units.cuh"

namespace iris::kernels::cuda {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kTile = 64;      // rows of x and of W per block
constexpr int kStep = 32;      // values along k per step: one weight unit
constexpr int kPad = 8;        // bf16 row padding against bank conflicts (WMMA wants ld % 8 == 0)
constexpr int kThreads = 128;  // four warps, each a 32 x 32 quarter of the tile
constexpr int kLd = kStep + kPad;

// Rows of W past n and rows of x past m are zeros in shared memory, so every warp always runs
// whole fragments; only the final store checks bounds.
template <TensorType kType>
__global__ void __launch_bounds__(kThreads)
    prefillKernel(const std::uint8_t* __restrict__ w, std::int64_t rowBytes, std::int64_t n,
                  std::int64_t k, const float* __restrict__ x, std::ptrdiff_t xStride,
                  std::int64_t m, float* __restrict__ y, std::ptrdiff_t yStride) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    __shared__ __align__(32) __nv_bfloat16 xs[kTile * kLd];
    __shared__ __align__(32) __nv_bfloat16 ws[kTile * kLd];
    __shared__ __align__(32) float out[kTile * (kTile + 4)];
    const std::int64_t n0 = std::int64_t(blockIdx.x) * kTile, m0 = std::int64_t(blockIdx.y) * kTile;
    const int warp = threadIdx.x / 32;
    const int warpRow = (warp / 2) * 32, warpCol = (warp % 2) * 32;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
    for (auto& row : acc)
        for (auto& f : row)
            wmma::fill_fragment(f, 0.0f);

    for (std::int64_t k0 = 0; k0 < k; k0 += kStep) {
        for (int i = threadIdx.x; i < kTile * kStep; i += kThreads) {
            const int r = i / kStep, c = i % kStep;
            const float v = m0 + r < m ? x[(m0 + r) * xStride + k0 + c] : 0.0f;
            xs[r * kLd + c] = __float2bfloat16(v);
        }
        if (threadIdx.x < kTile) {  // a thread per weight row: one 32-value unit
            const int r = threadIdx.x;
            __nv_bfloat16* dst = ws + r * kLd;
            if (n0 + r < n) {
                const std::uint8_t* row = w + (n0 + r) * rowBytes;
                if constexpr (isFloatType(kType)) {
                    for (int c = 0; c < kStep; ++c)
                        dst[c] = __float2bfloat16(floatAt<kType>(row, k0 + c));
                } else {
                    const Unit32 unit = loadUnit<kType>(row, k0 / kStep);
                    for (int c = 0; c < kStep; ++c)
                        dst[c] = __float2bfloat16(unitValue(unit, c));
                }
            } else {
                for (int c = 0; c < kStep; ++c)
                    dst[c] = __float2bfloat16(0.0f);
            }
        }
        __syncthreads();
        for (int kk = 0; kk < kStep; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b[2];
            for (int i = 0; i < 2; ++i) {
                wmma::load_matrix_sync(a[i], xs + (warpRow + 16 * i) * kLd + kk, kLd);
                // W's rows are B's columns: B (k x n) column-major with leading dimension kLd.
                wmma::load_matrix_sync(b[i], ws + (warpCol + 16 * i) * kLd + kk, kLd);
            }
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j)
                    wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(out + (warpRow + 16 * i) * (kTile + 4) + warpCol + 16 * j,
                                    acc[i][j], kTile + 4, wmma::mem_row_major);
    __syncthreads();
    for (int i = threadIdx.x; i < kTile * kTile; i += kThreads) {
        const int r = i / kTile, c = i % kTile;
        if (m0 + r < m && n0 + c < n) y[(m0 + r) * yStride + n0 + c] = out[r * (kTile + 4) + c];
    }
#endif
}

}  // namespace

cudaError_t matmulPrefill(TensorType weightType, const void* w, std::int64_t n, std::int64_t k,
                          const float* x, std::ptrdiff_t xStride, std::int64_t m, float* y,
                          std::ptrdiff_t yStride, cudaStream_t stream) {
    if (n < 0 || k < 0 || m < 0 || k % kStep != 0) return cudaErrorInvalidValue;
    if (n == 0 || m == 0) return cudaSuccess;
    if (w == nullptr || y == nullptr || (k > 0 && x == nullptr) || yStride < n ||
        (m > 1 && xStride < k) ||
        reinterpret_cast<std::uintptr_t>(w) % (weightType == TensorType::F32 ? 4 : 2) != 0)
        return cudaErrorInvalidValue;
    const auto& info = tensorTypeInfo(weightType);
    if (k % info.blockElements != 0 ||
        withDeviceType(weightType, [](auto) { return cudaSuccess; }) != cudaSuccess)
        return cudaErrorInvalidValue;
    const dim3 grid(unsigned((n + kTile - 1) / kTile), unsigned((m + kTile - 1) / kTile));
    if ((m + kTile - 1) / kTile > 65535) return cudaErrorInvalidValue;
    int device = 0, major = 0;
    if (const cudaError_t err = cudaGetDevice(&device); err != cudaSuccess) return err;
    if (const cudaError_t err =
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
        err != cudaSuccess)
        return err;
    if (major < 8) return cudaErrorNoKernelImageForDevice;  // bf16 tensor cores: Ampere and later
    const std::int64_t rowBytes = k / info.blockElements * info.blockBytes;
    return withDeviceType(weightType, [&](auto tag) {
        prefillKernel<decltype(tag)::value><<<grid, kThreads, 0, stream>>>(
            static_cast<const std::uint8_t*>(w), rowBytes, n, k, x, xStride, m, y, yStride);
        return cudaGetLastError();
    });
}

}  // namespace iris::kernels::cuda
