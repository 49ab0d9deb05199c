#include <algorithm>
#include <climits>
#include <type_traits>

#include <cuda_fp16.h>

#include "kernels/cpu/quant_blocks.h"
#include "kernels/cuda/matmul_decode.cuh"
#include "kernels/cuda/quant_units.cuh"
#include "kernels/cuda/warp.cuh"

namespace iris::kernels::cuda {
namespace {

using cpu::BlockQ8Act;

constexpr int kWarpsPerBlock = 4;  // output rows per thread block
constexpr int kUnit = 32;          // values per activation block and per weight unit

// ---- activations ----------------------------------------------------------------------------

// One warp per 32 values, one value per lane: act[i * units + u] holds values 32u..32u+31 of
// row i as q = round(x / d), d = max|x| / 127, and d times the sum of the q.
__global__ void quantizeActivationsKernel(const float* __restrict__ x, std::ptrdiff_t xStride,
                                          std::int64_t m, std::int64_t units,
                                          BlockQ8Act* __restrict__ act) {
    const int lane = threadIdx.x % kWarp;
    const std::int64_t warpsInGrid = std::int64_t(gridDim.x) * (blockDim.x / kWarp);
    for (std::int64_t b = std::int64_t(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
         b < m * units; b += warpsInGrid) {
        const std::int64_t row = b / units;
        const std::int64_t unit = b % units;
        const float v = x[row * xStride + unit * kUnit + lane];
        const float amax = warpMax(fabsf(v));
        const float d = amax / 127.0f;
        const int q = amax == 0.0f ? 0 : __float2int_rn(v / d);
        const int sum = warpSum(q);
        act[b].qs[lane] = static_cast<std::int8_t>(q);
        if (lane == 0) {
            act[b].d = d;
            act[b].sum = sum;
        }
    }
}

// ---- quantised weights ------------------------------------------------------------------------

// One warp per output row; lanes take the row's 32-value units in turn, so a warp reads its
// row's bytes once, in order, for all m activation rows (m <= kM).
template <TensorType kType, int kM>
__global__ void __launch_bounds__(kWarp* kWarpsPerBlock)
    quantDecodeKernel(const std::uint8_t* __restrict__ w, std::int64_t rowBytes, std::int64_t n,
                      std::int64_t units, const BlockQ8Act* __restrict__ act, int m,
                      float* __restrict__ y, std::ptrdiff_t yStride) {
    const std::int64_t row = std::int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
    if (row >= n) return;  // the whole warp leaves together
    const int lane = threadIdx.x % kWarp;
    const std::uint8_t* wr = w + row * rowBytes;
    float acc[kM] = {};
    for (std::int64_t u = lane; u < units; u += kWarp) {
        const Unit32 unit = loadUnit<kType>(wr, u);
#pragma unroll
        for (int i = 0; i < kM; ++i) {
            if (i >= m) break;
            acc[i] += unitDot(unit, act[i * units + u]);
        }
    }
#pragma unroll
    for (int i = 0; i < kM; ++i) {
        const float sum = warpSum(acc[i]);  // every lane takes part, also for i >= m
        if (lane == 0 && i < m) y[i * yStride + row] = sum;
    }
}

// A mixture of experts' products for decoding: one warp per (output row, pair); pair p multiplies
// activation row p / perRow by expert experts[p] of a stack of expert matrices. An expert id
// outside the stack gives zeros.
template <TensorType kType>
__global__ void __launch_bounds__(kWarp* kWarpsPerBlock)
    groupedDecodeKernel(const std::uint8_t* __restrict__ w, std::int64_t experts,
                        std::int64_t rowBytes, std::int64_t n, std::int64_t k,
                        const float* __restrict__ x, std::ptrdiff_t xStride,
                        const BlockQ8Act* __restrict__ act, const std::int32_t* __restrict__ ids,
                        int perRow, float* __restrict__ y, std::ptrdiff_t yStride) {
    const std::int64_t row = std::int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
    if (row >= n) return;
    const int lane = threadIdx.x % kWarp;
    const std::int64_t pair = blockIdx.y, source = pair / perRow;
    const std::int32_t expert = ids[pair];
    float acc = 0.0f;
    if (expert >= 0 && expert < experts) {
        const std::uint8_t* wr = w + (std::int64_t(expert) * n + row) * rowBytes;
        if constexpr (isFloatType(kType)) {
            for (std::int64_t j = lane; j < k; j += kWarp)
                acc += floatAt<kType>(wr, j) * x[source * xStride + j];
        } else {
            const std::int64_t units = k / kUnit;
            for (std::int64_t u = lane; u < units; u += kWarp)
                acc += unitDot(loadUnit<kType>(wr, u), act[source * units + u]);
        }
    }
    acc = warpSum(acc);
    if (lane == 0) y[pair * yStride + row] = acc;
}

// ---- float weights --------------------------------------------------------------------------

// Two 16-bit floats packed in a word, in memory order.
template <TensorType kType>
__device__ float2 unpackPair(std::uint32_t v) {
    if constexpr (kType == TensorType::F16) {
        return make_float2(__half2float(__ushort_as_half(static_cast<unsigned short>(v & 0xFFFFu))),
                           __half2float(__ushort_as_half(static_cast<unsigned short>(v >> 16))));
    }
    return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xFFFF0000u));  // bf16
}

// Values j..j+7 of a row with 16-byte aligned loads (one for 16-bit types, two for f32).
template <TensorType kType>
__device__ void load8(const std::uint8_t* row, std::int64_t j, float (&v)[8]) {
    if constexpr (kType == TensorType::F32) {
        const auto* p = reinterpret_cast<const float4*>(reinterpret_cast<const float*>(row) + j);
        const float4 a = p[0], b = p[1];
        v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z,
        v[7] = b.w;
    } else {
        const uint4 q = *reinterpret_cast<const uint4*>(row + 2 * j);
        const std::uint32_t words[4] = {q.x, q.y, q.z, q.w};
        for (int i = 0; i < 4; ++i) {
            const float2 pair = unpackPair<kType>(words[i]);
            v[2 * i] = pair.x;
            v[2 * i + 1] = pair.y;
        }
    }
}

// kVec: k is a multiple of 8 and rows and x allow 16-byte loads.
template <TensorType kType, int kM, bool kVec>
__global__ void __launch_bounds__(kWarp* kWarpsPerBlock)
    floatDecodeKernel(const std::uint8_t* __restrict__ w, std::int64_t rowBytes, std::int64_t n,
                      std::int64_t k, const float* __restrict__ x, std::ptrdiff_t xStride, int m,
                      float* __restrict__ y, std::ptrdiff_t yStride) {
    const std::int64_t row = std::int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
    if (row >= n) return;
    const int lane = threadIdx.x % kWarp;
    const std::uint8_t* wr = w + row * rowBytes;
    float acc[kM] = {};
    if constexpr (kVec) {
        for (std::int64_t j = std::int64_t(lane) * 8; j < k; j += kWarp * 8) {
            float v[8];
            load8<kType>(wr, j, v);
#pragma unroll
            for (int i = 0; i < kM; ++i) {
                if (i >= m) break;
                const auto* xp = reinterpret_cast<const float4*>(x + i * xStride + j);
                const float4 a = xp[0], b = xp[1];
                acc[i] += v[0] * a.x + v[1] * a.y + v[2] * a.z + v[3] * a.w + v[4] * b.x +
                          v[5] * b.y + v[6] * b.z + v[7] * b.w;
            }
        }
    } else {
        for (std::int64_t j = lane; j < k; j += kWarp) {
            const float v = floatAt<kType>(wr, j);
#pragma unroll
            for (int i = 0; i < kM; ++i)
                if (i < m) acc[i] += v * x[i * xStride + j];
        }
    }
#pragma unroll
    for (int i = 0; i < kM; ++i) {
        const float sum = warpSum(acc[i]);
        if (lane == 0 && i < m) y[i * yStride + row] = sum;
    }
}

// ---- dispatch -------------------------------------------------------------------------------

// Calls f(std::integral_constant<int, kM>{}) with the smallest kM in {1, 2, 4, 8} >= m: four
// instantiations per type instead of eight, the loops over i < m skip the rest.
template <class F>
cudaError_t withRowCount(std::int64_t m, F&& f) {
    if (m <= 1) return f(std::integral_constant<int, 1>{});
    if (m <= 2) return f(std::integral_constant<int, 2>{});
    if (m <= 4) return f(std::integral_constant<int, 4>{});
    return f(std::integral_constant<int, 8>{});
}

bool aligned(const void* p, std::uintptr_t bytes) {
    return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// f32 rows are read 4 bytes at a time, everything else in 16-bit halves.
std::uintptr_t weightAlignment(TensorType type) {
    return type == TensorType::F32 ? 4 : 2;
}

unsigned gridFor(std::int64_t rows) {
    return unsigned(std::min<std::int64_t>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock, INT_MAX));
}

cudaError_t quantizeActivations(const float* x, std::ptrdiff_t xStride, std::int64_t m,
                                std::int64_t k, BlockQ8Act* act, cudaStream_t stream) {
    constexpr int kThreads = 256;
    const std::int64_t units = m * (k / kUnit);
    const unsigned grid = unsigned(
        std::min<std::int64_t>((units + kThreads / kWarp - 1) / (kThreads / kWarp), 65535));
    quantizeActivationsKernel<<<grid, kThreads, 0, stream>>>(x, xStride, m, k / kUnit, act);
    return cudaGetLastError();
}

}  // namespace

