// Compiled with the AVX-512 set including VNNI; only called when the CPU has them
// (cpu/dispatch.h).
#include <utility>

#include "kernels/cpu/x86/matmul_x86.h"

namespace iris::kernels::cpu {
namespace {

// u8 x s8 -> 8 x int32 in one instruction (vpdpbusd on 256-bit registers, AVX512_VNNI + VL).
struct DotVnni {
    static __m256i run(__m256i u, __m256i s) {
        return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
    }
    // One masked move turns the 32 bits into 32 bytes of 0x10 or 0 (AVX512BW + VL).
    static __m256i fifthBits(std::uint32_t bits) {
        return _mm256_maskz_mov_epi8(__mmask32(bits), _mm256_set1_epi8(0x10));
    }
    static __m256i scaled(__m256i acc, __m256i u, __m256i s, __m256i scale16) {
        return _mm256_dpwssd_epi32(acc, _mm256_maddubs_epi16(u, s), scale16);
    }
};

}  // namespace

MatmulFn matmulAvx512(TensorType weightType) {
    return matmulFor<DotVnni>(weightType);
}

}  // namespace iris::kernels::cpu

namespace iris::kernels::cpu {
namespace {

inline __m512i load64(const std::uint8_t* p) {
    return _mm512_loadu_si512(p);
}

// Four activation bytes, the same for all 16 rows.
inline __m512i broadcast4(const std::int8_t* p) {
    std::int32_t four;
    std::memcpy(&four, p, 4);
    return _mm512_set1_epi32(four);
}

inline __m512 toFloat(__m512i v) {
    // maskz conversion: the plain one expands to _mm512_undefined_ps, which GCC 12 warns about.
    return _mm512_maskz_cvtepi32_ps(__mmask16(0xFFFF), v);
}

// Bit t of each byte of `high` moved to bit 4 and or-ed into dot vector t: a shift and one
// vpternlogd (q | (shifted & 0x10)) per vector, no mask registers.
template <int... kBits>
inline void orFifthBits(__m512i* q, __m512i high, std::integer_sequence<int, kBits...>) {
    const __m512i bit4 = _mm512_set1_epi8(0x10);
    const auto shifted = [&]<int kBit>() {
        if constexpr (kBit < 4) return _mm512_slli_epi16(high, 4 - kBit);
        if constexpr (kBit == 4) return high;
        if constexpr (kBit > 4) return _mm512_srli_epi16(high, kBit - 4);
    };
    ((q[kBits] = _mm512_ternarylogic_epi32(q[kBits], shifted.template operator()<kBits>(), bit4,
                                           0xF8)),
     ...);
}

// The 8 dot vectors of a packed q8_0, q5_0 or q4_0 block (layout in kernels/cpu/matmul.h).
template <TensorType kType>
inline void unpackDotVectors(const std::uint8_t* values, __m512i q[8]) {
    if constexpr (kType == TensorType::Q8_0) {
        for (int t = 0; t < 8; ++t)
            q[t] = load64(values + 64 * t);
        return;
    }
    const __m512i lowMask = _mm512_set1_epi8(0x0F);
    for (int u = 0; u < 4; ++u) {
        const __m512i bytes = load64(values + 64 * u);
        q[u] = _mm512_and_si512(bytes, lowMask);
        q[u + 4] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), lowMask);
    }
    if constexpr (kType == TensorType::Q5_0) {
        const __m512i high = load64(values + 256);
        orFifthBits(q, high, std::make_integer_sequence<int, 8>());
    }
}

// One group of 16 packed q8_0, q5_0 or q4_0 rows against R activation rows: per block, 8
// vpdpbusd give each row's integer dot product, and one multiply-add per activation row scales
// all 16 rows.
template <TensorType kType, int R>
void packedGroup(const std::uint8_t* group, std::int64_t blocks, const BlockQ8Act* const* x,
                 __m512* acc) {
    constexpr std::int64_t kBytes = packedBlockBytes(kType);
    constexpr auto kOffset = float(packedOffset(kType));
    for (int r = 0; r < R; ++r)
        acc[r] = _mm512_setzero_ps();
    for (std::int64_t b = 0; b < blocks; ++b) {
        const std::uint8_t* block = group + b * kBytes;
        // maskz: the plain conversion expands to an undefined vector GCC 12 warns about.
        const __m512 d = _mm512_maskz_cvtph_ps(
            __mmask16(0xFFFF), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block)));
        __m512i q[8];
        unpackDotVectors<kType>(block + 2 * kPackRows, q);
        for (int r = 0; r < R; ++r) {
            // Two chains of 4 dependent vpdpbusd instead of one of 8.
            __m512i low = _mm512_setzero_si512(), high = _mm512_setzero_si512();
            for (int t = 0; t < 4; ++t) {
                low = _mm512_dpbusd_epi32(low, q[t], broadcast4(x[r][b].qs + 4 * t));
                high = _mm512_dpbusd_epi32(high, q[t + 4], broadcast4(x[r][b].qs + 16 + 4 * t));
            }
            const __m512i dot = _mm512_add_epi32(low, high);
            // d * (dx * sum(stored * x) - offset * dx * sum(x)) for each of the 16 rows.
            acc[r] = _mm512_fmadd_ps(toFloat(dot), _mm512_mul_ps(d, _mm512_set1_ps(x[r][b].d)),
                                     acc[r]);
            acc[r] = _mm512_fnmadd_ps(d, _mm512_set1_ps(kOffset * x[r][b].dsum), acc[r]);
        }
    }
}

