#pragma once
// The x86 matmul kernels, written once over 256-bit vectors and instantiated per instruction set
// with the one operation that differs: the u8 x s8 dot product of 32 bytes into 8 int32 lanes
// (AVX2: vpmaddubsw + vpmaddwd; AVX-512 VNNI: vpdpbusd), and the same product scaled by int16
// sub-block scales and accumulated (AVX2: vpmaddubsw + vpmaddwd + vpaddd; VNNI: vpmaddubsw +
// vpdpwssd).
//
// Everything here is in an unnamed namespace on purpose: the header is included by translation
// units compiled for different instruction sets, and internal linkage keeps the linker from
// merging their copies (an AVX-512 copy must never serve the AVX2 path).
//
// Each weight row is read once per tile of up to kRowTile activation rows, so prefill (m > 1)
// decodes every weight block once per tile instead of once per token.

#include <algorithm>
#include <cstring>
#include <type_traits>

#include <immintrin.h>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu/x86/horizontal_sum.h"
#include "kernels/matmul.h"

namespace iris::kernels::cpu {
namespace {

constexpr int kRowTile = 4;
constexpr std::int64_t kPanelBytes = 256 << 10;  // a quarter of a Zen 4/5 core's L2

inline float halfToFloat(std::uint16_t h) {
    return _cvtsh_ss(h);
}

inline __m256i load32(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// 32 nibbles of 16 bytes: low nibbles are values 0..15, high nibbles values 16..31.
inline __m256i unpackNibbles16(const std::uint8_t* qs) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i mask = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(bytes, mask);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), mask);
    return _mm256_set_m128i(hi, lo);
}

// Byte j becomes 0x10 where bit j of the 32-bit word is set, else 0 (the 5th bit of Q5 values),
// without AVX-512's byte masks.
inline __m256i fifthBitsAvx2(std::uint32_t bits) {
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int(bits)), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                        0x0101010101010101, 0x0000000000000000));
    const __m256i bitOfByte = _mm256_set1_epi64x(std::int64_t(0x8040201008040201));
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bitOfByte), bitOfByte);
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// ---- per weight type: one weight row against R activation rows -----------------------------
// Each Row<...>::run(w, x[R], blocks, out[R]) writes R dot products.

template <class Dot, int R>
void rowQ8_0(const void* w, const BlockQ8Act* const* x, std::int64_t k, float* out) {
    const auto* wb = static_cast<const BlockQ8_0*>(w);
    __m256 acc[R];
    for (int r = 0; r < R; ++r)
        acc[r] = _mm256_setzero_ps();
    for (std::int64_t b = 0; b < k / kQK; ++b) {
        const __m256i qw = load32(wb[b].qs);
        const __m256i magnitude = _mm256_sign_epi8(qw, qw);  // |w| as unsigned bytes
        const float dw = halfToFloat(wb[b].d);
        for (int r = 0; r < R; ++r) {
            // sign(w) * x keeps the product's sign; activations are within [-127, 127].
            const __m256i signedX = _mm256_sign_epi8(load32(x[r][b].qs), qw);
            const __m256 dot = _mm256_cvtepi32_ps(Dot::run(magnitude, signedX));
            acc[r] = _mm256_fmadd_ps(dot, _mm256_set1_ps(dw * x[r][b].d), acc[r]);
        }
    }
    for (int r = 0; r < R; ++r)
        out[r] = horizontalSum(acc[r]);
}

// Q4_0, Q4_1, Q5_0, Q5_1: unsigned 4/5-bit values; `offset` (8, 16 or 0) and the block minimum
// are applied through the activation block sums.
template <class Block, bool kFiveBit, bool kHasMin, int kOffset, class Dot, int R>
void rowLegacy(const void* w, const BlockQ8Act* const* x, std::int64_t k, float* out) {
    const auto* wb = static_cast<const Block*>(w);
    __m256 acc[R];
    float correction[R];
    for (int r = 0; r < R; ++r) {
        acc[r] = _mm256_setzero_ps();
        correction[r] = 0.0f;
    }
    for (std::int64_t b = 0; b < k / kQK; ++b) {
        __m256i q = unpackNibbles16(wb[b].qs);
        if constexpr (kFiveBit) {
            std::uint32_t bits;
            std::memcpy(&bits, wb[b].qh, 4);
            q = _mm256_or_si256(q, Dot::fifthBits(bits));
        }
        const float dw = halfToFloat(wb[b].d);
        float mw = 0.0f;
        if constexpr (kHasMin) mw = halfToFloat(wb[b].m);
        for (int r = 0; r < R; ++r) {
            const BlockQ8Act& xb = x[r][b];
            const __m256 dot = _mm256_cvtepi32_ps(Dot::run(q, load32(xb.qs)));
            acc[r] = _mm256_fmadd_ps(dot, _mm256_set1_ps(dw * xb.d), acc[r]);
            const float xSum = xb.d * float(xb.sum);
            if constexpr (kHasMin) {
                correction[r] += mw * xSum;
            } else {
                correction[r] -= float(kOffset) * dw * xSum;
            }
        }
    }
    for (int r = 0; r < R; ++r)
        out[r] = horizontalSum(acc[r]) + correction[r];
}