bool decodeSupports(TensorType weightType) {
    return withDeviceType(weightType, [](auto) { return cudaSuccess; }) == cudaSuccess;
}

std::int64_t decodeScratchBytes(TensorType weightType, std::int64_t m, std::int64_t k) {
    if (isFloatType(weightType)) return 0;
    return m * (k / kUnit) * std::int64_t(sizeof(BlockQ8Act));
}

cudaError_t matmulDecode(TensorType weightType, const void* w, std::int64_t n, std::int64_t k,
                         const float* x, std::ptrdiff_t xStride, std::int64_t m, float* y,
                         std::ptrdiff_t yStride, void* scratch, cudaStream_t stream) {
    if (!decodeSupports(weightType) || m < 1 || m > kMaxDecodeRows || n < 0 || k < 0)
        return cudaErrorInvalidValue;
    const TensorTypeInfo& info = tensorTypeInfo(weightType);
    if (k % info.blockElements != 0 || (!isFloatType(weightType) && k % kUnit != 0))
        return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    if (y == nullptr || (m > 1 && yStride < n)) return cudaErrorInvalidValue;
    if (k == 0)  // empty sums
        return cudaMemset2DAsync(y, std::size_t(yStride) * sizeof(float), 0,
                                 std::size_t(n) * sizeof(float), std::size_t(m), stream);
    if (w == nullptr || x == nullptr || !aligned(w, weightAlignment(weightType)) ||
        (m > 1 && xStride < k))
        return cudaErrorInvalidValue;
    const std::int64_t rowBytes = k / info.blockElements * info.blockBytes;
    const unsigned grid = gridFor(n);
    const int rows = int(m);

    if (isFloatType(weightType)) {
        const bool vec = k % 8 == 0 && rowBytes % 16 == 0 && xStride % 4 == 0 && aligned(w, 16) &&
                         aligned(x, 16);
        return withDeviceType(weightType, [&](auto type) {
            constexpr TensorType kType = decltype(type)::value;
            if constexpr (!isFloatType(kType)) {
                return cudaErrorInvalidValue;
            } else {
                return withRowCount(m, [&](auto count) {
                    constexpr int kM = decltype(count)::value;
                    const auto* wb = static_cast<const std::uint8_t*>(w);
                    if (vec) {
                        floatDecodeKernel<kType, kM, true>
                            <<<grid, kWarp * kWarpsPerBlock, 0, stream>>>(
                                wb, rowBytes, n, k, x, xStride, rows, y, yStride);
                    } else {
                        floatDecodeKernel<kType, kM, false>
                            <<<grid, kWarp * kWarpsPerBlock, 0, stream>>>(
                                wb, rowBytes, n, k, x, xStride, rows, y, yStride);
                    }
                    return cudaGetLastError();
                });
            }
        });
    }

    if (scratch == nullptr || !aligned(scratch, 4)) return cudaErrorInvalidValue;
    auto* act = static_cast<BlockQ8Act*>(scratch);
    if (const cudaError_t err = quantizeActivations(x, xStride, m, k, act, stream);
        err != cudaSuccess)
        return err;
    return withDeviceType(weightType, [&](auto type) {
        constexpr TensorType kType = decltype(type)::value;
        if constexpr (isFloatType(kType)) {
            return cudaErrorInvalidValue;
        } else {
            return withRowCount(m, [&](auto count) {
                constexpr int kM = decltype(count)::value;
                quantDecodeKernel<kType, kM><<<grid, kWarp * kWarpsPerBlock, 0, stream>>>(
                    static_cast<const std::uint8_t*>(w), rowBytes, n, k / kUnit, act, rows, y,
                    yStride);
                return cudaGetLastError();
            });
        }
    });
}

}  // namespace iris::kernels::cuda

