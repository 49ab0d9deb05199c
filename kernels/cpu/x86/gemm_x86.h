#pragma once
// The x86 gemm, written once over a vector-ops struct and instantiated per instruction set
// (gemm_avx2.cpp: 8-lane __m256, 6 x 16 tiles; gemm_avx512.cpp: 16-lane __m512, 12 x 32 tiles).
//
// Blocking (BLIS order, with x read in place as llama.cpp's tinyBLAS does):
//   for each block of kNcFewRows / kNcManyRows output columns (W rows)
//     for each block of kKc of k (the first block writes y, plus the bias; later ones add)
//       pack W[n-block, k-block] into panels of NR columns: for every j, the NR weights of the
//       panel's columns side by side, converted to f32 once (f16/bf16 are widened here, never in
//       the inner loop) and zero-padded past nEnd
//       for each block of kMc rows of x (they stay in L2 while all panels pass over them)
//         for each panel (kKc x NR floats: stays in L1 while the rows below pass under it)
//           for each MR rows: the micro-kernel, MR x NR sums in 2 * MR vector registers, one
//           broadcast of x and two weight vectors per j
// x is not packed: each micro-kernel call reads MR rows of kKc contiguous floats, so packing
// would cost about as much as the arithmetic for the narrow products of attention (N = a
// window's 64 keys). Row tails (m % MR) run a micro-kernel instantiated for fewer rows; column
// tails compute the zero-padded panel and store only the columns that exist.
//
// Everything here is in an unnamed namespace on purpose: the header is included by translation
// units compiled for different instruction sets, and internal linkage keeps the linker from
// merging their copies (an AVX-512 copy must never serve the AVX2 path). The same holds for the
// per-thread packing buffer: one per translation unit and thread.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <immintrin.h>

#include "kernels/cpu/aligned_buffer.h"
#include "kernels/tensor_type.h"

namespace iris::kernels::cpu {
namespace {

constexpr std::int64_t kKc = 256;  // k per packed block: an NR-wide panel is 16/32 KiB (L1)
// gemmAvx512's tile rows and rows per L2 block (gemmAvx2As12x32 runs the same geometry).
constexpr int kAvx512Mr = 12;
constexpr std::int64_t kAvx512Mc = 144;

// Columns per packed block. With few rows of x (up to a few MiB per k block), 256 columns
// (256 KiB of f32 panels) stay in L2 next to the block of x rows, and re-reading x for every
// block of columns is cheap. With thousands of rows, x itself comes from DRAM on each re-read,
// and BLIS's choice of a wide block in L3 wins instead. Measured on Zen 2, one core: m = 512
// 92 vs 82 GFLOP/s (256 vs 4096 columns), m = 5336 77-83 vs 82-92 GFLOP/s.
constexpr std::int64_t kNcFewRows = 256;
constexpr std::int64_t kNcManyRows = 4096;
constexpr std::int64_t kManyRows = 2048;

// The packing space of this thread (aligned_buffer.h).
float* packBuffer(std::size_t floats) {
    thread_local AlignedBuffer<float> buffer;
    return buffer.get(floats);
}

// ---- packing W ---------------------------------------------------------------------------------

enum class WeightKind { F32, F16, BF16 };

template <WeightKind kKind>
inline __m256 loadWeights8(const void* w, std::ptrdiff_t index) {
    if constexpr (kKind == WeightKind::F32) {
        return _mm256_loadu_ps(static_cast<const float*>(w) + index);
    } else {
        const __m128i h = _mm_loadu_si128(
            reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(w) + index));
        if constexpr (kKind == WeightKind::F16) {
            return _mm256_cvtph_ps(h);
        } else {
            return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
        }
    }
}

template <WeightKind kKind>
inline float weightAt(const void* w, std::ptrdiff_t index) {
    if constexpr (kKind == WeightKind::F32) {
        return static_cast<const float*>(w)[index];
    } else {
        const std::uint16_t h = static_cast<const std::uint16_t*>(w)[index];
        if constexpr (kKind == WeightKind::F16) {
            return _cvtsh_ss(h);
        } else {
            return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(int(std::uint32_t(h) << 16))));
        }
    }
}

