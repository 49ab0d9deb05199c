// Compiled with -mavx2 -mfma -mf16c; only called when the CPU has them (cpu/dispatch.h).
#include <utility>

#include "kernels/cpu/x86/matmul_x86.h"

namespace iris::kernels::cpu {
namespace {

// u8 x s8 -> 8 x int32 without VNNI. vpmaddubsw cannot saturate here: |u| <= 128 (weights) or
// <= 63 (unpacked K/legacy values) and |s| <= 127, so a pair sums to at most 32512.
struct DotMaddubs {
    static __m256i run(__m256i u, __m256i s) {
        return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
    }
    static __m256i fifthBits(std::uint32_t bits) { return fifthBitsAvx2(bits); }
    static __m256i scaled(__m256i acc, __m256i u, __m256i s, __m256i scale16) {
        return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scale16));
    }
};

// ---- packed K types (layout in kernels/cpu/matmul.h) ---------------------------------------
// A 64-byte dot vector of 16 rows is two 32-byte halves of 8 rows; each half is computed on its
// own. Without vpdpbusd, two vpmaddubsw results (4 values of a row in two int16 lanes each) are
// added in int16 and multiplied by the row's sub-block scale with one vpmaddwd: the scale
// register holds it in both int16 halves of the row's lane.

inline __m256i loadHalf(const std::uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

inline __m256i broadcast4(const std::int8_t* p) {
    std::int32_t four;
    std::memcpy(&four, p, 4);
    return _mm256_set1_epi32(four);
}

// 8 scale bytes as int32 lanes with the scale in both int16 halves.
template <bool kSigned>
inline __m256i scalePairs(const std::uint8_t* p) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    const __m256i v = kSigned ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes);
    return _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xFFFF)),
                           _mm256_slli_epi32(v, 16));
}

// An int16 value broadcast to the low half of every int32 lane (high half 0), so that vpmaddwd
// against scale pairs gives scale * value.
inline __m256i lowHalf(int value) {
    return _mm256_set1_epi32(value & 0xFFFF);
}

// sum += scale * (q[a] . x[a] + q[b] . x[b]) for one row lane each. The int16 sum of the two
// vpmaddubsw results holds: with values < 64 and |x| <= 127 it is at most 4 * 63 * 127.
inline __m256i scaledPair(__m256i sum, __m256i qa, __m256i xa, __m256i qb, __m256i xb,
                          __m256i scale) {
    const __m256i pairs =
        _mm256_add_epi16(_mm256_maddubs_epi16(qa, xa), _mm256_maddubs_epi16(qb, xb));
    return _mm256_add_epi32(sum, _mm256_madd_epi16(pairs, scale));
}

// Bit t of every byte as 0x10.
template <int kBit>
inline __m256i fifthBit(__m256i high) {
    const __m256i mask = _mm256_set1_epi8(0x10);
    if constexpr (kBit <= 4) return _mm256_and_si256(_mm256_slli_epi16(high, 4 - kBit), mask);
    return _mm256_and_si256(_mm256_srli_epi16(high, kBit - 4), mask);
}

// Bits 2u, 2u + 1 of every byte as bits 4, 5.
template <int kField>
inline __m256i sixBitHigh(__m256i high) {
    const __m256i mask = _mm256_set1_epi8(0x30);
    if constexpr (kField < 2)
        return _mm256_and_si256(_mm256_slli_epi16(high, 4 - 2 * kField), mask);
    if constexpr (kField == 2) return _mm256_and_si256(high, mask);
    return _mm256_and_si256(_mm256_srli_epi16(high, 2), mask);
}

template <int... kBits>
inline void addFifthBits(__m256i* q, __m256i high, std::integer_sequence<int, kBits...>) {
    ((q[kBits] = _mm256_or_si256(q[kBits], fifthBit<kBits>(high))), ...);
}