namespace iris::kernels::cuda {

cudaError_t matmulDecodeGrouped(TensorType weightType, const void* stack, std::int64_t experts,
                                std::int64_t n, std::int64_t k, const float* x,
                                std::ptrdiff_t xStride, std::int64_t rows,
                                const std::int32_t* expertIds, int perRow, float* y,
                                std::ptrdiff_t yStride, void* scratch, cudaStream_t stream) {
    const std::int64_t pairs = rows * perRow;
    if (!decodeSupports(weightType) || rows < 0 || perRow < 1 || n < 0 || k < 0 || experts < 0 ||
        pairs > 65535)
        return cudaErrorInvalidValue;
    const TensorTypeInfo& info = tensorTypeInfo(weightType);
    if (k % info.blockElements != 0 || (!isFloatType(weightType) && k % kUnit != 0))
        return cudaErrorInvalidValue;
    if (pairs == 0 || n == 0) return cudaSuccess;
    if (stack == nullptr || x == nullptr || expertIds == nullptr || y == nullptr || yStride < n ||
        (rows > 1 && xStride < k) || !aligned(stack, weightAlignment(weightType)))
        return cudaErrorInvalidValue;
    auto* act = static_cast<BlockQ8Act*>(scratch);
    if (!isFloatType(weightType)) {
        if (scratch == nullptr || !aligned(scratch, 4)) return cudaErrorInvalidValue;
        if (const cudaError_t err = quantizeActivations(x, xStride, rows, k, act, stream);
            err != cudaSuccess)
            return err;
    }
    const std::int64_t rowBytes = k / info.blockElements * info.blockBytes;
    const dim3 grid(gridFor(n), unsigned(pairs));
    return withDeviceType(weightType, [&](auto type) {
        groupedDecodeKernel<decltype(type)::value><<<grid, kWarp * kWarpsPerBlock, 0, stream>>>(
            static_cast<const std::uint8_t*>(stack), experts, rowBytes, n, k, x, xStride, act,
            expertIds, perRow, y, yStride);
        return cudaGetLastError();
    });
}

}  // namespace iris::kernels::cuda