// K types against q8_K activations: each sub-block's u8 x s8 products (pairs summed to int16 by
// vpmaddubsw) are multiplied by the integer sub-block scale and accumulated in int32 across the
// whole super-block (Dot::scaled), then converted to float once.
template <bool kFiveBit, class Dot, int R>
void rowQ45_K(const void* w, const BlockQ8K* const* x, std::int64_t k, float* out) {
    using Block = std::conditional_t<kFiveBit, BlockQ5_K, BlockQ4_K>;
    const auto* wb = static_cast<const Block*>(w);
    const __m256i lowMask = _mm256_set1_epi8(0x0F);
    __m256 acc[R];
    float minimums[R];
    for (int r = 0; r < R; ++r) {
        acc[r] = _mm256_setzero_ps();
        minimums[r] = 0.0f;
    }
    for (std::int64_t i = 0; i < k / kQKK; ++i) {
        const float d = halfToFloat(wb[i].d), dmin = halfToFloat(wb[i].dmin);
        int scale[8], minimum[8];
        for (int s = 0; s < 8; ++s)
            scaleMinK4(s, wb[i].scales, scale[s], minimum[s]);
        __m256i q[8];
        __m256i high = _mm256_setzero_si256();
        if constexpr (kFiveBit) high = load32(wb[i].qh);
        for (int pair = 0; pair < 4; ++pair) {
            const __m256i bytes = load32(wb[i].qs + 32 * pair);
            q[2 * pair] = _mm256_and_si256(bytes, lowMask);
            q[2 * pair + 1] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), lowMask);
            if constexpr (kFiveBit) {
                const __m256i one = _mm256_set1_epi8(1);
                for (int h = 0; h < 2; ++h) {
                    const __m256i bit =
                        _mm256_and_si256(_mm256_srli_epi16(high, 2 * pair + h), one);
                    q[2 * pair + h] = _mm256_or_si256(q[2 * pair + h], _mm256_slli_epi16(bit, 4));
                }
            }
        }
        for (int r = 0; r < R; ++r) {
            const BlockQ8K& xb = x[r][i];
            __m256i sum = _mm256_setzero_si256();
            int mins = 0;
            for (int s = 0; s < 8; ++s) {
                sum = Dot::scaled(sum, q[s], load32(xb.qs + 32 * s),
                                  _mm256_set1_epi16(std::int16_t(scale[s])));
                mins += minimum[s] * (xb.bsums[2 * s] + xb.bsums[2 * s + 1]);
            }
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(d * xb.d), acc[r]);
            minimums[r] += dmin * xb.d * float(mins);
        }
    }
    for (int r = 0; r < R; ++r)
        out[r] = horizontalSum(acc[r]) - minimums[r];
}

template <class Dot, int R>
void rowQ6_K(const void* w, const BlockQ8K* const* x, std::int64_t k, float* out) {
    const auto* wb = static_cast<const BlockQ6_K*>(w);
    const __m256i lowMask = _mm256_set1_epi8(0x0F), twoBits = _mm256_set1_epi8(0x03);
    __m256 acc[R];
    float offsets[R];
    for (int r = 0; r < R; ++r) {
        acc[r] = _mm256_setzero_ps();
        offsets[r] = 0.0f;
    }
    for (std::int64_t i = 0; i < k / kQKK; ++i) {
        const float d = halfToFloat(wb[i].d);
        __m256i q[8];
        for (int half = 0; half < 2; ++half) {
            const __m256i ql0 = load32(wb[i].ql + 64 * half);
            const __m256i ql1 = load32(wb[i].ql + 64 * half + 32);
            const __m256i qh = load32(wb[i].qh + 32 * half);
            const auto highBits = [&](int shift) {
                return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, shift), twoBits),
                                         4);
            };
            q[4 * half + 0] = _mm256_or_si256(_mm256_and_si256(ql0, lowMask), highBits(0));
            q[4 * half + 1] = _mm256_or_si256(_mm256_and_si256(ql1, lowMask), highBits(2));
            q[4 * half + 2] =
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), lowMask), highBits(4));
            q[4 * half + 3] =
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), lowMask), highBits(6));
        }
        // Block b (32 values) has scales[2b] for its first 16 values (int16 lanes 0-7 after
        // vpmaddubsw) and scales[2b + 1] for the rest.
        __m256i scales[8];
        for (int b = 0; b < 8; ++b) {
            scales[b] = _mm256_set_m128i(_mm_set1_epi16(wb[i].scales[2 * b + 1]),
                                         _mm_set1_epi16(wb[i].scales[2 * b]));
        }
        for (int r = 0; r < R; ++r) {
            const BlockQ8K& xb = x[r][i];
            __m256i sum = _mm256_setzero_si256();
            int offset = 0;
            for (int b = 0; b < 8; ++b)
                sum = Dot::scaled(sum, q[b], load32(xb.qs + 32 * b), scales[b]);
            for (int g = 0; g < 16; ++g)
                offset += wb[i].scales[g] * xb.bsums[g];
            const float dx = d * xb.d;
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(dx), acc[r]);
            offsets[r] += 32.0f * dx * float(offset);  // the values are stored as q + 32
        }
    }
    for (int r = 0; r < R; ++r)
        out[r] = horizontalSum(acc[r]) - offsets[r];
}

