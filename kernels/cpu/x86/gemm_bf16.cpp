// GemmPrecision::Bf16 on x86: AMX tiles (gemmBf16Amx) and AVX512-BF16 dot products
// (gemmBf16Avx512, for processors with AVX512-BF16 but no AMX: AMD Zen 4 and 5). Compiled with the
// AVX-512 set plus -mavx512bf16 -mamx-tile -mamx-bf16; each variant only uses its own instructions
// and is only called when the CPU has them (kernels/gemm.cpp).
//
// AMX: one TDPBF16PS multiplies a 16 x 32 bf16 tile of x by a 32 x 16 bf16 tile of W^T into a
// 16 x 16 f32 tile: 16 K multiply-adds, 16 times the work of an AVX-512 FMA. The eight tile
// registers hold a 32 x 32 block of y (tiles 0-3), two tiles of x rows (4, 5) and two of W
// columns (6, 7), so each tile loaded feeds two products.
// AVX512-BF16: VDPBF16PS adds, in each of 16 f32 lanes, the products of a pair of bf16 values: a
// 12 x 32 block of y in 24 registers (as the f32 kernel, gemm_x86.h), two k values per
// instruction.
//
// Both read operands converted to bf16 once per call into two per-thread buffers:
//   x rows: row-major, k padded with zeros to whole 32-value tiles, in blocks of rows that stay
//           in L2 (rows past m are zero and never stored);
//   W:      per group of 16 columns, for each pair of k values (2p, 2p + 1) 16 dwords holding
//           the pair for each column (AMX's "VNNI" layout: 32 pairs are one 1 KiB tile; for
//           VDPBF16PS one vector); columns past nEnd are zero. Built with a 16 x 16 transpose.
// Each call reconverts W: the products here have thousands of rows (the vision tower, attention
// over a whole image), so that costs a fraction of a percent.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

#include <immintrin.h>

#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/gemm_internal.h"

namespace iris::kernels::cpu {
namespace {

constexpr int kTileRows = 16;     // rows of an x tile and of a y tile
constexpr int kTileK = 32;        // bf16 values of k per x tile row (64 bytes)
constexpr int kTileCols = 16;     // columns of W per W tile and of y per y tile
constexpr int kTileValues = 512;  // bf16 values in one x or W tile (1 KiB)
// Bytes of x rows converted at a time: with the 32 columns of W a block of y needs, they stay in
// the 2 MiB L2 of the processors that have AMX.
constexpr std::int64_t kRowBlockBytes = 512 * 1024;

// The tile shapes (palette 1): all eight 16 rows x 64 bytes.
struct alignas(64) TileConfig {
    std::uint8_t palette = 1;
    std::uint8_t startRow = 0;
    std::uint8_t reserved[14] = {};
    std::uint16_t columnBytes[16] = {};
    std::uint8_t rows[16] = {};
};

enum class WeightKind { F32, F16, BF16 };

// The first `valid` of 16 lanes (none for valid <= 0).
__mmask16 tailMask16(std::int64_t valid) {
    if (valid <= 0) return 0;
    return valid >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << valid) - 1u);
}

// 32 consecutive f32 values (the first `valid`, zeros after) rounded to bf16, to nearest even.
__m512i convertFloats32(const float* p, std::int64_t valid) {
    const __m512 lo = _mm512_maskz_loadu_ps(tailMask16(valid), p);
    const __m512 hi = _mm512_maskz_loadu_ps(tailMask16(valid - 16), p + 16);
    return std::bit_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
}

// 32 consecutive values of a W row as bf16 (zeros past `valid`).
template <WeightKind kKind>
__m512i loadWeights32(const void* w, std::ptrdiff_t index, std::int64_t valid) {
    if constexpr (kKind == WeightKind::F32) {
        return convertFloats32(static_cast<const float*>(w) + index, valid);
    } else {
        const auto* p = static_cast<const std::uint16_t*>(w) + index;
        const __mmask32 mask = valid >= 32 ? __mmask32(0xFFFFFFFF) : __mmask32((1u << valid) - 1u);
        const __m512i h = _mm512_maskz_loadu_epi16(mask, p);
        if constexpr (kKind == WeightKind::BF16) {
            return h;
        } else {
            const __m512 lo = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
            const __m512 hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
            return std::bit_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
        }
    }
}