template <int R>
void packedGroup(TensorType type, const std::uint8_t* group, std::int64_t blocks,
                 const BlockQ8Act* const* x, __m512* acc) {
    switch (type) {
        case TensorType::Q8_0:
            return packedGroup<TensorType::Q8_0, R>(group, blocks, x, acc);
        case TensorType::Q5_0:
            return packedGroup<TensorType::Q5_0, R>(group, blocks, x, acc);
        default:
            return packedGroup<TensorType::Q4_0, R>(group, blocks, x, acc);
    }
}

// Bits 4-5 of dot vector 4h + u from the 2-bit fields of a q6_K high vector (u = field).
template <int kField>
inline __m512i sixBitHigh(__m512i high) {
    const __m512i mask = _mm512_set1_epi8(0x30);
    if constexpr (kField < 2)
        return _mm512_and_si512(_mm512_slli_epi16(high, 4 - 2 * kField), mask);
    if constexpr (kField == 2) return _mm512_and_si512(high, mask);
    return _mm512_and_si512(_mm512_srli_epi16(high, 2), mask);
}

// One 16-row group of packed q4_K (q5_K) rows against R activation rows. Per sub-block, 8
// vpdpbusd give each row's integer dot product; its 6-bit scale is applied in int32 and the
// minimums through the activation sums, so floats are touched once per super-block.
template <bool kFiveBit, int R>
void packedGroupQ45K(const std::uint8_t* group, std::int64_t superBlocks, const BlockQ8K* const* x,
                     __m512* acc) {
    constexpr TensorType kType = kFiveBit ? TensorType::Q5_K : TensorType::Q4_K;
    constexpr std::int64_t kSub = packedKSubBlockBytes(kType);
    constexpr std::int64_t kBytes = packedKSuperBlockBytes(kType);
    for (int r = 0; r < R; ++r)
        acc[r] = _mm512_setzero_ps();
    for (std::int64_t i = 0; i < superBlocks; ++i) {
        const std::uint8_t* block = group + i * kBytes;
        __m512i sums[R], mins[R];
        for (int r = 0; r < R; ++r)
            sums[r] = mins[r] = _mm512_setzero_si512();
        for (int s = 0; s < 8; ++s) {
            // A run of 32 values is laid out as a packed q4_0 (q5_0) block's values.
            __m512i q[8];
            unpackDotVectors<kFiveBit ? TensorType::Q5_0 : TensorType::Q4_0>(
                block + kPackedKValuesOffset + s * kSub, q);
            const __m512i scale = _mm512_cvtepu8_epi32(_mm_loadu_si128(
                reinterpret_cast<const __m128i*>(block + kPackedKScalesOffset + 16 * s)));
            const __m512i minimum = _mm512_cvtepu8_epi32(_mm_loadu_si128(
                reinterpret_cast<const __m128i*>(block + kPackedKMinsOffset + 16 * s)));
            for (int r = 0; r < R; ++r) {
                const BlockQ8K& xb = x[r][i];
                __m512i dot = _mm512_setzero_si512();
                for (int t = 0; t < 8; ++t)
                    dot = _mm512_dpbusd_epi32(dot, q[t], broadcast4(xb.qs + 32 * s + 4 * t));
                sums[r] = _mm512_add_epi32(sums[r], _mm512_mullo_epi32(dot, scale));
                // The minimum is the low int16 of its lane (high one 0), the sum of 32
                // activations fits in int16: one vpdpwssd multiplies and accumulates.
                mins[r] = _mm512_dpwssd_epi32(
                    mins[r], minimum, _mm512_set1_epi32(xb.bsums[2 * s] + xb.bsums[2 * s + 1]));
            }
        }
        const __m512 d = _mm512_loadu_ps(block), dmin = _mm512_loadu_ps(block + 64);
        for (int r = 0; r < R; ++r) {
            const __m512 dx = _mm512_set1_ps(x[r][i].d);
            acc[r] = _mm512_fmadd_ps(toFloat(sums[r]), _mm512_mul_ps(d, dx), acc[r]);
            acc[r] = _mm512_fnmadd_ps(toFloat(mins[r]), _mm512_mul_ps(dmin, dx), acc[r]);
        }
    }
}

