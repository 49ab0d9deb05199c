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

// Dot vectors u and u + 4 of a packed q8_0, q5_0 or q4_0 block (layout in kernels/cpu/matmul.h):
// for q5_0 and q4_0 they are the low and high nibbles of one 64-byte vector, so they come in
// pairs; q5_0's fifth bit t of each value is bit t of its byte in the block's high vector.
template <TensorType kType, int kU>
inline void unpackDotPair(const std::uint8_t* values, __m512i& low, __m512i& high) {
    if constexpr (kType == TensorType::Q8_0) {
        low = load64(values + 64 * kU);
        high = load64(values + 64 * (kU + 4));
        return;
    }
    const __m512i lowMask = _mm512_set1_epi8(0x0F);
    const __m512i bytes = load64(values + 64 * kU);
    low = _mm512_and_si512(bytes, lowMask);
    high = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), lowMask);
    if constexpr (kType == TensorType::Q5_0) {
        const __m512i bits = load64(values + 256);
        __m512i q[8];
        q[kU] = low;
        q[kU + 4] = high;
        orFifthBits(q, bits, std::integer_sequence<int, kU, kU + 4>());
        low = q[kU];
        high = q[kU + 4];
    }
}

// The 8 dot vectors of a packed q8_0, q5_0 or q4_0 block.
template <TensorType kType>
inline void unpackDotVectors(const std::uint8_t* values, __m512i q[8]) {
    [&]<int... kU>(std::integer_sequence<int, kU...>) {
        (unpackDotPair<kType, kU>(values, q[kU], q[kU + 4]), ...);
    }(std::make_integer_sequence<int, 4>());
}

// Activation rows from which matmulPackedAvx512 takes two groups at a time.
constexpr std::int64_t kPairRows = 16;

// G groups of 16 packed q8_0, q5_0 or q4_0 rows (groupBytes apart) against R activation rows
// (x, `blocks` apart), written to y (yStride apart; the first `columns` of the G x 16 outputs of
// a row, the others masked off). Per block, each dot product starts from -offset * sum(x) and
// takes 8 vpdpbusd, so it ends as the exact integer sum of (stored - offset) * x, and one
// multiply-add scales it by both blocks' scales: one vector instruction fewer per row and block
// than taking the offset out in float, on the multiply pipes vpdpbusd needs. With G = 2 each
// activation broadcast feeds two vpdpbusd, which halves the loads per vpdpbusd: it pays for a
// prefill chunk, not for a few decoding rows (matmulPackedAvx512).
template <TensorType kType, int G, int R>
void packedGroups(const std::uint8_t* group, std::int64_t groupBytes, std::int64_t blocks,
                  const BlockQ8Act* x, float* y, std::ptrdiff_t yStride, std::int64_t columns) {
    constexpr std::int64_t kBytes = packedBlockBytes(kType);
    constexpr int kOffset = packedOffset(kType);
    // Summed in registers and stored once at the end: __m512 may alias anything, so sums
    // kept in memory would be stored at every block.
    __m512 acc[R * G];
    for (int i = 0; i < R * G; ++i)
        acc[i] = _mm512_setzero_ps();
    for (std::int64_t b = 0; b < blocks; ++b) {
        const std::uint8_t* block = group + b * kBytes;
        __m512i dot[R * G];
        for (int r = 0; r < R; ++r)
            for (int g = 0; g < G; ++g)
                dot[r * G + g] = _mm512_set1_epi32(-kOffset * x[r * blocks + b].sum);
        [&]<int... kU>(std::integer_sequence<int, kU...>) {
            const auto pair = [&]<int kPair>() {
                __m512i low[G], high[G];
                for (int g = 0; g < G; ++g)
                    unpackDotPair<kType, kPair>(block + g * groupBytes + 2 * kPackRows, low[g],
                                                high[g]);
                for (int r = 0; r < R; ++r) {
                    const BlockQ8Act& xb = x[r * blocks + b];
                    const __m512i xLow = broadcast4(xb.qs + 4 * kPair);
                    const __m512i xHigh = broadcast4(xb.qs + 16 + 4 * kPair);
                    for (int g = 0; g < G; ++g) {
                        dot[r * G + g] = _mm512_dpbusd_epi32(dot[r * G + g], low[g], xLow);
                        dot[r * G + g] = _mm512_dpbusd_epi32(dot[r * G + g], high[g], xHigh);
                    }
                }
            };
            (pair.template operator()<kU>(), ...);
        }(std::make_integer_sequence<int, 4>());
        __m512 d[G];
        for (int g = 0; g < G; ++g)
            // maskz: the plain conversion expands to an undefined vector GCC 12 warns about.
            d[g] = _mm512_maskz_cvtph_ps(
                __mmask16(0xFFFF),
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + g * groupBytes)));
        for (int r = 0; r < R; ++r) {
            const __m512 dx = _mm512_set1_ps(x[r * blocks + b].d);
            for (int g = 0; g < G; ++g)
                acc[r * G + g] = _mm512_fmadd_ps(toFloat(dot[r * G + g]), _mm512_mul_ps(d[g], dx),
                                                 acc[r * G + g]);
        }
    }
    for (int g = 0; g < G; ++g) {
        const std::int64_t here = std::clamp<std::int64_t>(columns - g * kPackRows, 0, kPackRows);
        const auto lanes = __mmask16((1u << here) - 1u);
        for (int r = 0; r < R; ++r)
            _mm512_mask_storeu_ps(y + r * yStride + g * kPackRows, lanes, acc[r * G + g]);
    }
}

