// Compiled with -mavx2 -mfma -mf16c; only called when the CPU has them (cpu/dispatch.h).
#include "kernels/cpu/attention.h"
#include "kernels/cpu/x86/attention_x86.h"

namespace iris::kernels::cpu {
namespace {

struct Vec8 {
    using Reg = __m256;
    static constexpr int kWidth = 8;
    static constexpr int kVectors = 2;    // 8 score accumulators of 16 registers
    static constexpr int kValueDims = 4;  // 8 accumulators of 16 registers
    static Reg zero() { return _mm256_setzero_ps(); }
    static Reg broadcast(float f) { return _mm256_set1_ps(f); }
    static Reg load(const float* p) { return _mm256_loadu_ps(p); }
    static Reg loadHalf(const std::uint16_t* p) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static void store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
    static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
    static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
    static Reg sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
    static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
    static Reg div(Reg a, Reg b) { return _mm256_div_ps(a, b); }
    static Reg max(Reg a, Reg b) { return _mm256_max_ps(a, b); }
    static Reg round(Reg a) {
        return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    // a * 2^n for whole-number n in [-126, 127] (exact: a power of two built in the exponent).
    static Reg timesPowerOfTwo(Reg a, Reg n) {
        const __m256i bits =
            _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
        return _mm256_mul_ps(a, _mm256_castsi256_ps(bits));
    }
    // a < b ? x : y, lane by lane.
    static Reg ifLess(Reg a, Reg b, Reg x, Reg y) {
        return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ));
    }
};

}  // namespace

void attendRowsAvx2(const AttentionRow* rows, int count, const PagedKv& kv, int kvHead, float scale,
                    float* scratch) {
    attendRowsX86<Vec8>(rows, count, kv, kvHead, scale, scratch);
}

void attendAvx2(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                float* out, float*, int headBegin, int headEnd) {
    attendHeads(attendRowsAvx2, q, heads, kv, length, scale, out, headBegin, headEnd);
}

}  // namespace iris::kernels::cpu