// r[c] holds 16 dwords of row c; afterwards r[d] holds dword d of the 16 rows.
void transpose16x16(__m512i r[16]) {
    __m512i t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    // In each 128-bit lane L: u[4g + e] = dword 4L + e of rows 4g .. 4g + 3.
    for (int g = 0; g < 4; ++g) {
        const __m512i* s = t + 4 * g;
        u[4 * g + 0] = _mm512_unpacklo_epi64(s[0], s[2]);
        u[4 * g + 1] = _mm512_unpackhi_epi64(s[0], s[2]);
        u[4 * g + 2] = _mm512_unpacklo_epi64(s[1], s[3]);
        u[4 * g + 3] = _mm512_unpackhi_epi64(s[1], s[3]);
    }
    // v[8h + e]: dwords e and 8 + e of rows 8h .. 8h + 7 (lanes 0 and 2 of u); v[8h + 4 + e]:
    // dwords 4 + e and 12 + e (lanes 1 and 3).
    __m512i v[16];
    for (int h = 0; h < 2; ++h) {
        for (int e = 0; e < 4; ++e) {
            const __m512i a = u[8 * h + e], b = u[8 * h + 4 + e];
            v[8 * h + e] = _mm512_shuffle_i32x4(a, b, 0x88);
            v[8 * h + 4 + e] = _mm512_shuffle_i32x4(a, b, 0xDD);
        }
    }
    // Lanes 0 and 2 of v[e] (rows 0-7) then of v[8 + e] (rows 8-15): dword e of all 16 rows.
    for (int e = 0; e < 4; ++e) {
        r[e] = _mm512_shuffle_i32x4(v[e], v[8 + e], 0x88);
        r[e + 8] = _mm512_shuffle_i32x4(v[e], v[8 + e], 0xDD);
        r[e + 4] = _mm512_shuffle_i32x4(v[4 + e], v[12 + e], 0x88);
        r[e + 12] = _mm512_shuffle_i32x4(v[4 + e], v[12 + e], 0xDD);
    }
}

// W rows [n0, n0 + cols) (cols <= 16) over all of k into kBlocks tiles at `out`.
template <WeightKind kKind>
void packWeightGroup(const void* w, std::ptrdiff_t wStride, std::int64_t n0, int cols,
                     std::int64_t k, std::int64_t kBlocks, std::uint16_t* out) {
    for (std::int64_t kb = 0; kb < kBlocks; ++kb) {
        const std::int64_t j = kb * kTileK;
        __m512i r[16];
        for (int c = 0; c < kTileCols; ++c) {
            r[c] = c < cols ? loadWeights32<kKind>(w, (n0 + c) * wStride + j, k - j)
                            : _mm512_setzero_si512();
        }
        transpose16x16(r);
        std::uint16_t* tile = out + kb * kTileValues;
        for (int pair = 0; pair < kTileK / 2; ++pair)
            _mm512_store_si512(tile + pair * kTileK, r[pair]);
    }
}

template <WeightKind kKind>
void packWeights(const void* w, std::ptrdiff_t wStride, std::int64_t k, std::int64_t kBlocks,
                 std::int64_t nBegin, std::int64_t nEnd, std::int64_t groups,
                 std::uint16_t* packed) {
    for (std::int64_t g = 0; g < groups; ++g) {
        const std::int64_t n0 = nBegin + g * kTileCols;
        const int cols = int(std::clamp<std::int64_t>(nEnd - n0, 0, kTileCols));
        packWeightGroup<kKind>(w, wStride, n0, cols, k, kBlocks,
                               packed + g * kBlocks * kTileValues);
    }
}

// x rows [i0, i0 + rows) into `out` (stride kPadded), zero rows up to paddedRows.
void packRows(const float* x, std::ptrdiff_t xStride, std::int64_t i0, std::int64_t rows,
              std::int64_t paddedRows, std::int64_t k, std::int64_t kPadded, std::uint16_t* out) {
    for (std::int64_t i = 0; i < paddedRows; ++i) {
        std::uint16_t* dst = out + i * kPadded;
        for (std::int64_t j = 0; j < kPadded; j += kTileK) {
            const __m512i v = i < rows ? convertFloats32(x + (i0 + i) * xStride + j, k - j)
                                       : _mm512_setzero_si512();
            _mm512_store_si512(dst + j, v);
        }
    }
}