// Rows 8h..8h+7 of a packed q4_K (q5_K) group against R activation rows.
template <bool kFiveBit, int R>
void packedHalfQ45K(const std::uint8_t* group, int h, std::int64_t superBlocks,
                    const BlockQ8K* const* x, __m256* out) {
    constexpr TensorType kType = kFiveBit ? TensorType::Q5_K : TensorType::Q4_K;
    constexpr std::int64_t kSub = packedKSubBlockBytes(kType);
    constexpr std::int64_t kBytes = packedKSuperBlockBytes(kType);
    const __m256i lowMask = _mm256_set1_epi8(0x0F);
    // Summed in registers and stored once at the end: __m256 may alias anything, so sums
    // kept in out[] would be stored at every block.
    __m256 acc[R];
    for (int r = 0; r < R; ++r)
        acc[r] = _mm256_setzero_ps();
    for (std::int64_t i = 0; i < superBlocks; ++i) {
        const std::uint8_t* block = group + i * kBytes;
        __m256i sums[R], mins[R];
        for (int r = 0; r < R; ++r)
            sums[r] = mins[r] = _mm256_setzero_si256();
        for (int s = 0; s < 8; ++s) {
            const std::uint8_t* run = block + kPackedKValuesOffset + s * kSub + 32 * h;
            __m256i q[8];
            for (int u = 0; u < 4; ++u) {
                const __m256i bytes = loadHalf(run + 64 * u);
                q[u] = _mm256_and_si256(bytes, lowMask);
                q[u + 4] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), lowMask);
            }
            if constexpr (kFiveBit)
                addFifthBits(q, loadHalf(run + 256), std::make_integer_sequence<int, 8>());
            const __m256i scale = scalePairs<false>(block + kPackedKScalesOffset + 16 * s + 8 * h);
            const __m256i minimum = _mm256_cvtepu8_epi32(_mm_loadl_epi64(
                reinterpret_cast<const __m128i*>(block + kPackedKMinsOffset + 16 * s + 8 * h)));
            for (int r = 0; r < R; ++r) {
                const BlockQ8K& xb = x[r][i];
                const std::int8_t* xq = xb.qs + 32 * s;
                for (int t = 0; t < 8; t += 2) {
                    sums[r] = scaledPair(sums[r], q[t], broadcast4(xq + 4 * t), q[t + 1],
                                         broadcast4(xq + 4 * t + 4), scale);
                }
                mins[r] = _mm256_add_epi32(
                    mins[r],
                    _mm256_madd_epi16(minimum, lowHalf(xb.bsums[2 * s] + xb.bsums[2 * s + 1])));
            }
        }
        const __m256 d = _mm256_loadu_ps(reinterpret_cast<const float*>(block) + 8 * h);
        const __m256 dmin = _mm256_loadu_ps(reinterpret_cast<const float*>(block + 64) + 8 * h);
        for (int r = 0; r < R; ++r) {
            const __m256 dx = _mm256_set1_ps(x[r][i].d);
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[r]), _mm256_mul_ps(d, dx), acc[r]);
            acc[r] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins[r]), _mm256_mul_ps(dmin, dx), acc[r]);
        }
    }
    for (int i = 0; i < R; ++i)
        out[i] = acc[i];
}

