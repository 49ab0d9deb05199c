// Packed weights (layout in kernels/matmul.h): packing q8_0, q5_0 and q4_0 rows into 16-row
// groups of unsigned bytes, and the scalar reference of the product on that layout.
#include <cstring>
#include <type_traits>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu_features.h"
#include "kernels/fp16.h"
#include "kernels/matmul.h"

namespace iris::kernels {
namespace {

// The value a stored 0 stands for: w = d * (stored - offset).
float packedOffset(TensorType type) {
    switch (type) {
        case TensorType::Q8_0:
            return 128.0f;
        case TensorType::Q5_0:
            return 16.0f;
        case TensorType::Q4_0:
            return 8.0f;
        default:
            return 0.0f;
    }
}

// Block b of a row as 32 unsigned values (w = d * (stored - offset)) and its scale.
template <class Block>
float unpackBlock(const void* row, std::int64_t b, std::uint8_t values[32]) {
    const Block& block = static_cast<const Block*>(row)[b];
    for (int j = 0; j < 32; ++j) {
        if constexpr (std::is_same_v<Block, cpu::BlockQ8_0>) {
            values[j] = std::uint8_t(block.qs[j] + 128);
        } else {
            values[j] = std::uint8_t(cpu::storedValue(block, j));
        }
    }
    return fp16ToFp32(block.d);
}

float unpackBlock(TensorType type, const void* row, std::int64_t b, std::uint8_t values[32]) {
    switch (type) {
        case TensorType::Q8_0:
            return unpackBlock<cpu::BlockQ8_0>(row, b, values);
        case TensorType::Q5_0:
            return unpackBlock<cpu::BlockQ5_0>(row, b, values);
        default:
            return unpackBlock<cpu::BlockQ4_0>(row, b, values);
    }
}

}  // namespace

namespace cpu {

void matmulPackedScalar(const void* packed, float offset, std::int64_t k, const void* prepared,
                        std::int64_t m, float* y, std::ptrdiff_t yStride, std::int64_t nBegin,
                        std::int64_t nEnd) {
    const std::int64_t blocks = k / kQK;
    const auto* groups = static_cast<const std::uint8_t*>(packed);
    const auto* x = static_cast<const BlockQ8Act*>(prepared);
    for (std::int64_t n0 = nBegin; n0 < nEnd; n0 += kPackRows) {
        const std::uint8_t* group = groups + (n0 / kPackRows) * blocks * kPackedBlockBytes;
        for (std::int64_t i = 0; i < m; ++i) {
            const BlockQ8Act* xr = x + i * blocks;
            float sum[kPackRows] = {};
            for (std::int64_t b = 0; b < blocks; ++b) {
                const std::uint8_t* block = group + b * kPackedBlockBytes;
                float d[kPackRows];
                std::memcpy(d, block, sizeof d);
                const std::uint8_t* qs = block + sizeof d;
                for (int r = 0; r < kPackRows; ++r) {
                    int dot = 0;  // sum of stored * x; the offset * sum(x) part is taken out below
                    for (int j = 0; j < 32; ++j)
                        dot += int(qs[(j / 4) * kPackRows * 4 + r * 4 + j % 4]) * xr[b].qs[j];
                    sum[r] += d[r] * (xr[b].d * float(dot) - offset * xr[b].dsum);
                }
            }
            for (std::int64_t r = 0; r < kPackRows && n0 + r < nEnd; ++r)
                y[i * yStride + n0 + r] = sum[r];
        }
    }
}

}  // namespace cpu

std::int64_t packedBytes(TensorType weightType, std::int64_t n, std::int64_t k) {
    if (packedOffset(weightType) == 0.0f || activeIsa() < CpuIsa::Avx512) return 0;
    return (n + cpu::kPackRows - 1) / cpu::kPackRows * (k / cpu::kQK) * cpu::kPackedBlockBytes;
}

void packWeights(TensorType weightType, const void* w, std::int64_t n, std::int64_t k,
                 void* packed) {
    const std::int64_t blocks = k / cpu::kQK;
    const std::int64_t rowBytes = kernels::rowBytes(weightType, k);
    const auto* rows = static_cast<const std::uint8_t*>(w);
    const auto zero = std::uint8_t(packedOffset(weightType));  // padding rows: value 0, scale 0
    auto* out = static_cast<std::uint8_t*>(packed);
    for (std::int64_t n0 = 0; n0 < n; n0 += cpu::kPackRows) {
        for (std::int64_t b = 0; b < blocks; ++b, out += cpu::kPackedBlockBytes) {
            float d[cpu::kPackRows] = {};
            std::uint8_t* qs = out + sizeof d;
            for (int r = 0; r < cpu::kPackRows; ++r) {
                std::uint8_t values[32];
                if (n0 + r < n) {
                    d[r] = unpackBlock(weightType, rows + (n0 + r) * rowBytes, b, values);
                } else {
                    std::memset(values, zero, sizeof values);
                }
                for (int j = 0; j < 32; ++j)
                    qs[(j / 4) * cpu::kPackRows * 4 + r * 4 + j % 4] = values[j];
            }
            std::memcpy(out, d, sizeof d);
        }
    }
}

void matmulPacked(TensorType weightType, const void* packed, std::int64_t k, const void* prepared,
                  std::int64_t m, float* y, std::ptrdiff_t yStride, std::int64_t nBegin,
                  std::int64_t nEnd) {
#if defined(IRIS_KERNELS_X86)
    cpu::matmulPackedAvx512(packed, packedOffset(weightType), k, prepared, m, y, yStride, nBegin,
                            nEnd);
#else
    cpu::matmulPackedScalar(packed, packedOffset(weightType), k, prepared, m, y, yStride, nBegin,
                            nEnd);
#endif
}

}  // namespace iris::kernels