// y rows [row0, row0 + rows) and columns [col0, col0 + cols) from a 32 x 32 block.
void storeBlock(const float* block, std::int64_t rows, std::int64_t cols, const float* bias,
                float* y, std::ptrdiff_t yStride) {
    const __mmask16 lo = tailMask16(cols), hi = tailMask16(cols - 16);
    const __m512 bias0 = bias != nullptr ? _mm512_maskz_loadu_ps(lo, bias) : _mm512_setzero_ps();
    const __m512 bias1 =
        bias != nullptr ? _mm512_maskz_loadu_ps(hi, bias + 16) : _mm512_setzero_ps();
    for (std::int64_t r = 0; r < rows; ++r) {
        const float* src = block + r * 2 * kTileCols;
        _mm512_mask_storeu_ps(y + r * yStride, lo, _mm512_add_ps(_mm512_load_ps(src), bias0));
        _mm512_mask_storeu_ps(y + r * yStride + 16, hi,
                              _mm512_add_ps(_mm512_load_ps(src + 16), bias1));
    }
}

// Both operands converted for one call: W for columns [nBegin, nEnd) whole, x rows a block at a
// time into `x` (blockRows rows, padded to whole 32-row tiles).
struct Operands {
    std::int64_t kBlocks, kPadded;  // 32-value tiles of k; k rounded up to them
    std::int64_t pairs;             // 32-column blocks of y: pairs of 16-column W groups
    std::int64_t blockRows;         // x rows converted at a time (a multiple of 32)
    const std::uint16_t* w;         // 2 * pairs groups of kBlocks tiles
    std::uint16_t* x;               // blockRows x kPadded
};

template <WeightKind kKind>
Operands convertOperands(const void* w, std::ptrdiff_t wStride, std::int64_t k, std::int64_t m,
                         std::int64_t nBegin, std::int64_t nEnd) {
    Operands ops{};
    ops.kBlocks = (k + kTileK - 1) / kTileK;
    ops.kPadded = ops.kBlocks * kTileK;
    ops.pairs = (nEnd - nBegin + 2 * kTileCols - 1) / (2 * kTileCols);
    ops.blockRows = std::clamp<std::int64_t>(
        kRowBlockBytes / std::max<std::int64_t>(1, ops.kPadded * 2) / 32 * 32, 32, 512);
    thread_local AlignedBuffer<std::uint16_t> weightBuffer, rowBuffer;  // bf16 values
    std::uint16_t* packedW = weightBuffer.get(
        std::size_t(std::max<std::int64_t>(1, 2 * ops.pairs * ops.kBlocks * kTileValues)));
    ops.x = rowBuffer.get(std::size_t(
        std::max<std::int64_t>(1, std::min(ops.blockRows, (m + 31) / 32 * 32) * ops.kPadded)));
    packWeights<kKind>(w, wStride, k, ops.kBlocks, nBegin, nEnd, 2 * ops.pairs, packedW);
    ops.w = packedW;
    return ops;
}

// ---- AMX ---------------------------------------------------------------------------------------