// Rows 8h..8h+7 of a packed q6_K group against R activation rows; the +32 offset of the values
// is taken out through the activation sums, scaled like the products.
template <int R>
void packedHalfQ6K(const std::uint8_t* group, int h, std::int64_t superBlocks,
                   const BlockQ8K* const* x, __m256* out) {
    constexpr std::int64_t kSub = packedKSubBlockBytes(TensorType::Q6_K);
    constexpr std::int64_t kBytes = packedKSuperBlockBytes(TensorType::Q6_K);
    const __m256i lowMask = _mm256_set1_epi8(0x0F);
    // In registers, as above.
    __m256 acc[R];
    for (int r = 0; r < R; ++r)
        acc[r] = _mm256_setzero_ps();
    for (std::int64_t i = 0; i < superBlocks; ++i) {
        const std::uint8_t* block = group + i * kBytes;
        __m256i sums[R], offsets[R];
        for (int r = 0; r < R; ++r)
            sums[r] = offsets[r] = _mm256_setzero_si256();
        for (int c = 0; c < 8; ++c) {
            const std::uint8_t* run = block + kPackedQ6KValuesOffset + c * kSub + 32 * h;
            const __m256i high0 = loadHalf(run + 256), high1 = loadHalf(run + 320);
            __m256i q[8];
            for (int u = 0; u < 4; ++u) {
                const __m256i bytes = loadHalf(run + 64 * u);
                q[u] = _mm256_and_si256(bytes, lowMask);
                q[u + 4] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), lowMask);
            }
            q[0] = _mm256_or_si256(q[0], sixBitHigh<0>(high0));
            q[1] = _mm256_or_si256(q[1], sixBitHigh<1>(high0));
            q[2] = _mm256_or_si256(q[2], sixBitHigh<2>(high0));
            q[3] = _mm256_or_si256(q[3], sixBitHigh<3>(high0));
            q[4] = _mm256_or_si256(q[4], sixBitHigh<0>(high1));
            q[5] = _mm256_or_si256(q[5], sixBitHigh<1>(high1));
            q[6] = _mm256_or_si256(q[6], sixBitHigh<2>(high1));
            q[7] = _mm256_or_si256(q[7], sixBitHigh<3>(high1));
            const std::uint8_t* scales = block + kPackedQ6KScalesOffset + 8 * h;
            const __m256i scale0 = scalePairs<true>(scales + 16 * (2 * c));
            const __m256i scale1 = scalePairs<true>(scales + 16 * (2 * c + 1));
            for (int r = 0; r < R; ++r) {
                const BlockQ8K& xb = x[r][i];
                const std::int8_t* xq = xb.qs + 32 * c;
                __m256i sum = sums[r];
                for (int t = 0; t < 4; t += 2) {
                    sum = scaledPair(sum, q[t], broadcast4(xq + 4 * t), q[t + 1],
                                     broadcast4(xq + 4 * t + 4), scale0);
                    sum = scaledPair(sum, q[t + 4], broadcast4(xq + 16 + 4 * t), q[t + 5],
                                     broadcast4(xq + 20 + 4 * t), scale1);
                }
                sums[r] = sum;
                offsets[r] = _mm256_add_epi32(
                    offsets[r],
                    _mm256_add_epi32(_mm256_madd_epi16(scale0, lowHalf(xb.bsums[2 * c])),
                                     _mm256_madd_epi16(scale1, lowHalf(xb.bsums[2 * c + 1]))));
            }
        }
        const __m256 d = _mm256_loadu_ps(reinterpret_cast<const float*>(block) + 8 * h);
        for (int r = 0; r < R; ++r) {
            const __m256i total = _mm256_sub_epi32(sums[r], _mm256_slli_epi32(offsets[r], 5));
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total),
                                     _mm256_mul_ps(d, _mm256_set1_ps(x[r][i].d)), acc[r]);
        }
    }
    for (int i = 0; i < R; ++i)
        out[i] = acc[i];
}

template <int R>
void packedHalfK(TensorType type, const std::uint8_t* group, int h, std::int64_t superBlocks,
                 const BlockQ8K* const* x, __m256* acc) {
    switch (type) {
        case TensorType::Q4_K:
            return packedHalfQ45K<false, R>(group, h, superBlocks, x, acc);
        case TensorType::Q5_K:
            return packedHalfQ45K<true, R>(group, h, superBlocks, x, acc);
        default:
            return packedHalfQ6K<R>(group, h, superBlocks, x, acc);
    }
}

