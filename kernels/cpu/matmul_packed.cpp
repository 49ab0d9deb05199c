// Packed q8_0 weights (layout in kernels/matmul.h): packing, and the scalar reference of the
// product on that layout.
#include <cstring>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu_features.h"
#include "kernels/fp16.h"
#include "kernels/matmul.h"

namespace iris::kernels {
namespace cpu {

void matmulPackedQ8_0Scalar(const void* packed, std::int64_t k, const void* prepared,
                            std::int64_t m, float* y, std::ptrdiff_t yStride, std::int64_t nBegin,
                            std::int64_t nEnd) {
    const std::int64_t blocks = k / kQK;
    const auto* groups = static_cast<const std::uint8_t*>(packed);
    const auto* x = static_cast<const BlockQ8Act*>(prepared);
    for (std::int64_t n0 = nBegin; n0 < nEnd; n0 += kPackRows) {
        const std::uint8_t* group = groups + (n0 / kPackRows) * blocks * kPackedQ8_0BlockBytes;
        for (std::int64_t i = 0; i < m; ++i) {
            const BlockQ8Act* xr = x + i * blocks;
            float sum[kPackRows] = {};
            for (std::int64_t b = 0; b < blocks; ++b) {
                const std::uint8_t* block = group + b * kPackedQ8_0BlockBytes;
                float d[kPackRows];
                std::memcpy(d, block, sizeof d);
                const std::uint8_t* qs = block + sizeof d;
                for (int r = 0; r < kPackRows; ++r) {
                    int dot = 0;  // sum of (w + 128) * x; the 128 * sum(x) part is taken out below
                    for (int j = 0; j < 32; ++j)
                        dot += int(qs[(j / 4) * kPackRows * 4 + r * 4 + j % 4]) * xr[b].qs[j];
                    sum[r] += d[r] * (xr[b].d * float(dot) - 128.0f * xr[b].dsum);
                }
            }
            for (std::int64_t r = 0; r < kPackRows && n0 + r < nEnd; ++r)
                y[i * yStride + n0 + r] = sum[r];
        }
    }
}

}  // namespace cpu

std::int64_t packedBytes(TensorType weightType, std::int64_t n, std::int64_t k) {
    if (weightType != TensorType::Q8_0 || activeIsa() < CpuIsa::Avx512) return 0;
    return (n + cpu::kPackRows - 1) / cpu::kPackRows * (k / cpu::kQK) * cpu::kPackedQ8_0BlockBytes;
}

void packWeights(TensorType weightType, const void* w, std::int64_t n, std::int64_t k,
                 void* packed) {
    (void)weightType;  // q8_0, the only packed type
    const std::int64_t blocks = k / cpu::kQK;
    const auto* rows = static_cast<const cpu::BlockQ8_0*>(w);
    auto* out = static_cast<std::uint8_t*>(packed);
    for (std::int64_t n0 = 0; n0 < n; n0 += cpu::kPackRows) {
        for (std::int64_t b = 0; b < blocks; ++b, out += cpu::kPackedQ8_0BlockBytes) {
            float d[cpu::kPackRows] = {};
            std::uint8_t* qs = out + sizeof d;
            for (int r = 0; r < cpu::kPackRows; ++r) {
                const bool real = n0 + r < n;  // padding rows: scale 0, bytes 128 (value 0)
                const cpu::BlockQ8_0* block = real ? &rows[(n0 + r) * blocks + b] : nullptr;
                d[r] = real ? fp16ToFp32(block->d) : 0.0f;
                for (int j = 0; j < 32; ++j) {
                    qs[(j / 4) * cpu::kPackRows * 4 + r * 4 + j % 4] =
                        std::uint8_t((real ? int(block->qs[j]) : 0) + 128);
                }
            }
            std::memcpy(out, d, sizeof d);
        }
    }
}

void matmulPacked(TensorType weightType, const void* packed, std::int64_t k, const void* prepared,
                  std::int64_t m, float* y, std::ptrdiff_t yStride, std::int64_t nBegin,
                  std::int64_t nEnd) {
    (void)weightType;
#if defined(IRIS_KERNELS_X86)
    cpu::matmulPackedQ8_0Avx512(packed, k, prepared, m, y, yStride, nBegin, nEnd);
#else
    cpu::matmulPackedQ8_0Scalar(packed, k, prepared, m, y, yStride, nBegin, nEnd);
#endif
}

}  // namespace iris::kernels