template <WeightKind kKind>
void gemmTiles(const void* w, std::ptrdiff_t wStride, std::int64_t k, const float* x,
               std::ptrdiff_t xStride, std::int64_t m, const float* bias, float* y,
               std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    const Operands ops = convertOperands<kKind>(w, wStride, k, m, nBegin, nEnd);
    TileConfig config;
    for (int t = 0; t < 8; ++t) {
        config.rows[t] = kTileRows;
        config.columnBytes[t] = 64;
    }
    _tile_loadconfig(&config);
    alignas(64) float block[2 * kTileRows * 2 * kTileCols];
    const std::ptrdiff_t xTileStride = ops.kPadded * std::ptrdiff_t(sizeof(std::uint16_t));
    constexpr std::ptrdiff_t kBlockStride = 2 * kTileCols * sizeof(float);

    for (std::int64_t i0 = 0; i0 < m; i0 += ops.blockRows) {
        const std::int64_t rows = std::min(ops.blockRows, m - i0);
        const std::int64_t paddedRows = (rows + 31) / 32 * 32;
        packRows(x, xStride, i0, rows, paddedRows, k, ops.kPadded, ops.x);
        for (std::int64_t p = 0; p < ops.pairs; ++p) {
            const std::uint16_t* w0 = ops.w + (2 * p) * ops.kBlocks * kTileValues;
            const std::uint16_t* w1 = w0 + ops.kBlocks * kTileValues;
            const std::int64_t col0 = nBegin + p * 2 * kTileCols;
            const std::int64_t cols = std::min<std::int64_t>(2 * kTileCols, nEnd - col0);
            for (std::int64_t r0 = 0; r0 < paddedRows; r0 += 2 * kTileRows) {
                const std::uint16_t* x0 = ops.x + r0 * ops.kPadded;
                const std::uint16_t* x1 = x0 + kTileRows * ops.kPadded;
                _tile_zero(0);
                _tile_zero(1);
                _tile_zero(2);
                _tile_zero(3);
                for (std::int64_t kb = 0; kb < ops.kBlocks; ++kb) {
                    _tile_loadd(4, x0 + kb * kTileK, xTileStride);
                    _tile_loadd(5, x1 + kb * kTileK, xTileStride);
                    _tile_loadd(6, w0 + kb * kTileValues, 64);
                    _tile_loadd(7, w1 + kb * kTileValues, 64);
                    _tile_dpbf16ps(0, 4, 6);
                    _tile_dpbf16ps(1, 4, 7);
                    _tile_dpbf16ps(2, 5, 6);
                    _tile_dpbf16ps(3, 5, 7);
                }
                _tile_stored(0, block, kBlockStride);
                _tile_stored(1, block + kTileCols, kBlockStride);
                _tile_stored(2, block + kTileRows * 2 * kTileCols, kBlockStride);
                _tile_stored(3, block + kTileRows * 2 * kTileCols + kTileCols, kBlockStride);
                storeBlock(block, std::min<std::int64_t>(32, rows - r0), cols,
                           bias != nullptr ? bias + col0 : nullptr, y + (i0 + r0) * yStride + col0,
                           yStride);
            }
        }
    }
    _tile_release();
}

// ---- AVX512-BF16 -------------------------------------------------------------------------------

constexpr int kDotRows = 12;  // rows of a y block: 24 accumulators, as the f32 kernel

// R rows of converted x times one 32-column pair of W groups, over kPairs pairs of k.
template <int R>
void dotBlock(const std::uint16_t* x, std::int64_t kPadded, const std::uint16_t* w0,
              const std::uint16_t* w1, std::int64_t kPairs, const float* bias, float* y,
              std::ptrdiff_t yStride, std::int64_t cols) {
    __m512 acc0[R], acc1[R];
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
        acc0[r] = _mm512_setzero_ps();
        acc1[r] = _mm512_setzero_ps();
    }
    const auto* pairs = reinterpret_cast<const std::int32_t*>(x);
    const std::int64_t rowPairs = kPadded / 2;
#pragma GCC unroll 2
    for (std::int64_t p = 0; p < kPairs; ++p) {
        const __m512bh b0 = std::bit_cast<__m512bh>(_mm512_load_si512(w0 + p * 2 * kTileCols));
        const __m512bh b1 = std::bit_cast<__m512bh>(_mm512_load_si512(w1 + p * 2 * kTileCols));
#pragma GCC unroll 12
        for (int r = 0; r < R; ++r) {
            const __m512bh a = std::bit_cast<__m512bh>(_mm512_set1_epi32(pairs[r * rowPairs + p]));
            acc0[r] = _mm512_dpbf16_ps(acc0[r], a, b0);
            acc1[r] = _mm512_dpbf16_ps(acc1[r], a, b1);
        }
    }
    const __mmask16 lo = tailMask16(cols), hi = tailMask16(cols - 16);
    const __m512 bias0 = bias != nullptr ? _mm512_maskz_loadu_ps(lo, bias) : _mm512_setzero_ps();
    const __m512 bias1 =
        bias != nullptr ? _mm512_maskz_loadu_ps(hi, bias + 16) : _mm512_setzero_ps();
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
        _mm512_mask_storeu_ps(y + r * yStride, lo, _mm512_add_ps(acc0[r], bias0));
        _mm512_mask_storeu_ps(y + r * yStride + 16, hi, _mm512_add_ps(acc1[r], bias1));
    }
}