// Rows 8h..8h+7 of a packed q4_0 (q5_0) group against R activation rows. The int16 sum of 4
// vpmaddubsw results holds: 8 products of values < 32 and |x| <= 127 reach 31496 at most.
template <TensorType kType, int R>
void packedHalf(const std::uint8_t* group, int h, std::int64_t blocks, const BlockQ8Act* const* x,
                __m256* out) {
    constexpr std::int64_t kBytes = packedBlockBytes(kType);
    constexpr auto kOffset = float(packedOffset(kType));
    const __m256i lowMask = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    // In registers, as above.
    __m256 acc[R];
    for (int r = 0; r < R; ++r)
        acc[r] = _mm256_setzero_ps();
    for (std::int64_t b = 0; b < blocks; ++b) {
        const std::uint8_t* block = group + b * kBytes;
        const __m256 d =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * h)));
        const std::uint8_t* values = block + 2 * kPackRows + 32 * h;
        __m256i q[8];
        for (int u = 0; u < 4; ++u) {
            const __m256i bytes = loadHalf(values + 64 * u);
            q[u] = _mm256_and_si256(bytes, lowMask);
            q[u + 4] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), lowMask);
        }
        if constexpr (kType == TensorType::Q5_0)
            addFifthBits(q, loadHalf(values + 256), std::make_integer_sequence<int, 8>());
        for (int r = 0; r < R; ++r) {
            const std::int8_t* xq = x[r][b].qs;
            __m256i halves[2];
            for (int half = 0; half < 2; ++half) {
                const int t = 4 * half;
                halves[half] = _mm256_madd_epi16(
                    _mm256_add_epi16(
                        _mm256_add_epi16(
                            _mm256_maddubs_epi16(q[t], broadcast4(xq + 4 * t)),
                            _mm256_maddubs_epi16(q[t + 1], broadcast4(xq + 4 * t + 4))),
                        _mm256_add_epi16(
                            _mm256_maddubs_epi16(q[t + 2], broadcast4(xq + 4 * t + 8)),
                            _mm256_maddubs_epi16(q[t + 3], broadcast4(xq + 4 * t + 12)))),
                    ones);
            }
            const __m256i dot = _mm256_add_epi32(halves[0], halves[1]);
            // d * (dx * sum(stored * x) - offset * dx * sum(x)) for each of the 8 rows.
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot),
                                     _mm256_mul_ps(d, _mm256_set1_ps(x[r][b].d)), acc[r]);
            acc[r] = _mm256_fnmadd_ps(d, _mm256_set1_ps(kOffset * (x[r][b].d * float(x[r][b].sum))),
                                      acc[r]);
        }
    }
    for (int i = 0; i < R; ++i)
        out[i] = acc[i];
}

// Rows 8h..8h+7 of a packed q8_0 group against R activation rows. Without vpdpbusd the stored
// values (q + 128) are made signed again (xor 0x80) and go through the sign trick: |q| as the
// unsigned operand against x carrying q's sign, so a vpmaddubsw pair is at most 2 * 128 * 127
// and cannot saturate (each pair is widened to int32 before the next is added: two would).
template <int R>
void packedHalfQ8(const std::uint8_t* group, int h, std::int64_t blocks, const BlockQ8Act* const* x,
                  __m256* out) {
    constexpr std::int64_t kBytes = packedBlockBytes(TensorType::Q8_0);
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80)), ones = _mm256_set1_epi16(1);
    // In registers, as above.
    __m256 acc[R];
    for (int r = 0; r < R; ++r)
        acc[r] = _mm256_setzero_ps();
    for (std::int64_t b = 0; b < blocks; ++b) {
        const std::uint8_t* block = group + b * kBytes;
        const __m256 d =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * h)));
        const std::uint8_t* values = block + 2 * kPackRows + 32 * h;
        __m256i dots[R];
        for (int r = 0; r < R; ++r)
            dots[r] = _mm256_setzero_si256();
        for (int t = 0; t < 8; ++t) {
            const __m256i q = _mm256_xor_si256(loadHalf(values + 64 * t), flip);
            const __m256i magnitude = _mm256_abs_epi8(q);
            for (int r = 0; r < R; ++r) {
                const __m256i signedX = _mm256_sign_epi8(broadcast4(x[r][b].qs + 4 * t), q);
                dots[r] = _mm256_add_epi32(
                    dots[r], _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, signedX), ones));
            }
        }
        for (int r = 0; r < R; ++r) {
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots[r]),
                                     _mm256_mul_ps(d, _mm256_set1_ps(x[r][b].d)), acc[r]);
        }
    }
    for (int i = 0; i < R; ++i)
        out[i] = acc[i];
}

