// Packed weights (layouts in kernels/matmul.h and kernels/cpu/matmul.h): packing q8_0, q5_0 and
// q4_0 rows into 16-row groups of unsigned bytes and q4_K, q5_K and q6_K rows into 16-row groups
// with unpacked sub-block scales, and the scalar references of the products on those layouts.
#include <cstring>
#include <type_traits>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu_features.h"
#include "kernels/fp16.h"
#include "kernels/matmul.h"

namespace iris::kernels {
namespace {

// Block b of a row as 32 unsigned values (w = d * (stored - offset)); returns the scale's f16
// bits.
template <class Block>
std::uint16_t unpackBlock(const void* row, std::int64_t b, std::uint8_t values[32]) {
    const Block& block = static_cast<const Block*>(row)[b];
    for (int j = 0; j < 32; ++j) {
        if constexpr (std::is_same_v<Block, cpu::BlockQ8_0>) {
            values[j] = std::uint8_t(block.qs[j] + 128);
        } else {
            values[j] = std::uint8_t(cpu::storedValue(block, j));
        }
    }
    return block.d;
}

std::uint16_t unpackBlock(TensorType type, const void* row, std::int64_t b,
                          std::uint8_t values[32]) {
    switch (type) {
        case TensorType::Q8_0:
            return unpackBlock<cpu::BlockQ8_0>(row, b, values);
        case TensorType::Q5_0:
            return unpackBlock<cpu::BlockQ5_0>(row, b, values);
        default:
            return unpackBlock<cpu::BlockQ4_0>(row, b, values);
    }
}

bool isPackedK(TensorType type) {
    return type == TensorType::Q4_K || type == TensorType::Q5_K || type == TensorType::Q6_K;
}

// Byte of value j (0..31 of a run of 32) of row r in the 4 x 64 nibble bytes of a run, and the
// shift of its nibble.
constexpr int nibbleByte(int r, int j) {
    return (j / 4 % 4) * 64 + 4 * r + j % 4;
}
constexpr int nibbleShift(int j) {
    return j / 16 * 4;
}

// Writes value j (0..31) of row r into a packed q8_0, q5_0 or q4_0 block's values (kernels/cpu/
// matmul.h), which start zeroed.
void storePacked(TensorType type, std::uint8_t* values, int r, int j, std::uint8_t value) {
    const int t = j / 4, lane = 4 * r + j % 4;
    if (type == TensorType::Q8_0) {
        values[64 * t + lane] = value;
        return;
    }
    values[nibbleByte(r, j)] |= std::uint8_t((value & 0xF) << nibbleShift(j));
    if (type == TensorType::Q5_0) values[256 + lane] |= std::uint8_t((value >> 4) << t);
}

// The stored value j of row r of a packed q8_0, q5_0 or q4_0 block's values.
int loadPacked(TensorType type, const std::uint8_t* values, int r, int j) {
    const int t = j / 4, lane = 4 * r + j % 4;
    if (type == TensorType::Q8_0) return values[64 * t + lane];
    int q = (values[nibbleByte(r, j)] >> nibbleShift(j)) & 0xF;
    if (type == TensorType::Q5_0) q |= ((values[256 + lane] >> t) & 1) << 4;
    return q;
}

// One row's super-block i unpacked: stored values (0..31 or 0..63), scales, minimums.
struct KRow {
    float d = 0.0f, dmin = 0.0f;
    int scale[16] = {}, minimum[8] = {};
    std::uint8_t q[256] = {};
};

KRow unpackKRow(TensorType type, const void* row, std::int64_t i) {
    KRow out;
    if (type == TensorType::Q6_K) {
        const cpu::BlockQ6_K& b = static_cast<const cpu::BlockQ6_K*>(row)[i];
        out.d = fp16ToFp32(b.d);
        for (int g = 0; g < 16; ++g)
            out.scale[g] = b.scales[g];
        for (int v = 0; v < 256; ++v) {
            const int half = v / 128, quarter = v % 128 / 32, l = v % 32;
            const std::uint8_t low = b.ql[64 * half + 32 * (quarter % 2) + l];
            const int nibble = (low >> (4 * (quarter / 2))) & 0xF;
            const int high = (b.qh[32 * half + l] >> (2 * quarter)) & 3;
            out.q[v] = std::uint8_t(nibble | high << 4);
        }
        return out;
    }
    // q4_K and q5_K share the scales and the nibbles; q5_K adds a bit per value.
    const bool fiveBit = type == TensorType::Q5_K;
    const std::uint8_t* scales;
    const std::uint8_t* qs;
    const std::uint8_t* qh = nullptr;
    std::uint16_t d, dmin;
    if (fiveBit) {
        const cpu::BlockQ5_K& b = static_cast<const cpu::BlockQ5_K*>(row)[i];
        d = b.d, dmin = b.dmin, scales = b.scales, qs = b.qs, qh = b.qh;
    } else {
        const cpu::BlockQ4_K& b = static_cast<const cpu::BlockQ4_K*>(row)[i];
        d = b.d, dmin = b.dmin, scales = b.scales, qs = b.qs;
    }
    out.d = fp16ToFp32(d);
    out.dmin = fp16ToFp32(dmin);
    for (int s = 0; s < 8; ++s) {
        cpu::scaleMinK4(s, scales, out.scale[s], out.minimum[s]);
        for (int l = 0; l < 32; ++l) {
            int q = (qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0xF;
            if (fiveBit) q |= ((qh[l] >> s) & 1) << 4;
            out.q[32 * s + l] = std::uint8_t(q);
        }
    }
    return out;
}

// Writes super-block i of rows [n0, n0 + 16) (rows past n: zero) in the packed layout.
void packKSuperBlock(TensorType type, const std::uint8_t* rows, std::int64_t rowBytes,
                     std::int64_t n, std::int64_t n0, std::int64_t i, std::uint8_t* out) {
    const std::int64_t bytes = cpu::packedKSuperBlockBytes(type);
    std::memset(out, 0, std::size_t(bytes));
    const bool six = type == TensorType::Q6_K;
    const std::int64_t sub = cpu::packedKSubBlockBytes(type);
    std::uint8_t* values = out + (six ? cpu::kPackedQ6KValuesOffset : cpu::kPackedKValuesOffset);
    for (int r = 0; r < cpu::kPackRows && n0 + r < n; ++r) {
        const KRow row = unpackKRow(type, rows + (n0 + r) * rowBytes, i);
        std::memcpy(out + 4 * r, &row.d, 4);
        if (six) {
            for (int g = 0; g < 16; ++g)
                out[cpu::kPackedQ6KScalesOffset + 16 * g + r] = std::uint8_t(row.scale[g]);
        } else {
            std::memcpy(out + 64 + 4 * r, &row.dmin, 4);
            for (int s = 0; s < 8; ++s) {
                out[cpu::kPackedKScalesOffset + 16 * s + r] = std::uint8_t(row.scale[s]);
                out[cpu::kPackedKMinsOffset + 16 * s + r] = std::uint8_t(row.minimum[s]);
            }
        }
        for (int c = 0; c < 8; ++c) {
            std::uint8_t* run = values + c * sub;
            for (int j = 0; j < 32; ++j) {
                const int q = row.q[32 * c + j];
                run[nibbleByte(r, j)] |= std::uint8_t((q & 0xF) << nibbleShift(j));
                const int t = j / 4, lane = 4 * r + j % 4;
                if (type == TensorType::Q5_K) {
                    run[256 + lane] |= std::uint8_t((q >> 4) << t);
                } else if (six) {
                    run[256 + 64 * (t / 4) + lane] |= std::uint8_t((q >> 4) << (2 * (t % 4)));
                }
            }
        }
    }
}

}  // namespace

namespace cpu {

void matmulPackedKScalar(TensorType weightType, const void* packed, std::int64_t k,
                         const void* prepared, std::int64_t m, float* y, std::ptrdiff_t yStride,
                         std::int64_t nBegin, std::int64_t nEnd) {
    const std::int64_t superBlocks = k / kQKK, bytes = packedKSuperBlockBytes(weightType);
    const std::int64_t sub = packedKSubBlockBytes(weightType);
    const bool six = weightType == TensorType::Q6_K;
    const auto* groups = static_cast<const std::uint8_t*>(packed);
    const auto* x = static_cast<const BlockQ8K*>(prepared);
    // The stored value of value j (0..31) of row r in one run of 32 values.
    const auto stored = [&](const std::uint8_t* run, int r, int j) {
        int q = (run[nibbleByte(r, j)] >> nibbleShift(j)) & 0xF;
        const int t = j / 4, lane = 4 * r + j % 4;
        if (weightType == TensorType::Q5_K) q |= ((run[256 + lane] >> t) & 1) << 4;
        if (six) q |= ((run[256 + 64 * (t / 4) + lane] >> (2 * (t % 4))) & 3) << 4;
        return q;
    };
    for (std::int64_t n0 = nBegin; n0 < nEnd; n0 += kPackRows) {
        const std::uint8_t* group = groups + (n0 / kPackRows) * superBlocks * bytes;
        for (std::int64_t i = 0; i < m; ++i) {
            float sum[kPackRows] = {};
            for (std::int64_t b = 0; b < superBlocks; ++b) {
                const std::uint8_t* block = group + b * bytes;
                const BlockQ8K& xb = x[i * superBlocks + b];
                const std::uint8_t* values =
                    block + (six ? kPackedQ6KValuesOffset : kPackedKValuesOffset);
                for (int r = 0; r < kPackRows; ++r) {
                    float d, dmin = 0.0f;
                    std::memcpy(&d, block + 4 * r, 4);
                    if (!six) std::memcpy(&dmin, block + 64 + 4 * r, 4);
                    std::int64_t dot = 0, mins = 0;  // in units of d * dx and dmin * dx
                    for (int c = 0; c < 8; ++c) {
                        for (int half = 0; half < 2; ++half) {
                            int partial = 0;  // 16 values under one q6_K scale
                            for (int j = 16 * half; j < 16 * half + 16; ++j)
                                partial += stored(values + c * sub, r, j) * xb.qs[32 * c + j];
                            if (six) {
                                const int g = 2 * c + half;
                                const int scale =
                                    std::int8_t(block[kPackedQ6KScalesOffset + 16 * g + r]);
                                dot += std::int64_t(scale) * (partial - 32 * xb.bsums[g]);
                            } else {
                                dot += std::int64_t(block[kPackedKScalesOffset + 16 * c + r]) *
                                       partial;
                                mins += std::int64_t(block[kPackedKMinsOffset + 16 * c + r]) *
                                        xb.bsums[2 * c + half];
                            }
                        }
                    }
                    sum[r] += d * xb.d * float(dot) - dmin * xb.d * float(mins);
                }
            }
            for (std::int64_t r = 0; r < kPackRows && n0 + r < nEnd; ++r)
                y[i * yStride + n0 + r] = sum[r];
        }
    }
}

void matmulPackedScalar(TensorType weightType, const void* packed, std::int64_t k,
                        const void* prepared, std::int64_t m, float* y, std::ptrdiff_t yStride,
                        std::int64_t nBegin, std::int64_t nEnd) {
    const std::int64_t blocks = k / kQK, bytes = packedBlockBytes(weightType);
    const int offset = packedOffset(weightType);
    const auto* groups = static_cast<const std::uint8_t*>(packed);
    const auto* x = static_cast<const BlockQ8Act*>(prepared);
    for (std::int64_t n0 = nBegin; n0 < nEnd; n0 += kPackRows) {
        const std::uint8_t* group = groups + (n0 / kPackRows) * blocks * bytes;
        for (std::int64_t i = 0; i < m; ++i) {
            const BlockQ8Act* xr = x + i * blocks;
            float sum[kPackRows] = {};
            for (std::int64_t b = 0; b < blocks; ++b) {
                const std::uint8_t* block = group + b * bytes;
                const std::uint8_t* values = block + 2 * kPackRows;
                for (int r = 0; r < kPackRows; ++r) {
                    std::uint16_t bits;
                    std::memcpy(&bits, block + 2 * r, 2);
                    int dot = 0;  // sum of stored * x; the offset * sum(x) part is taken out below
                    for (int j = 0; j < 32; ++j)
                        dot += loadPacked(weightType, values, r, j) * xr[b].qs[j];
                    sum[r] += fp16ToFp32(bits) * xr[b].d * float(dot - offset * xr[b].sum);
                }
            }
            for (std::int64_t r = 0; r < kPackRows && n0 + r < nEnd; ++r)
                y[i * yStride + n0 + r] = sum[r];
        }
    }
}

}  // namespace cpu

std::int64_t packedBytes(TensorType weightType, std::int64_t n, std::int64_t k) {
    const std::int64_t groups = (n + cpu::kPackRows - 1) / cpu::kPackRows;
    // The K types pay on AVX2 too: their file layout needs horizontal sums and per-row scale
    // unpacking that the packed one does once at load.
    if (isPackedK(weightType) && activeIsa() >= CpuIsa::Avx2)
        return groups * (k / cpu::kQKK) * cpu::packedKSuperBlockBytes(weightType);
    // The legacy types gain on AVX2 too: their file layout is summed horizontally per row.
    if (cpu::packedBlockBytes(weightType) == 0 || activeIsa() < CpuIsa::Avx2) return 0;
    return groups * (k / cpu::kQK) * cpu::packedBlockBytes(weightType);
}

void packWeights(TensorType weightType, const void* w, std::int64_t n, std::int64_t k,
                 void* packed) {
    if (isPackedK(weightType)) {
        const auto* rows = static_cast<const std::uint8_t*>(w);
        auto* out = static_cast<std::uint8_t*>(packed);
        const std::int64_t bytes = cpu::packedKSuperBlockBytes(weightType);
        for (std::int64_t n0 = 0; n0 < n; n0 += cpu::kPackRows) {
            for (std::int64_t i = 0; i < k / cpu::kQKK; ++i, out += bytes)
                packKSuperBlock(weightType, rows, kernels::rowBytes(weightType, k), n, n0, i, out);
        }
        return;
    }
    const std::int64_t blocks = k / cpu::kQK, bytes = cpu::packedBlockBytes(weightType);
    const std::int64_t rowBytes = kernels::rowBytes(weightType, k);
    const auto* rows = static_cast<const std::uint8_t*>(w);
    auto* out = static_cast<std::uint8_t*>(packed);
    std::memset(out, 0, std::size_t((n + cpu::kPackRows - 1) / cpu::kPackRows * blocks * bytes));
    for (std::int64_t n0 = 0; n0 < n; n0 += cpu::kPackRows) {
        for (std::int64_t b = 0; b < blocks; ++b, out += bytes) {
            // Padding rows stay zero: scale 0, so they add nothing whatever the values mean.
            for (int r = 0; r < cpu::kPackRows && n0 + r < n; ++r) {
                std::uint8_t values[32];
                const std::uint16_t d =
                    unpackBlock(weightType, rows + (n0 + r) * rowBytes, b, values);
                std::memcpy(out + 2 * r, &d, 2);
                for (int j = 0; j < 32; ++j)
                    storePacked(weightType, out + 2 * cpu::kPackRows, r, j, values[j]);
            }
        }
    }
}

void matmulPacked(TensorType weightType, const void* packed, std::int64_t k, const void* prepared,
                  std::int64_t m, float* y, std::ptrdiff_t yStride, std::int64_t nBegin,
                  std::int64_t nEnd) {
    if (isPackedK(weightType)) {
        const cpu::IsaVariants<cpu::PackedMatmulFn> variants = {
            cpu::matmulPackedKScalar, IRIS_X86_VARIANT(cpu::matmulPackedKAvx2),
            IRIS_X86_VARIANT(cpu::matmulPackedKAvx512)};
        cpu::pickVariant(variants, activeIsa())(weightType, packed, k, prepared, m, y, yStride,
                                                nBegin, nEnd);
        return;
    }
    const cpu::IsaVariants<cpu::PackedMatmulFn> variants = {
        cpu::matmulPackedScalar, IRIS_X86_VARIANT(cpu::matmulPackedAvx2),
        IRIS_X86_VARIANT(cpu::matmulPackedAvx512)};
    cpu::pickVariant(variants, activeIsa())(weightType, packed, k, prepared, m, y, yStride, nBegin,
                                            nEnd);
}

}  // namespace iris::kernels
