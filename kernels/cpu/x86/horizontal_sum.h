#pragma once
// Sum of the lanes of a float vector, shared by the x86 kernels. `static inline` for the reason
// fp16.h gives: these headers are compiled into translation units for different instruction
// sets. The 512-bit form is defined only where AVX-512 is enabled.

#include <immintrin.h>

namespace iris::kernels::cpu {

static inline float horizontalSum(__m128 s) {
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline float horizontalSum(__m256 v) {
    return horizontalSum(_mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)));
}

#if defined(__AVX512F__) && defined(__AVX512DQ__)
// Written with extractf32x8 (zero-filled merge source): _mm512_reduce_add_ps and
// _mm512_castps512_ps256 expand to _mm256_undefined_*, which GCC 12 flags as -Wmaybe-uninitialized
// inside its own header (GCC bug 105593).
static inline float horizontalSum(__m512 v) {
    return horizontalSum(_mm256_add_ps(_mm512_extractf32x8_ps(v, 0), _mm512_extractf32x8_ps(v, 1)));
}
#endif

}  // namespace iris::kernels::cpu