// Decoding (one activation row) through q8_0: both halves of each 16-row group in the same loop,
// each 64-byte line of weights used whole as it arrives. Measured against the half-at-a-time
// driver below on a q8_0 output head (151936 x 896, one thread, AMD Zen 5): 24.7 against 19.8
// GB/s, and also against that driver taking each group in L1-sized runs of blocks (20.6 GB/s).
void decodeQ8(const std::uint8_t* groups, std::int64_t blocks, const BlockQ8Act* x, float* y,
              std::int64_t nBegin, std::int64_t nEnd) {
    constexpr std::int64_t kBytes = packedBlockBytes(TensorType::Q8_0);
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80)), ones = _mm256_set1_epi16(1);
    for (std::int64_t n0 = nBegin; n0 < nEnd; n0 += kPackRows) {
        const std::uint8_t* group = groups + (n0 / kPackRows) * blocks * kBytes;
        __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
        for (std::int64_t b = 0; b < blocks; ++b) {
            const std::uint8_t* block = group + b * kBytes;
            const std::uint8_t* values = block + 2 * kPackRows;
            __m256i dots[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
            for (int t = 0; t < 8; ++t) {
                const __m256i xt = broadcast4(x[b].qs + 4 * t);
                for (int h = 0; h < 2; ++h) {
                    const __m256i q = _mm256_xor_si256(loadHalf(values + 64 * t + 32 * h), flip);
                    const __m256i products =
                        _mm256_maddubs_epi16(_mm256_abs_epi8(q), _mm256_sign_epi8(xt, q));
                    dots[h] = _mm256_add_epi32(dots[h], _mm256_madd_epi16(products, ones));
                }
            }
            const __m256 dx = _mm256_set1_ps(x[b].d);
            for (int h = 0; h < 2; ++h) {
                const __m256 d = _mm256_cvtph_ps(
                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * h)));
                acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots[h]), _mm256_mul_ps(d, dx), acc[h]);
            }
        }
        const std::int64_t valid = std::min<std::int64_t>(kPackRows, nEnd - n0);
        if (valid == kPackRows) {
            _mm256_storeu_ps(y + n0, acc[0]);
            _mm256_storeu_ps(y + n0 + 8, acc[1]);
        } else {
            alignas(32) float lanes[kPackRows];
            _mm256_store_ps(lanes, acc[0]);
            _mm256_store_ps(lanes + 8, acc[1]);
            std::memcpy(y + n0, lanes, std::size_t(valid) * 4);
        }
    }
}

