#include "kernels/activation.h"

#include <cmath>

#include "kernels/cpu/dispatch.h"

#if defined(IRIS_KERNELS_X86)
#include <immintrin.h>
#endif

namespace iris::kernels {

namespace {

float geluTanh(float x) {
    constexpr float kSqrt2OverPi = 0.79788456080286535588f;
    constexpr float kCubic = 0.044715f;
    return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCubic * x * x)));
}

// ---- scalar references ----------------------------------------------------------------------

void swigluScalar(const float* gate, const float* up, float* out, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i)
        out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

float expShiftSumScalar(float* x, std::int64_t n, float shift) {
    float sum = 0.0f;
    for (std::int64_t i = 0; i < n; ++i)
        sum += (x[i] = std::exp(x[i] - shift));
    return sum;
}

// ---- AVX2 + FMA -----------------------------------------------------------------------------
// Compiled with a target attribute rather than in a cpu/x86/ file of its own so that the op
// stays one file pair; the functions are only called when activeIsa() allows AVX2.
#if defined(IRIS_KERNELS_X86)

// exp(x) = 2^k e^r, k = round(x log2 e), r = x - k ln 2 (in two parts, so r is exact to f32),
// e^r by Cephes' minimax polynomial on [-ln2/2, ln2/2]. The input is clamped to [-87.3, 88],
// where 2^k stays a normal float.
__attribute__((target("avx2,fma"))) __m256 exp8(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.0f));
    const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i exponent =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(exponent));
}

__attribute__((target("avx2,fma"))) void swigluAvx2(const float* gate, const float* up, float* out,
                                                    std::int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f);
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
        const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, e));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(silu, _mm256_loadu_ps(up + i)));
    }
    swigluScalar(gate + i, up + i, out + i, n - i);
}

__attribute__((target("avx2,fma"))) float expShiftSumAvx2(float* x, std::int64_t n, float shift) {
    const __m256 s = _mm256_set1_ps(shift);
    __m256 sum = _mm256_setzero_ps();
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
        _mm256_storeu_ps(x + i, e);
        sum = _mm256_add_ps(sum, e);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, sum);
    float total = 0.0f;
    for (float lane : lanes)
        total += lane;
    return total + expShiftSumScalar(x + i, n - i, shift);
}

#endif  // IRIS_KERNELS_X86

using SwigluFn = void (*)(const float*, const float*, float*, std::int64_t);
using ExpShiftSumFn = float (*)(float*, std::int64_t, float);

constexpr cpu::IsaVariants<SwigluFn> kSwigluVariants = {swigluScalar, IRIS_X86_VARIANT(swigluAvx2)};
constexpr cpu::IsaVariants<ExpShiftSumFn> kExpShiftSumVariants = {
    expShiftSumScalar, IRIS_X86_VARIANT(expShiftSumAvx2)};

}  // namespace

void swiglu(const float* gate, const float* up, float* out, std::int64_t n) {
    static const SwigluFn fn = cpu::pickVariant(kSwigluVariants, activeIsa());
    fn(gate, up, out, n);
}

float expShiftSum(float* x, std::int64_t n, float shift) {
    static const ExpShiftSumFn fn = cpu::pickVariant(kExpShiftSumVariants, activeIsa());
    return fn(x, n, shift);
}

void silu(const float* x, float* out, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i)
        out[i] = x[i] / (1.0f + std::exp(-x[i]));
}

void gelu(const float* x, float* out, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i)
        out[i] = geluTanh(x[i]);
}

void geluErf(const float* x, float* out, std::int64_t n) {
    constexpr float kInvSqrt2 = 0.70710678118654752440f;
    for (std::int64_t i = 0; i < n; ++i)
        out[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
}

void geglu(const float* gate, const float* up, float* out, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i)
        out[i] = geluTanh(gate[i]) * up[i];
}

}  // namespace iris::kernels
