// Compiled with -mavx2 -mfma -mf16c; only called when the CPU has them (cpu/dispatch.h).
#include "kernels/cpu/attention.h"
#include "kernels/cpu/x86/attention_x86.h"

namespace iris::kernels::cpu {
namespace {

struct Vec8 {
    using Reg = __m256;
    static constexpr int kWidth = 8;
    static Reg zero() { return _mm256_setzero_ps(); }
    static Reg broadcast(float f) { return _mm256_set1_ps(f); }
    static Reg load(const float* p) { return _mm256_loadu_ps(p); }
    static Reg loadHalf(const std::uint16_t* p) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static void store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
    static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
    static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
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