// The 16-row groups of [nBegin, nEnd) as two halves of 8 rows each, against the activation rows
// in L2-sized panels (a prefill chunk's activations are then read from L3 once per panel, not
// once per group), up to 4 at a time: half(std::integral_constant<int, R>, group, h, rows, acc)
// writes acc[0..R) for rows 8h..8h+7 of `group`.
template <class Block, class Half>
void forEachPackedHalf(const void* packed, std::int64_t groupBytes, const void* prepared,
                       std::int64_t blocksPerRow, std::int64_t m, float* y, std::ptrdiff_t yStride,
                       std::int64_t nBegin, std::int64_t nEnd, Half half) {
    constexpr int kRows = 4;
    const auto* groups = static_cast<const std::uint8_t*>(packed);
    const auto* x = static_cast<const Block*>(prepared);
    const std::int64_t panel = std::max<std::int64_t>(
        kRows, kPanelBytes / (blocksPerRow * std::int64_t(sizeof(Block))) / kRows * kRows);
    for (std::int64_t p0 = 0; p0 < m; p0 += panel) {
        const std::int64_t p1 = std::min(m, p0 + panel);
        for (std::int64_t n0 = nBegin; n0 < nEnd; n0 += kPackRows) {
            const std::uint8_t* group = groups + (n0 / kPackRows) * groupBytes;
            for (int h = 0; h < 2 && n0 + 8 * h < nEnd; ++h) {
                const int valid = int(std::min<std::int64_t>(8, nEnd - n0 - 8 * h));
                for (std::int64_t i0 = p0; i0 < p1; i0 += kRows) {
                    const Block* rows[kRows];
                    const int count = int(std::min<std::int64_t>(kRows, p1 - i0));
                    for (int r = 0; r < count; ++r)
                        rows[r] = x + (i0 + r) * blocksPerRow;
                    __m256 acc[kRows];
                    switch (count) {
                        case 4:
                            half(std::integral_constant<int, 4>(), group, h, rows, acc);
                            break;
                        case 3:
                            half(std::integral_constant<int, 3>(), group, h, rows, acc);
                            break;
                        case 2:
                            half(std::integral_constant<int, 2>(), group, h, rows, acc);
                            break;
                        default:
                            half(std::integral_constant<int, 1>(), group, h, rows, acc);
                            break;
                    }
                    for (int r = 0; r < count; ++r) {
                        float* out = y + (i0 + r) * yStride + n0 + 8 * h;
                        if (valid == 8) {
                            _mm256_storeu_ps(out, acc[r]);
                        } else {
                            alignas(32) float lanes[8];
                            _mm256_store_ps(lanes, acc[r]);
                            std::memcpy(out, lanes, std::size_t(valid) * 4);
                        }
                    }
                }
            }
        }
    }
}

}  // namespace

void matmulPackedKAvx2(TensorType weightType, const void* packed, std::int64_t k,
                       const void* prepared, std::int64_t m, float* y, std::ptrdiff_t yStride,
                       std::int64_t nBegin, std::int64_t nEnd) {
    const std::int64_t superBlocks = k / kQKK;
    forEachPackedHalf<BlockQ8K>(
        packed, superBlocks * packedKSuperBlockBytes(weightType), prepared, superBlocks, m, y,
        yStride, nBegin, nEnd,
        [&]<int R>(std::integral_constant<int, R>, const std::uint8_t* group, int h,
                   const BlockQ8K* const* rows,
                   __m256* acc) { packedHalfK<R>(weightType, group, h, superBlocks, rows, acc); });
}

void matmulPackedAvx2(TensorType weightType, const void* packed, std::int64_t k,
                      const void* prepared, std::int64_t m, float* y, std::ptrdiff_t yStride,
                      std::int64_t nBegin, std::int64_t nEnd) {
    const std::int64_t blocks = k / kQK;
    if (weightType == TensorType::Q8_0 && m == 1) {
        return decodeQ8(static_cast<const std::uint8_t*>(packed), blocks,
                        static_cast<const BlockQ8Act*>(prepared), y, nBegin, nEnd);
    }
    forEachPackedHalf<BlockQ8Act>(
        packed, blocks * packedBlockBytes(weightType), prepared, blocks, m, y, yStride, nBegin,
        nEnd,
        [&]<int R>(std::integral_constant<int, R>, const std::uint8_t* group, int h,
                   const BlockQ8Act* const* rows, __m256* acc) {
            switch (weightType) {
                case TensorType::Q8_0:
                    return packedHalfQ8<R>(group, h, blocks, rows, acc);
                case TensorType::Q5_0:
                    return packedHalf<TensorType::Q5_0, R>(group, h, blocks, rows, acc);
                default:
                    return packedHalf<TensorType::Q4_0, R>(group, h, blocks, rows, acc);
            }
        });
}

MatmulFn matmulAvx2(TensorType weightType) {
    return matmulFor<DotMaddubs>(weightType);
}

}  // namespace iris::kernels::cpu
