// Compiled with -mavx2 -mfma -mf16c; only called when the CPU has them (cpu/dispatch.h).
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

}  // namespace

MatmulFn matmulAvx2(TensorType weightType) {
    return matmulFor<DotMaddubs>(weightType);
}

}  // namespace iris::kernels::cpu
