// Compiled with the AVX-512 set; only called when the CPU has it (cpu/dispatch.h).
#include "kernels/cpu/attention.h"
#include "kernels/cpu/x86/attention_x86.h"

namespace iris::kernels::cpu {
namespace {

struct Vec16 {
    using Reg = __m512;
    static constexpr int kWidth = 16;
    static constexpr int kVectors = 4;    // 16 score accumulators of 32 registers
    static constexpr int kValueDims = 8;  // 16 accumulators of 32 registers
    // The maskz forms below: the plain ones expand to _mm512_undefined_ps, which GCC 12 warns
    // about.
    static constexpr __mmask16 kAll = 0xFFFF;
    static Reg zero() { return _mm512_setzero_ps(); }
    static Reg broadcast(float f) { return _mm512_set1_ps(f); }
    static Reg load(const float* p) { return _mm512_loadu_ps(p); }
    static Reg loadHalf(const std::uint16_t* p) {
        return _mm512_maskz_cvtph_ps(kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static void store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
    static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
    static Reg fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
    static Reg sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
    static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
    static Reg div(Reg a, Reg b) { return _mm512_div_ps(a, b); }
    static Reg max(Reg a, Reg b) { return _mm512_maskz_max_ps(kAll, a, b); }
    static Reg round(Reg a) {
        return _mm512_maskz_roundscale_ps(kAll, a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    // a * 2^n for whole-number n (exact: only the exponent changes).
    static Reg timesPowerOfTwo(Reg a, Reg n) { return _mm512_maskz_scalef_ps(kAll, a, n); }
    // a < b ? x : y, lane by lane.
    static Reg ifLess(Reg a, Reg b, Reg x, Reg y) {
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x);
    }
};

}  // namespace

void attendRowsAvx512(const AttentionRow* rows, int count, const PagedKv& kv, int kvHead,
                      float scale, float* scratch) {
    attendRowsX86<Vec16>(rows, count, kv, kvHead, scale, scratch);
}

void attendAvx512(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                  float* out, float*, int headBegin, int headEnd) {
    attendHeads(attendRowsAvx512, q, heads, kv, length, scale, out, headBegin, headEnd);
}

}  // namespace iris::kernels::cpu