// r[i] holds 8 consecutive values of row i; afterwards r[j] holds value j of the 8 rows.
inline void transpose8x8(__m256 r[8]) {
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// Packs W rows [n0, n0 + cols) (cols <= kNr) over k range [p0, p0 + kc) into one panel:
// panel[j * kNr + c] = W[n0 + c, p0 + j], 0 for c >= cols.
template <WeightKind kKind, int kNr>
void packPanel(const void* w, std::ptrdiff_t wStride, std::int64_t n0, int cols, std::int64_t p0,
               std::int64_t kc, float* panel) {
    static_assert(kNr % 8 == 0);
    for (int g = 0; g < kNr; g += 8) {
        const int valid = std::clamp(cols - g, 0, 8);
        const std::ptrdiff_t row0 = (n0 + g) * wStride + p0;
        std::int64_t j = 0;
        if (valid == 8) {
            for (; j + 8 <= kc; j += 8) {
                __m256 r[8];
                for (int c = 0; c < 8; ++c)
                    r[c] = loadWeights8<kKind>(w, row0 + c * wStride + j);
                transpose8x8(r);
                for (int q = 0; q < 8; ++q)
                    _mm256_store_ps(panel + (j + q) * kNr + g, r[q]);
            }
        }
        for (; j < kc; ++j) {
            float* dst = panel + j * kNr + g;
            for (int c = 0; c < 8; ++c)
                dst[c] = c < valid ? weightAt<kKind>(w, row0 + c * wStride + j) : 0.0f;
        }
    }
}

// ---- the micro-kernel --------------------------------------------------------------------------

// R rows of x (R <= MR) times one packed panel of kNr = 2 * Ops::kWidth columns, over kc values
// of k. `first`: this is the first k block, so y is written (plus bias when not null: bias points
// at the panel's first column); otherwise the sums are added to y.
template <class Ops, int R>
void microKernel(std::int64_t kc, const float* x, std::ptrdiff_t xStride, const float* panel,
                 float* y, std::ptrdiff_t yStride, int cols, bool first, const float* bias) {
    using V = typename Ops::V;
    constexpr int kW = Ops::kWidth, kNr = 2 * kW;
    V acc0[R], acc1[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        acc0[r] = Ops::zero();
        acc1[r] = Ops::zero();
    }
    const float* rows[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        rows[r] = x + r * xStride;
        // Fetch the y tile for writing while the sums are computed. Without it, with small k
        // (attention scores, k = 80) the stores wait on memory at the end, and later loads of
        // the panel that match a waiting store's address modulo 4 KiB wait with them: 30% of
        // the time on Zen 2, depending on how y and the panel happen to be aligned.
        __builtin_prefetch(y + r * yStride, 1, 3);
        __builtin_prefetch(y + r * yStride + kNr - 1, 1, 3);
    }
#pragma GCC unroll 4
    for (std::int64_t j = 0; j < kc; ++j) {
        const V b0 = Ops::load(panel + j * kNr), b1 = Ops::load(panel + j * kNr + kW);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const V a = Ops::broadcast(rows[r] + j);
            acc0[r] = Ops::fmadd(a, b0, acc0[r]);
            acc1[r] = Ops::fmadd(a, b1, acc1[r]);
        }
    }
    if (cols == kNr) {
        // The bias is read once, before any store: loads of it after stores to y would have to
        // wait for the processor to rule out aliasing (measured 20% slower at k = 80).
        const bool withBias = first && bias != nullptr;
        const V bias0 = withBias ? Ops::loadu(bias) : Ops::zero();
        const V bias1 = withBias ? Ops::loadu(bias + kW) : Ops::zero();
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            float* out = y + r * yStride;
            V v0 = acc0[r], v1 = acc1[r];
            if (!first) {
                v0 = Ops::add(v0, Ops::loadu(out));
                v1 = Ops::add(v1, Ops::loadu(out + kW));
            } else if (withBias) {
                v0 = Ops::add(v0, bias0);
                v1 = Ops::add(v1, bias1);
            }
            Ops::storeu(out, v0);
            Ops::storeu(out + kW, v1);
        }
        return;
    }
    alignas(64) float tile[kNr];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        Ops::store(tile, acc0[r]);
        Ops::store(tile + kW, acc1[r]);
        float* out = y + r * yStride;
        for (int c = 0; c < cols; ++c) {
            const float base = !first ? out[c] : bias != nullptr ? bias[c] : 0.0f;
            out[c] = base + tile[c];
        }
    }
}