// One 16-row group of packed q6_K rows against R activation rows. Each 16-value dot product
// starts from -32 * (sum of its activations), which removes the values' +32 offset, and is
// scaled by its signed 8-bit scale in int32.
template <int R>
void packedGroupQ6K(const std::uint8_t* group, std::int64_t superBlocks, const BlockQ8K* const* x,
                    __m512* acc) {
    constexpr std::int64_t kSub = packedKSubBlockBytes(TensorType::Q6_K);
    constexpr std::int64_t kBytes = packedKSuperBlockBytes(TensorType::Q6_K);
    const __m512i lowMask = _mm512_set1_epi8(0x0F);
    for (int r = 0; r < R; ++r)
        acc[r] = _mm512_setzero_ps();
    for (std::int64_t i = 0; i < superBlocks; ++i) {
        const std::uint8_t* block = group + i * kBytes;
        __m512i sums[R];
        for (int r = 0; r < R; ++r)
            sums[r] = _mm512_setzero_si512();
        for (int c = 0; c < 8; ++c) {
            const std::uint8_t* run = block + kPackedQ6KValuesOffset + c * kSub;
            const __m512i high0 = load64(run + 256), high1 = load64(run + 320);
            __m512i q[8];
            for (int u = 0; u < 4; ++u) {
                const __m512i bytes = load64(run + 64 * u);
                q[u] = _mm512_and_si512(bytes, lowMask);
                q[u + 4] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), lowMask);
            }
            q[0] = _mm512_or_si512(q[0], sixBitHigh<0>(high0));
            q[1] = _mm512_or_si512(q[1], sixBitHigh<1>(high0));
            q[2] = _mm512_or_si512(q[2], sixBitHigh<2>(high0));
            q[3] = _mm512_or_si512(q[3], sixBitHigh<3>(high0));
            q[4] = _mm512_or_si512(q[4], sixBitHigh<0>(high1));
            q[5] = _mm512_or_si512(q[5], sixBitHigh<1>(high1));
            q[6] = _mm512_or_si512(q[6], sixBitHigh<2>(high1));
            q[7] = _mm512_or_si512(q[7], sixBitHigh<3>(high1));
            const auto scalesOf = [&](int g) {
                return _mm512_cvtepi8_epi32(_mm_loadu_si128(
                    reinterpret_cast<const __m128i*>(block + kPackedQ6KScalesOffset + 16 * g)));
            };
            const __m512i scale0 = scalesOf(2 * c), scale1 = scalesOf(2 * c + 1);
            for (int r = 0; r < R; ++r) {
                const BlockQ8K& xb = x[r][i];
                const std::int8_t* xq = xb.qs + 32 * c;
                __m512i dot0 = _mm512_set1_epi32(-32 * xb.bsums[2 * c]);
                __m512i dot1 = _mm512_set1_epi32(-32 * xb.bsums[2 * c + 1]);
                for (int t = 0; t < 4; ++t) {
                    dot0 = _mm512_dpbusd_epi32(dot0, q[t], broadcast4(xq + 4 * t));
                    dot1 = _mm512_dpbusd_epi32(dot1, q[t + 4], broadcast4(xq + 16 + 4 * t));
                }
                sums[r] =
                    _mm512_add_epi32(sums[r], _mm512_add_epi32(_mm512_mullo_epi32(dot0, scale0),
                                                               _mm512_mullo_epi32(dot1, scale1)));
            }
        }
        const __m512 d = _mm512_loadu_ps(block);
        for (int r = 0; r < R; ++r) {
            acc[r] = _mm512_fmadd_ps(toFloat(sums[r]), _mm512_mul_ps(d, _mm512_set1_ps(x[r][i].d)),
                                     acc[r]);
        }
    }
}