// Float weights: 8 values per step, f16/bf16 widened to f32 first.
enum class FloatKind { F32, F16, BF16 };

template <FloatKind kKind>
inline __m256 loadWeights8(const void* w, std::int64_t j) {
    if constexpr (kKind == FloatKind::F32) {
        return _mm256_loadu_ps(static_cast<const float*>(w) + j);
    } else {
        const __m128i h = _mm_loadu_si128(
            reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(w) + j));
        if constexpr (kKind == FloatKind::F16) {
            return _mm256_cvtph_ps(h);
        } else {
            return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
        }
    }
}

template <FloatKind kKind>
inline float weightAt(const void* w, std::int64_t j) {
    if constexpr (kKind == FloatKind::F32) {
        return static_cast<const float*>(w)[j];
    } else {
        const std::uint16_t h = static_cast<const std::uint16_t*>(w)[j];
        if constexpr (kKind == FloatKind::F16) return halfToFloat(h);
        std::uint32_t bits = std::uint32_t(h) << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
}

template <FloatKind kKind, int R>
void rowFloat(const void* w, const float* const* x, std::int64_t k, float* out) {
    __m256 acc[R];
    for (int r = 0; r < R; ++r)
        acc[r] = _mm256_setzero_ps();
    std::int64_t j = 0;
    for (; j + 8 <= k; j += 8) {
        const __m256 wv = loadWeights8<kKind>(w, j);
        for (int r = 0; r < R; ++r)
            acc[r] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x[r] + j), acc[r]);
    }
    for (int r = 0; r < R; ++r) {
        float sum = horizontalSum(acc[r]);
        for (std::int64_t t = j; t < k; ++t)
            sum += weightAt<kKind>(w, t) * x[r][t];
        out[r] = sum;
    }
}

// ---- the MatmulFn shape: weight rows [nBegin, nEnd) against all m activation rows ------------

template <class Act, template <int> class RowKernel>
void matmulTiled(const void* w, std::int64_t wRowBytes, std::int64_t k, const void* prepared,
                 std::int64_t xRowBytes, std::int64_t m, float* y, std::ptrdiff_t yStride,
                 std::int64_t nBegin, std::int64_t nEnd) {
    const auto* wBytes = static_cast<const std::uint8_t*>(w);
    const auto* xBytes = static_cast<const std::uint8_t*>(prepared);
    // Activation rows are taken in panels that stay in L2 while every weight row of this thread's
    // range passes over them; without the panels, a long prompt's activations would be streamed
    // from L3 once per weight row.
    const std::int64_t panel = std::max<std::int64_t>(
        kRowTile, kPanelBytes / std::max<std::int64_t>(1, xRowBytes) / kRowTile * kRowTile);
    for (std::int64_t p0 = 0; p0 < m; p0 += panel) {
        const std::int64_t p1 = std::min(m, p0 + panel);
        for (std::int64_t n = nBegin; n < nEnd; ++n) {
            const void* wRow = wBytes + n * wRowBytes;
            for (std::int64_t i0 = p0; i0 < p1; i0 += kRowTile) {
                const Act* rows[kRowTile];
                const int count = int(std::min<std::int64_t>(kRowTile, p1 - i0));
                for (int r = 0; r < count; ++r)
                    rows[r] = reinterpret_cast<const Act*>(xBytes + (i0 + r) * xRowBytes);
                float out[kRowTile];
                switch (count) {
                    case 4:
                        RowKernel<4>::run(wRow, rows, k, out);
                        break;
                    case 3:
                        RowKernel<3>::run(wRow, rows, k, out);
                        break;
                    case 2:
                        RowKernel<2>::run(wRow, rows, k, out);
                        break;
                    default:
                        RowKernel<1>::run(wRow, rows, k, out);
                        break;
                }
                for (int r = 0; r < count; ++r)
                    y[(i0 + r) * yStride + n] = out[r];
            }
        }
    }
}

