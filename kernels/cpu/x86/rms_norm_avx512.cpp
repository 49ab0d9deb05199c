// Compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni (plus the AVX2 set); only
// called when the CPU has them (cpu/dispatch.h).
#include <cmath>

#include <immintrin.h>

#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/x86/horizontal_sum.h"

namespace iris::kernels::cpu {
namespace {

__mmask16 firstLanes(std::int64_t n) {
    return __mmask16((1u << n) - 1u);
}  // n in 0..16

}  // namespace

void rmsNormAvx512(const float* x, std::ptrdiff_t xStride, const float* w, float* y,
                   std::ptrdiff_t yStride, std::int64_t rows, std::int64_t cols, float eps) {
    for (std::int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * xStride;
        float* yr = y + r * yStride;

        __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
        std::int64_t i = 0;
        for (; i + 64 <= cols; i += 64) {
            const __m512 v0 = _mm512_loadu_ps(xr + i), v1 = _mm512_loadu_ps(xr + i + 16);
            const __m512 v2 = _mm512_loadu_ps(xr + i + 32), v3 = _mm512_loadu_ps(xr + i + 48);
            acc0 = _mm512_fmadd_ps(v0, v0, acc0);
            acc1 = _mm512_fmadd_ps(v1, v1, acc1);
            acc2 = _mm512_fmadd_ps(v2, v2, acc2);
            acc3 = _mm512_fmadd_ps(v3, v3, acc3);
        }
        for (; i + 16 <= cols; i += 16) {
            const __m512 v = _mm512_loadu_ps(xr + i);
            acc0 = _mm512_fmadd_ps(v, v, acc0);
        }
        if (i < cols) {
            const __m512 v = _mm512_maskz_loadu_ps(firstLanes(cols - i), xr + i);
            acc1 = _mm512_fmadd_ps(v, v, acc1);
        }
        const float sum =
            horizontalSum(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
        const float mean = cols > 0 ? sum / float(cols) : 0.0f;
        const __m512 scale = _mm512_set1_ps(1.0f / std::sqrt(mean + eps));

        for (i = 0; i + 16 <= cols; i += 16) {
            const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(xr + i), scale);
            _mm512_storeu_ps(yr + i, _mm512_mul_ps(v, _mm512_loadu_ps(w + i)));
        }
        if (i < cols) {
            const __mmask16 mask = firstLanes(cols - i);
            const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, xr + i), scale);
            _mm512_mask_storeu_ps(yr + i, mask,
                                  _mm512_mul_ps(v, _mm512_maskz_loadu_ps(mask, w + i)));
        }
    }
}

}  // namespace iris::kernels::cpu