template <int R>
void packedGroupK(TensorType type, const std::uint8_t* group, std::int64_t superBlocks,
                  const BlockQ8K* const* x, __m512* acc) {
    switch (type) {
        case TensorType::Q4_K:
            return packedGroupQ45K<false, R>(group, superBlocks, x, acc);
        case TensorType::Q5_K:
            return packedGroupQ45K<true, R>(group, superBlocks, x, acc);
        default:
            return packedGroupQ6K<R>(group, superBlocks, x, acc);
    }
}

}  // namespace

void matmulPackedKAvx512(TensorType weightType, const void* packed, std::int64_t k,
                         const void* prepared, std::int64_t m, float* y, std::ptrdiff_t yStride,
                         std::int64_t nBegin, std::int64_t nEnd) {
    constexpr int kRows = 4;
    const std::int64_t superBlocks = k / kQKK;
    const std::int64_t groupBytes = superBlocks * packedKSuperBlockBytes(weightType);
    const auto* groups = static_cast<const std::uint8_t*>(packed);
    const auto* x = static_cast<const BlockQ8K*>(prepared);
    // Activation rows in panels that stay in L2 while this thread's groups pass over them (as
    // matmulTiled does for the file layout): a prefill chunk's activations are read from L3 once
    // per panel instead of once per group.
    const std::int64_t panel = std::max<std::int64_t>(
        kRows, kPanelBytes / (superBlocks * std::int64_t(sizeof(BlockQ8K))) / kRows * kRows);
    for (std::int64_t p0 = 0; p0 < m; p0 += panel) {
        const std::int64_t p1 = std::min(m, p0 + panel);
        for (std::int64_t n0 = nBegin; n0 < nEnd; n0 += kPackRows) {
            const std::uint8_t* group = groups + (n0 / kPackRows) * groupBytes;
            const auto lanes = __mmask16((1u << std::min<std::int64_t>(kPackRows, nEnd - n0)) - 1u);
            for (std::int64_t i0 = p0; i0 < p1; i0 += kRows) {
                const BlockQ8K* rows[kRows];
                const int count = int(std::min<std::int64_t>(kRows, p1 - i0));
                for (int r = 0; r < count; ++r)
                    rows[r] = x + (i0 + r) * superBlocks;
                __m512 acc[kRows];
                switch (count) {
                    case 4:
                        packedGroupK<4>(weightType, group, superBlocks, rows, acc);
                        break;
                    case 3:
                        packedGroupK<3>(weightType, group, superBlocks, rows, acc);
                        break;
                    case 2:
                        packedGroupK<2>(weightType, group, superBlocks, rows, acc);
                        break;
                    default:
                        packedGroupK<1>(weightType, group, superBlocks, rows, acc);
                        break;
                }
                for (int r = 0; r < count; ++r)
                    _mm512_mask_storeu_ps(y + (i0 + r) * yStride + n0, lanes, acc[r]);
            }
        }
    }
}

void matmulPackedAvx512(TensorType weightType, const void* packed, std::int64_t k,
                        const void* prepared, std::int64_t m, float* y, std::ptrdiff_t yStride,
                        std::int64_t nBegin, std::int64_t nEnd) {
    constexpr int kRows = 4;
    const std::int64_t blocks = k / kQK;
    const std::int64_t groupBytes = blocks * packedBlockBytes(weightType);
    const auto* groups = static_cast<const std::uint8_t*>(packed);
    const auto* x = static_cast<const BlockQ8Act*>(prepared);
    for (std::int64_t n0 = nBegin; n0 < nEnd; n0 += kPackRows) {
        const std::uint8_t* group = groups + (n0 / kPackRows) * groupBytes;
        const auto lanes = __mmask16((1u << std::min<std::int64_t>(kPackRows, nEnd - n0)) - 1u);
        for (std::int64_t i0 = 0; i0 < m; i0 += kRows) {
            const BlockQ8Act* rows[kRows];
            const int count = int(std::min<std::int64_t>(kRows, m - i0));
            for (int r = 0; r < count; ++r)
                rows[r] = x + (i0 + r) * blocks;
            __m512 acc[kRows];
            switch (count) {
                case 4:
                    packedGroup<4>(weightType, group, blocks, rows, acc);
                    break;
                case 3:
                    packedGroup<3>(weightType, group, blocks, rows, acc);
                    break;
                case 2:
                    packedGroup<2>(weightType, group, blocks, rows, acc);
                    break;
                default:
                    packedGroup<1>(weightType, group, blocks, rows, acc);
                    break;
            }
            for (int r = 0; r < count; ++r)
                _mm512_mask_storeu_ps(y + (i0 + r) * yStride + n0, lanes, acc[r]);
        }
    }
}

}  // namespace iris::kernels::cpu
