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