template <int R = kDotRows>
void dotBlockRows(int rows, const std::uint16_t* x, std::int64_t kPadded, const std::uint16_t* w0,
                  const std::uint16_t* w1, std::int64_t kPairs, const float* bias, float* y,
                  std::ptrdiff_t yStride, std::int64_t cols) {
    if constexpr (R >= 1) {
        if (rows == R) {
            dotBlock<R>(x, kPadded, w0, w1, kPairs, bias, y, yStride, cols);
        } else {
            dotBlockRows<R - 1>(rows, x, kPadded, w0, w1, kPairs, bias, y, yStride, cols);
        }
    }
}

template <WeightKind kKind>
void gemmDots(const void* w, std::ptrdiff_t wStride, std::int64_t k, const float* x,
              std::ptrdiff_t xStride, std::int64_t m, const float* bias, float* y,
              std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    const Operands ops = convertOperands<kKind>(w, wStride, k, m, nBegin, nEnd);
    for (std::int64_t i0 = 0; i0 < m; i0 += ops.blockRows) {
        const std::int64_t rows = std::min(ops.blockRows, m - i0);
        packRows(x, xStride, i0, rows, rows, k, ops.kPadded, ops.x);
        for (std::int64_t p = 0; p < ops.pairs; ++p) {
            const std::uint16_t* w0 = ops.w + (2 * p) * ops.kBlocks * kTileValues;
            const std::uint16_t* w1 = w0 + ops.kBlocks * kTileValues;
            const std::int64_t col0 = nBegin + p * 2 * kTileCols;
            const std::int64_t cols = std::min<std::int64_t>(2 * kTileCols, nEnd - col0);
            const float* blockBias = bias != nullptr ? bias + col0 : nullptr;
            for (std::int64_t r0 = 0; r0 < rows; r0 += kDotRows) {
                const int here = int(std::min<std::int64_t>(kDotRows, rows - r0));
                dotBlockRows(here, ops.x + r0 * ops.kPadded, ops.kPadded, w0, w1,
                             ops.kBlocks * kTileK / 2, blockBias, y + (i0 + r0) * yStride + col0,
                             yStride, cols);
            }
        }
    }
}

// The kernel instantiated for the weight type (F32, F16 or BF16: kernels::gemm checked).
template <template <WeightKind> class Kernel>
void forWeightType(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
                   const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias,
                   float* y, std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    if (m <= 0 || nEnd <= nBegin) return;
    switch (weightType) {
        case TensorType::F16:
            Kernel<WeightKind::F16>::run(w, wStride, k, x, xStride, m, bias, y, yStride, nBegin,
                                         nEnd);
            break;
        case TensorType::BF16:
            Kernel<WeightKind::BF16>::run(w, wStride, k, x, xStride, m, bias, y, yStride, nBegin,
                                          nEnd);
            break;
        default:
            Kernel<WeightKind::F32>::run(w, wStride, k, x, xStride, m, bias, y, yStride, nBegin,
                                         nEnd);
            break;
    }
}

template <WeightKind kKind>
struct TilesKernel {
    static constexpr auto run = gemmTiles<kKind>;
};
template <WeightKind kKind>
struct DotsKernel {
    static constexpr auto run = gemmDots<kKind>;
};

}  // namespace

void gemmBf16Amx(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
                 const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias,
                 float* y, std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    forWeightType<TilesKernel>(weightType, w, wStride, k, x, xStride, m, bias, y, yStride, nBegin,
                               nEnd);
}

void gemmBf16Avx512(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
                    const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias,
                    float* y, std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    forWeightType<DotsKernel>(weightType, w, wStride, k, x, xStride, m, bias, y, yStride, nBegin,
                              nEnd);
}

}  // namespace iris::kernels::cpu