// Activation rows per packedGroups call in a prefill chunk.
constexpr int kRowsPerCall = 4;

// Activation rows [r0, r1) against G groups: kRowsPerCall per packedGroups call, the last one to
// three in one more.
template <TensorType kType, int G>
void packedPanel(const std::uint8_t* group, std::int64_t groupBytes, std::int64_t blocks,
                 const BlockQ8Act* x, std::int64_t r0, std::int64_t r1, float* y,
                 std::ptrdiff_t yStride, std::int64_t columns) {
    std::int64_t i = r0;
    for (; i + kRowsPerCall <= r1; i += kRowsPerCall)
        packedGroups<kType, G, kRowsPerCall>(group, groupBytes, blocks, x + i * blocks,
                                             y + i * yStride, yStride, columns);
    switch (r1 - i) {
        case 3:
            return packedGroups<kType, G, 3>(group, groupBytes, blocks, x + i * blocks,
                                             y + i * yStride, yStride, columns);
        case 2:
            return packedGroups<kType, G, 2>(group, groupBytes, blocks, x + i * blocks,
                                             y + i * yStride, yStride, columns);
        case 1:
            return packedGroups<kType, G, 1>(group, groupBytes, blocks, x + i * blocks,
                                             y + i * yStride, yStride, columns);
        default:
            return;
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
                     __m512* out) {
    constexpr TensorType kType = kFiveBit ? TensorType::Q5_K : TensorType::Q4_K;
    constexpr std::int64_t kSub = packedKSubBlockBytes(kType);
    constexpr std::int64_t kBytes = packedKSuperBlockBytes(kType);
    // In registers, as above.
    __m512 acc[R];
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
    for (int i = 0; i < R; ++i)
        out[i] = acc[i];
}

// One 16-row group of packed q6_K rows against R activation rows. Each 16-value dot product
// starts from -32 * (sum of its activations), which removes the values' +32 offset, and is
// scaled by its signed 8-bit scale in int32.
template <int R>
void packedGroupQ6K(const std::uint8_t* group, std::int64_t superBlocks, const BlockQ8K* const* x,
                    __m512* out) {
    constexpr std::int64_t kSub = packedKSubBlockBytes(TensorType::Q6_K);
    constexpr std::int64_t kBytes = packedKSuperBlockBytes(TensorType::Q6_K);
    const __m512i lowMask = _mm512_set1_epi8(0x0F);
    // In registers, as above.
    __m512 acc[R];
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
    for (int i = 0; i < R; ++i)
        out[i] = acc[i];
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

// As quantizeActivationRow and quantizeActivationRowK, value for value: the same product x * id,
// rounded to nearest even by the conversion as roundEven does, and the sums of those integers.
namespace {

inline __m512 absolute(__m512 v) {
    return _mm512_castsi512_ps(
        _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7FFFFFFF)));
}

// The maskz forms here and below: the plain ones expand to undefined vectors GCC 12 warns about.
inline __m512i roundToInt(__m512 v) {
    return _mm512_maskz_cvt_roundps_epi32(__mmask16(0xFFFF), v,
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

inline __m128i saturateToBytes(__m512i v) {
    return _mm512_maskz_cvtsepi32_epi8(__mmask16(0xFFFF), v);
}

// Lane reductions through extracts: _mm512_reduce_* expand to undefined vectors as well.
inline float horizontalMax(__m512 v) {
    const __m256 m = _mm256_max_ps(_mm512_extractf32x8_ps(v, 0), _mm512_extractf32x8_ps(v, 1));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}

inline int horizontalSum(__m512i v) {
    const __m256i h =
        _mm256_add_epi32(_mm512_extracti32x8_epi32(v, 0), _mm512_extracti32x8_epi32(v, 1));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1)));
}

