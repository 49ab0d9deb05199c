// Compiled with -mavx2 -mfma -mf16c; only called when the CPU has them (cpu/dispatch.h).
#include <cmath>

#include <immintrin.h>

#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/x86/horizontal_sum.h"

namespace iris::kernels::cpu {
namespace {

// Mask for _mm256_maskload_ps/_mm256_maskstore_ps covering the first n (0..8) lanes.
__m256i firstLanes(std::int64_t n) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), lane);
}

}  // namespace

void rmsNormAvx2(const float* x, std::ptrdiff_t xStride, const float* w, float* y,
                 std::ptrdiff_t yStride, std::int64_t rows, std::int64_t cols, float eps) {
    for (std::int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * xStride;
        float* yr = y + r * yStride;

        // Four independent accumulators hide the FMA latency.
        __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
        std::int64_t i = 0;
        for (; i + 32 <= cols; i += 32) {
            const __m256 v0 = _mm256_loadu_ps(xr + i), v1 = _mm256_loadu_ps(xr + i + 8);
            const __m256 v2 = _mm256_loadu_ps(xr + i + 16), v3 = _mm256_loadu_ps(xr + i + 24);
            acc0 = _mm256_fmadd_ps(v0, v0, acc0);
            acc1 = _mm256_fmadd_ps(v1, v1, acc1);
            acc2 = _mm256_fmadd_ps(v2, v2, acc2);
            acc3 = _mm256_fmadd_ps(v3, v3, acc3);
        }
        for (; i + 8 <= cols; i += 8) {
            const __m256 v = _mm256_loadu_ps(xr + i);
            acc0 = _mm256_fmadd_ps(v, v, acc0);
        }
        if (i < cols) {
            const __m256 v = _mm256_maskload_ps(xr + i, firstLanes(cols - i));
            acc1 = _mm256_fmadd_ps(v, v, acc1);
        }
        const float sum =
            horizontalSum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
        const float mean = cols > 0 ? sum / float(cols) : 0.0f;
        const __m256 scale = _mm256_set1_ps(1.0f / std::sqrt(mean + eps));

        for (i = 0; i + 8 <= cols; i += 8) {
            const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(xr + i), scale);
            _mm256_storeu_ps(yr + i, _mm256_mul_ps(v, _mm256_loadu_ps(w + i)));
        }
        if (i < cols) {
            const __m256i mask = firstLanes(cols - i);
            const __m256 v = _mm256_mul_ps(_mm256_maskload_ps(xr + i, mask), scale);
            _mm256_maskstore_ps(yr + i, mask, _mm256_mul_ps(v, _mm256_maskload_ps(w + i, mask)));
        }
    }
}

}  // namespace iris::kernels::cpu
