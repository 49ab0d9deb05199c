#include <algorithm>
#include <climits>
#include <type_traits>

#include <cuda_fp16.h>

#include "kernels/cpu/quant_blocks.h"
#include "kernels/cuda/matmul_decode.cuh"

namespace iris::kernels::cuda {
namespace {

using cpu::BlockQ8Act;

constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = 4;  // output rows per thread block
constexpr int kUnit = 32;          // values per activation block and per weight unit

__device__ float warpSum(float v) {
    for (int offset = kWarp / 2; offset > 0; offset /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__device__ int warpSumInt(int v) {
    for (int offset = kWarp / 2; offset > 0; offset /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__device__ float warpMax(float v) {
    for (int offset = kWarp / 2; offset > 0; offset /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

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
        const int sum = warpSumInt(q);
        act[b].qs[lane] = static_cast<std::int8_t>(q);
        if (lane == 0) {
            act[b].d = d;
            act[b].dsum = d * float(sum);
        }
    }
}

// ---- quantised weights, 32 values at a time ---------------------------------------------------

// 32 consecutive weights ready for __dp4a: q[j] holds values 4j..4j+3 as signed bytes, and
// weight v is scaleLo * q_v + offset for v < 16, scaleHi * q_v + offset for v >= 16 (q6_K has a
// scale per 16 values; every other type one per 32).
struct Unit32 {
    int q[8];
    float scaleLo;
    float scaleHi;
    float offset;
};

// Blocks are 2-byte aligned (every block size is even and rows start 2-byte aligned), so wider
// values are read as 16-bit halves.
__device__ float halfAt(const std::uint8_t* p) {
    return __half2float(__ushort_as_half(*reinterpret_cast<const unsigned short*>(p)));
}

__device__ std::uint32_t load32(const std::uint8_t* p) {
    const auto* h = reinterpret_cast<const unsigned short*>(p);
    return std::uint32_t(h[0]) | (std::uint32_t(h[1]) << 16);
}

// Bit i of `bits` (i < 4) moved to bit 4 of byte i: the fifth bit of four q5 values.
__device__ std::uint32_t fifthBits(std::uint32_t bits) {
    return ((bits & 1u) << 4) | ((bits & 2u) << 11) | ((bits & 4u) << 18) | ((bits & 8u) << 25);
}

// Scale and minimum of sub-block s of a q4_K/q5_K super-block (6-bit fields in 12 bytes).
__device__ void scaleMinK4(int s, const std::uint8_t* q, int& scale, int& min) {
    if (s < 4) {
        scale = q[s] & 63;
        min = q[s + 4] & 63;
    } else {
        scale = (q[s + 4] & 0xF) | ((q[s - 4] >> 6) << 4);
        min = (q[s + 4] >> 4) | ((q[s] >> 6) << 4);
    }
}

// Low nibbles (values 0..15) and high nibbles (16..31) of a legacy block's 16 bytes, plus the
// fifth bits of the q5 types, minus `bias` in every byte.
__device__ void legacyNibbles(const std::uint8_t* qs, std::uint32_t qh, std::uint32_t bias,
                              Unit32& unit) {
    for (int j = 0; j < 4; ++j) {
        const std::uint32_t w = load32(qs + 4 * j);
        const std::uint32_t lo = (w & 0x0F0F0F0Fu) | fifthBits((qh >> (4 * j)) & 0xFu);
        const std::uint32_t hi = ((w >> 4) & 0x0F0F0F0Fu) | fifthBits((qh >> (16 + 4 * j)) & 0xFu);
        unit.q[j] = int(__vsub4(lo, bias));
        unit.q[j + 4] = int(__vsub4(hi, bias));
    }
}

// The weights of 32-value unit u of a row of type kType, in the layouts of quant_blocks.h.
template <TensorType kType>
__device__ Unit32 loadUnit(const std::uint8_t* row, std::int64_t u) {
    Unit32 unit{};
    if constexpr (kType == TensorType::Q4_0 || kType == TensorType::Q4_1 ||
                  kType == TensorType::Q5_0 || kType == TensorType::Q5_1) {
        constexpr bool kHasMin = kType == TensorType::Q4_1 || kType == TensorType::Q5_1;
        constexpr bool kFive = kType == TensorType::Q5_0 || kType == TensorType::Q5_1;
        constexpr int kHeader = (kHasMin ? 4 : 2) + (kFive ? 4 : 0);
        const std::uint8_t* b = row + u * (kHeader + 16);
        const std::uint32_t qh = kFive ? load32(b + (kHasMin ? 4 : 2)) : 0u;
        // Without a minimum the stored value is biased by 8 (q4) or 16 (q5).
        const std::uint32_t bias = kHasMin ? 0u : (kFive ? 0x10101010u : 0x08080808u);
        legacyNibbles(b + kHeader, qh, bias, unit);
        unit.scaleLo = unit.scaleHi = halfAt(b);
        unit.offset = kHasMin ? halfAt(b + 2) : 0.0f;
    } else if constexpr (kType == TensorType::Q8_0) {
        const std::uint8_t* b = row + u * 34;
        for (int j = 0; j < 8; ++j)
            unit.q[j] = int(load32(b + 2 + 4 * j));
        unit.scaleLo = unit.scaleHi = halfAt(b);
    } else if constexpr (kType == TensorType::Q4_K || kType == TensorType::Q5_K) {
        constexpr bool kFive = kType == TensorType::Q5_K;
        const int s = int(u % 8);  // sub-block of the 256-value super-block
        const std::uint8_t* b = row + (u / 8) * (kFive ? 176 : 144);
        // Sub-blocks 2i and 2i+1 are the low and high nibbles of the same 32 bytes.
        const std::uint8_t* qs = b + (kFive ? 48 : 16) + 32 * (s / 2);
        const int shift = (s % 2) * 4;
        for (int j = 0; j < 8; ++j) {
            std::uint32_t q = (load32(qs + 4 * j) >> shift) & 0x0F0F0F0Fu;
            if constexpr (kFive) q |= ((load32(b + 16 + 4 * j) >> s) & 0x01010101u) << 4;
            unit.q[j] = int(q);
        }
        int scale = 0, min = 0;
        scaleMinK4(s, b + 4, scale, min);
        unit.scaleLo = unit.scaleHi = halfAt(b) * float(scale);
        unit.offset = -halfAt(b + 2) * float(min);
    } else if constexpr (kType == TensorType::Q6_K) {
        const int s = int(u % 8);
        const int half = s / 4, quarter = s % 4;
        const std::uint8_t* b = row + (u / 8) * 210;
        // Quarter t of a 128-value half: low 4 bits in the low (t < 2) or high nibbles of
        // ql[32 (t % 2) ...], high 2 bits at bit 2t of qh, scales 2t and 2t+1 of the half.
        const std::uint8_t* ql = b + 64 * half + 32 * (quarter % 2);
        const std::uint8_t* qh = b + 128 + 32 * half;
        const auto* scales = reinterpret_cast<const std::int8_t*>(b + 192) + 8 * half + 2 * quarter;
        for (int j = 0; j < 8; ++j) {
            const std::uint32_t lo = (load32(ql + 4 * j) >> (quarter >= 2 ? 4 : 0)) & 0x0F0F0F0Fu;
            const std::uint32_t hi = ((load32(qh + 4 * j) >> (2 * quarter)) & 0x03030303u) << 4;
            unit.q[j] = int(__vsub4(lo | hi, 0x20202020u));
        }
        const float d = halfAt(b + 208);
        unit.scaleLo = d * float(scales[0]);
        unit.scaleHi = d * float(scales[1]);
    }
    return unit;
}

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
            const BlockQ8Act& a = act[i * units + u];
            const int* aq = reinterpret_cast<const int*>(a.qs);
            int lo = 0, hi = 0;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                lo = __dp4a(unit.q[j], aq[j], lo);
                hi = __dp4a(unit.q[j + 4], aq[j + 4], hi);
            }
            acc[i] += a.d * (unit.scaleLo * float(lo) + unit.scaleHi * float(hi)) +
                      unit.offset * a.dsum;
        }
    }
#pragma unroll
    for (int i = 0; i < kM; ++i) {
        const float sum = warpSum(acc[i]);  // every lane takes part, also for i >= m
        if (lane == 0 && i < m) y[i * yStride + row] = sum;
    }
}

// ---- float weights --------------------------------------------------------------------------

template <TensorType kType>
__device__ float floatAt(const std::uint8_t* row, std::int64_t j) {
    if constexpr (kType == TensorType::F32) return reinterpret_cast<const float*>(row)[j];
    const unsigned short h = reinterpret_cast<const unsigned short*>(row)[j];
    if constexpr (kType == TensorType::F16) return __half2float(__ushort_as_half(h));
    return __uint_as_float(std::uint32_t(h) << 16);  // bf16
}

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

template <TensorType kType>
using TypeTag = std::integral_constant<TensorType, kType>;

// Calls f(TypeTag<type>{}) for a supported type; cudaErrorInvalidValue for any other.
template <class F>
cudaError_t withType(TensorType type, F&& f) {
    switch (type) {
        case TensorType::F32: return f(TypeTag<TensorType::F32>{});
        case TensorType::F16: return f(TypeTag<TensorType::F16>{});
        case TensorType::BF16: return f(TypeTag<TensorType::BF16>{});
        case TensorType::Q4_0: return f(TypeTag<TensorType::Q4_0>{});
        case TensorType::Q4_1: return f(TypeTag<TensorType::Q4_1>{});
        case TensorType::Q5_0: return f(TypeTag<TensorType::Q5_0>{});
        case TensorType::Q5_1: return f(TypeTag<TensorType::Q5_1>{});
        case TensorType::Q8_0: return f(TypeTag<TensorType::Q8_0>{});
        case TensorType::Q4_K: return f(TypeTag<TensorType::Q4_K>{});
        case TensorType::Q5_K: return f(TypeTag<TensorType::Q5_K>{});
        case TensorType::Q6_K: return f(TypeTag<TensorType::Q6_K>{});
        default: return cudaErrorInvalidValue;
    }
}

// Calls f(std::integral_constant<int, kM>{}) with the smallest kM in {1, 2, 4, 8} >= m: four
// instantiations per type instead of eight, the loops over i < m skip the rest.
template <class F>
cudaError_t withRowCount(std::int64_t m, F&& f) {
    if (m <= 1) return f(std::integral_constant<int, 1>{});
    if (m <= 2) return f(std::integral_constant<int, 2>{});
    if (m <= 4) return f(std::integral_constant<int, 4>{});
    return f(std::integral_constant<int, 8>{});
}

constexpr bool isFloat(TensorType type) {
    return type == TensorType::F32 || type == TensorType::F16 || type == TensorType::BF16;
}

bool aligned(const void* p, std::uintptr_t bytes) {
    return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

unsigned gridFor(std::int64_t rows) {
    return unsigned(std::min<std::int64_t>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock, INT_MAX));
}

cudaError_t quantizeActivations(const float* x, std::ptrdiff_t xStride, std::int64_t m,
                                std::int64_t k, BlockQ8Act* act, cudaStream_t stream) {
    constexpr int kThreads = 256;
    const std::int64_t units = m * (k / kUnit);
    const unsigned grid =
        unsigned(std::min<std::int64_t>((units + kThreads / kWarp - 1) / (kThreads / kWarp), 65535));
    quantizeActivationsKernel<<<grid, kThreads, 0, stream>>>(x, xStride, m, k / kUnit, act);
    return cudaGetLastError();
}

}  // namespace

bool decodeSupports(TensorType weightType) {
    return withType(weightType, [](auto) { return cudaSuccess; }) == cudaSuccess;
}

std::int64_t decodeScratchBytes(TensorType weightType, std::int64_t m, std::int64_t k) {
    if (isFloat(weightType)) return 0;
    return m * (k / kUnit) * std::int64_t(sizeof(BlockQ8Act));
}

cudaError_t matmulDecode(TensorType weightType, const void* w, std::int64_t n, std::int64_t k,
                         const float* x, std::ptrdiff_t xStride, std::int64_t m, float* y,
                         std::ptrdiff_t yStride, void* scratch, cudaStream_t stream) {
    if (!decodeSupports(weightType) || m < 1 || m > kMaxDecodeRows || n < 0 || k < 0)
        return cudaErrorInvalidValue;
    const TensorTypeInfo& info = tensorTypeInfo(weightType);
    if (k % info.blockElements != 0 || (!isFloat(weightType) && k % kUnit != 0))
        return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    if (y == nullptr || (m > 1 && yStride < n)) return cudaErrorInvalidValue;
    if (k == 0)  // empty sums
        return cudaMemset2DAsync(y, std::size_t(yStride) * sizeof(float), 0,
                                 std::size_t(n) * sizeof(float), std::size_t(m), stream);
    if (w == nullptr || x == nullptr || !aligned(w, 2)) return cudaErrorInvalidValue;
    const std::int64_t rowBytes = k / info.blockElements * info.blockBytes;
    const unsigned grid = gridFor(n);
    const int rows = int(m);

    if (isFloat(weightType)) {
        const bool vec = k % 8 == 0 && rowBytes % 16 == 0 && xStride % 4 == 0 && aligned(w, 16) &&
                         aligned(x, 16);
        return withType(weightType, [&](auto type) {
            constexpr TensorType kType = decltype(type)::value;
            if constexpr (!isFloat(kType)) {
                return cudaErrorInvalidValue;
            } else {
                return withRowCount(m, [&](auto count) {
                    constexpr int kM = decltype(count)::value;
                    const auto* wb = static_cast<const std::uint8_t*>(w);
                    if (vec) {
                        floatDecodeKernel<kType, kM, true><<<grid, kWarp * kWarpsPerBlock, 0,
                                                             stream>>>(wb, rowBytes, n, k, x,
                                                                       xStride, rows, y, yStride);
                    } else {
                        floatDecodeKernel<kType, kM, false><<<grid, kWarp * kWarpsPerBlock, 0,
                                                              stream>>>(wb, rowBytes, n, k, x,
                                                                        xStride, rows, y, yStride);
                    }
                    return cudaGetLastError();
                });
            }
        });
    }

    if (scratch == nullptr || !aligned(scratch, 4)) return cudaErrorInvalidValue;
    auto* act = static_cast<BlockQ8Act*>(scratch);
    if (const cudaError_t err = quantizeActivations(x, xStride, m, k, act, stream); err != cudaSuccess)
        return err;
    return withType(weightType, [&](auto type) {
        constexpr TensorType kType = decltype(type)::value;
        if constexpr (isFloat(kType)) {
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