template <int kValues>
inline float scaleOf(const float* x) {
    __m512 amax = _mm512_setzero_ps();
    for (int j = 0; j < kValues; j += 16)
        amax = _mm512_maskz_max_ps(__mmask16(0xFFFF), amax, absolute(_mm512_loadu_ps(x + j)));
    return horizontalMax(amax) / 127.0f;
}

}  // namespace

void quantizeActivationRowAvx512(const float* x, std::int64_t k, void* blocks) {
    auto* b = static_cast<BlockQ8Act*>(blocks);
    for (std::int64_t i = 0; i < k / kQK; ++i, x += kQK) {
        const float d = scaleOf<kQK>(x);
        const __m512 id = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
        const __m512i low = roundToInt(_mm512_mul_ps(_mm512_loadu_ps(x), id));
        const __m512i high = roundToInt(_mm512_mul_ps(_mm512_loadu_ps(x + 16), id));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(b[i].qs), saturateToBytes(low));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(b[i].qs + 16), saturateToBytes(high));
        b[i].d = d;
        b[i].sum = horizontalSum(_mm512_add_epi32(low, high));
    }
}

void quantizeActivationRowKAvx512(const float* x, std::int64_t k, void* blocks) {
    auto* b = static_cast<BlockQ8K*>(blocks);
    for (std::int64_t i = 0; i < k / kQKK; ++i, x += kQKK) {
        const float d = scaleOf<kQKK>(x);
        const __m512 id = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
        b[i].d = d;
        for (int g = 0; g < 16; ++g) {
            const __m512i q = roundToInt(_mm512_mul_ps(_mm512_loadu_ps(x + 16 * g), id));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(b[i].qs + 16 * g), saturateToBytes(q));
            b[i].bsums[g] = std::int16_t(horizontalSum(q));
        }
    }
}

namespace {

template <TensorType kType>
void matmulPackedOf(const void* packed, std::int64_t k, const void* prepared, std::int64_t m,
                    float* y, std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    const std::int64_t blocks = k / kQK;
    const std::int64_t groupBytes = blocks * packedBlockBytes(kType);
    const auto* groups = static_cast<const std::uint8_t*>(packed);
    const auto* x = static_cast<const BlockQ8Act*>(prepared);
    // Two groups at a time for prefill chunks: on Zen 5, 1.15-1.3x over one for Qwen2.5-0.5B's
    // FFN down and a 7B model's projections, even for 0.5B's FFN gate/up (128-512 rows). With a
    // few decoding rows the product streams weights from memory, and two streams per thread made
    // the 150k-row output head 1.3-1.8x slower.
    const int pairing = m >= kPairRows ? 2 : 1;
    // Activation rows in panels that stay in L2 while this thread's groups pass over them, as in
    // matmulPackedKAvx512.
    const std::int64_t panel = std::max<std::int64_t>(
        kRowsPerCall,
        kPanelBytes / (blocks * std::int64_t(sizeof(BlockQ8Act))) / kRowsPerCall * kRowsPerCall);
    for (std::int64_t p0 = 0; p0 < m; p0 += panel) {
        const std::int64_t p1 = std::min(m, p0 + panel);
        for (std::int64_t n0 = nBegin; n0 < nEnd;) {
            const std::uint8_t* group = groups + (n0 / kPackRows) * groupBytes;
            const int here = nEnd - n0 > kPackRows ? pairing : 1;
            if (here == 2)
                packedPanel<kType, 2>(group, groupBytes, blocks, x, p0, p1, y + n0, yStride,
                                      nEnd - n0);
            else
                packedPanel<kType, 1>(group, groupBytes, blocks, x, p0, p1, y + n0, yStride,
                                      nEnd - n0);
            n0 += here * kPackRows;
        }
    }
}

}  // namespace

void matmulPackedAvx512(TensorType weightType, const void* packed, std::int64_t k,
                        const void* prepared, std::int64_t m, float* y, std::ptrdiff_t yStride,
                        std::int64_t nBegin, std::int64_t nEnd) {
    switch (weightType) {
        case TensorType::Q8_0:
            return matmulPackedOf<TensorType::Q8_0>(packed, k, prepared, m, y, yStride, nBegin,
                                                    nEnd);
        case TensorType::Q5_0:
            return matmulPackedOf<TensorType::Q5_0>(packed, k, prepared, m, y, yStride, nBegin,
                                                    nEnd);
        default:
            return matmulPackedOf<TensorType::Q4_0>(packed, k, prepared, m, y, yStride, nBegin,
                                                    nEnd);
    }
}

}  // namespace iris::kernels::cpu
