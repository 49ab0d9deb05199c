// Compiled with the AVX-512 set including VNNI; only called when the CPU has them
// (cpu/dispatch.h).
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

// One group of 16 packed rows against R activation rows.
template <int R>
void packedGroup(const std::uint8_t* group, float offset, std::int64_t blocks,
                 const BlockQ8Act* const* x, __m512* acc) {
    for (int r = 0; r < R; ++r)
        acc[r] = _mm512_setzero_ps();
    for (std::int64_t b = 0; b < blocks; ++b) {
        const std::uint8_t* block = group + b * kPackedBlockBytes;
        const __m512 d = _mm512_loadu_ps(block);
        const std::uint8_t* qs = block + 64;
        __m512i dot[R];
        for (int r = 0; r < R; ++r)
            dot[r] = _mm512_setzero_si512();
        for (int j = 0; j < 8; ++j) {
            // Bytes 4j..4j+3 of all 16 rows against the same 4 activation bytes of each row of x.
            const __m512i w = _mm512_loadu_si512(qs + 64 * j);
            for (int r = 0; r < R; ++r) {
                std::int32_t four;
                std::memcpy(&four, x[r][b].qs + 4 * j, 4);
                dot[r] = _mm512_dpbusd_epi32(dot[r], w, _mm512_set1_epi32(four));
            }
        }
        for (int r = 0; r < R; ++r) {
            // d * (dx * sum(stored * x) - offset * dx * sum(x)) for each of the 16 rows.
            // maskz conversion: the plain one expands to _mm512_undefined_ps, which GCC 12 warns
            // about.
            const __m512 sum = _mm512_maskz_cvtepi32_ps(__mmask16(0xFFFF), dot[r]);
            acc[r] = _mm512_fmadd_ps(sum, _mm512_mul_ps(d, _mm512_set1_ps(x[r][b].d)), acc[r]);
            acc[r] = _mm512_fnmadd_ps(d, _mm512_set1_ps(offset * x[r][b].dsum), acc[r]);
        }
    }
}

}  // namespace

void matmulPackedAvx512(const void* packed, float offset, std::int64_t k, const void* prepared,
                        std::int64_t m, float* y, std::ptrdiff_t yStride, std::int64_t nBegin,
                        std::int64_t nEnd) {
    constexpr int kRows = 4;
    const std::int64_t blocks = k / kQK;
    const auto* groups = static_cast<const std::uint8_t*>(packed);
    const auto* x = static_cast<const BlockQ8Act*>(prepared);
    for (std::int64_t n0 = nBegin; n0 < nEnd; n0 += kPackRows) {
        const std::uint8_t* group = groups + (n0 / kPackRows) * blocks * kPackedBlockBytes;
        const auto lanes = __mmask16((1u << std::min<std::int64_t>(kPackRows, nEnd - n0)) - 1u);
        for (std::int64_t i0 = 0; i0 < m; i0 += kRows) {
            const BlockQ8Act* rows[kRows];
            const int count = int(std::min<std::int64_t>(kRows, m - i0));
            for (int r = 0; r < count; ++r)
                rows[r] = x + (i0 + r) * blocks;
            __m512 acc[kRows];
            switch (count) {
                case 4:
                    packedGroup<4>(group, offset, blocks, rows, acc);
                    break;
                case 3:
                    packedGroup<3>(group, offset, blocks, rows, acc);
                    break;
                case 2:
                    packedGroup<2>(group, offset, blocks, rows, acc);
                    break;
                default:
                    packedGroup<1>(group, offset, blocks, rows, acc);
                    break;
            }
            for (int r = 0; r < count; ++r)
                _mm512_mask_storeu_ps(y + (i0 + r) * yStride + n0, lanes, acc[r]);
        }
    }
}

}  // namespace iris::kernels::cpu