// Adapts a row function template to the RowKernel<R>::run shape matmulTiled expects.
template <class Dot>
struct Kernels {
    template <int R>
    struct Q8_0 {
        static void run(const void* w, const BlockQ8Act* const* x, std::int64_t k, float* out) {
            rowQ8_0<Dot, R>(w, x, k, out);
        }
    };
    template <int R>
    struct Q4_0 {
        static void run(const void* w, const BlockQ8Act* const* x, std::int64_t k, float* out) {
            rowLegacy<BlockQ4_0, false, false, 8, Dot, R>(w, x, k, out);
        }
    };
    template <int R>
    struct Q4_1 {
        static void run(const void* w, const BlockQ8Act* const* x, std::int64_t k, float* out) {
            rowLegacy<BlockQ4_1, false, true, 0, Dot, R>(w, x, k, out);
        }
    };
    template <int R>
    struct Q5_0 {
        static void run(const void* w, const BlockQ8Act* const* x, std::int64_t k, float* out) {
            rowLegacy<BlockQ5_0, true, false, 16, Dot, R>(w, x, k, out);
        }
    };
    template <int R>
    struct Q5_1 {
        static void run(const void* w, const BlockQ8Act* const* x, std::int64_t k, float* out) {
            rowLegacy<BlockQ5_1, true, true, 0, Dot, R>(w, x, k, out);
        }
    };
    template <int R>
    struct Q4_K {
        static void run(const void* w, const BlockQ8K* const* x, std::int64_t k, float* out) {
            rowQ45_K<false, Dot, R>(w, x, k, out);
        }
    };
    template <int R>
    struct Q5_K {
        static void run(const void* w, const BlockQ8K* const* x, std::int64_t k, float* out) {
            rowQ45_K<true, Dot, R>(w, x, k, out);
        }
    };
    template <int R>
    struct Q6_K {
        static void run(const void* w, const BlockQ8K* const* x, std::int64_t k, float* out) {
            rowQ6_K<Dot, R>(w, x, k, out);
        }
    };
};

template <FloatKind kKind>
struct FloatKernels {
    template <int R>
    struct Row {
        static void run(const void* w, const float* const* x, std::int64_t k, float* out) {
            rowFloat<kKind, R>(w, x, k, out);
        }
    };
};

template <TensorType kType, class Act, template <int> class RowKernel>
void matmulOf(const void* w, std::int64_t k, const void* prepared, std::int64_t m, float* y,
              std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    matmulTiled<Act, RowKernel>(w, rowBytes(kType, k), k, prepared, preparedRowBytes(kType, k), m,
                                y, yStride, nBegin, nEnd);
}

// The function table for one instruction set.
template <class Dot>
MatmulFn matmulFor(TensorType type) {
    using K = Kernels<Dot>;
    switch (type) {
        case TensorType::F32:
            return matmulOf<TensorType::F32, float, FloatKernels<FloatKind::F32>::Row>;
        case TensorType::F16:
            return matmulOf<TensorType::F16, float, FloatKernels<FloatKind::F16>::Row>;
        case TensorType::BF16:
            return matmulOf<TensorType::BF16, float, FloatKernels<FloatKind::BF16>::Row>;
        case TensorType::Q8_0:
            return matmulOf<TensorType::Q8_0, BlockQ8Act, K::template Q8_0>;
        case TensorType::Q4_0:
            return matmulOf<TensorType::Q4_0, BlockQ8Act, K::template Q4_0>;
        case TensorType::Q4_1:
            return matmulOf<TensorType::Q4_1, BlockQ8Act, K::template Q4_1>;
        case TensorType::Q5_0:
            return matmulOf<TensorType::Q5_0, BlockQ8Act, K::template Q5_0>;
        case TensorType::Q5_1:
            return matmulOf<TensorType::Q5_1, BlockQ8Act, K::template Q5_1>;
        case TensorType::Q4_K:
            return matmulOf<TensorType::Q4_K, BlockQ8K, K::template Q4_K>;
        case TensorType::Q5_K:
            return matmulOf<TensorType::Q5_K, BlockQ8K, K::template Q5_K>;
        case TensorType::Q6_K:
            return matmulOf<TensorType::Q6_K, BlockQ8K, K::template Q6_K>;
        default:
            return nullptr;
    }
}

}  // namespace
}  // namespace iris::kernels::cpu