template <class Ops, int kMr, int R = kMr>
void microKernelRows(int rows, std::int64_t kc, const float* x, std::ptrdiff_t xStride,
                     const float* panel, float* y, std::ptrdiff_t yStride, int cols, bool first,
                     const float* bias) {
    if constexpr (R >= 1) {
        if (rows == R) {
            microKernel<Ops, R>(kc, x, xStride, panel, y, yStride, cols, first, bias);
        } else {
            microKernelRows<Ops, kMr, R - 1>(rows, kc, x, xStride, panel, y, yStride, cols, first,
                                             bias);
        }
    }
}

// ---- the driver --------------------------------------------------------------------------------

template <class Ops, int kMr, std::int64_t kMc, WeightKind kKind>
void gemmBlocked(const void* w, std::ptrdiff_t wStride, std::int64_t k, const float* x,
                 std::ptrdiff_t xStride, std::int64_t m, const float* bias, float* y,
                 std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    constexpr int kNr = 2 * Ops::kWidth;
    static_assert(kNcFewRows % kNr == 0 && kNcManyRows % kNr == 0 && kMc % kMr == 0);
    const std::int64_t nc = m >= kManyRows ? kNcManyRows : kNcFewRows;
    const std::int64_t blockCols = std::min(nc, (nEnd - nBegin + kNr - 1) / kNr * kNr);
    float* packed = packBuffer(std::size_t(blockCols * std::min(kKc, k)));
    for (std::int64_t n0 = nBegin; n0 < nEnd; n0 += nc) {
        const std::int64_t n1 = std::min(nEnd, n0 + nc);
        for (std::int64_t p0 = 0; p0 < k; p0 += kKc) {
            const std::int64_t kc = std::min(kKc, k - p0);
            const bool first = p0 == 0;
            for (std::int64_t c0 = n0; c0 < n1; c0 += kNr) {
                packPanel<kKind, kNr>(w, wStride, c0, int(std::min<std::int64_t>(kNr, n1 - c0)), p0,
                                      kc, packed + (c0 - n0) * kc);
            }
            for (std::int64_t i0 = 0; i0 < m; i0 += kMc) {
                const std::int64_t i1 = std::min(m, i0 + kMc);
                for (std::int64_t c0 = n0; c0 < n1; c0 += kNr) {
                    const float* panel = packed + (c0 - n0) * kc;
                    const int cols = int(std::min<std::int64_t>(kNr, n1 - c0));
                    const float* panelBias = first && bias != nullptr ? bias + c0 : nullptr;
                    for (std::int64_t i = i0; i < i1; i += kMr) {
                        const int rows = int(std::min<std::int64_t>(kMr, i1 - i));
                        const float* xRows = x + i * xStride + p0;
                        float* yRows = y + i * yStride + c0;
                        if (rows == kMr) {
                            microKernel<Ops, kMr>(kc, xRows, xStride, panel, yRows, yStride, cols,
                                                  first, panelBias);
                        } else {
                            microKernelRows<Ops, kMr>(rows, kc, xRows, xStride, panel, yRows,
                                                      yStride, cols, first, panelBias);
                        }
                    }
                }
            }
        }
    }
}

template <class Ops, int kMr, std::int64_t kMc>
void gemmFor(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
             const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias, float* y,
             std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    if (m <= 0 || nEnd <= nBegin) return;
    if (k <= 0) {
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t n = nBegin; n < nEnd; ++n)
                y[i * yStride + n] = bias != nullptr ? bias[n] : 0.0f;
        return;
    }
    switch (weightType) {
        case TensorType::F16:
            gemmBlocked<Ops, kMr, kMc, WeightKind::F16>(w, wStride, k, x, xStride, m, bias, y,
                                                        yStride, nBegin, nEnd);
            break;
        case TensorType::BF16:
            gemmBlocked<Ops, kMr, kMc, WeightKind::BF16>(w, wStride, k, x, xStride, m, bias, y,
                                                         yStride, nBegin, nEnd);
            break;
        default:
            gemmBlocked<Ops, kMr, kMc, WeightKind::F32>(w, wStride, k, x, xStride, m, bias, y,
                                                        yStride, nBegin, nEnd);
            break;
    }
}

}  // namespace
}  // namespace iris::kernels::cpu
