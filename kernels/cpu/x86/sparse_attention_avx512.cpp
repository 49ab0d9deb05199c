// Compiled with the AVX-512 set; only called when the CPU has it (cpu/dispatch.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <immintrin.h>

#include "kernels/cpu/x86/horizontal_sum.h"
#include "kernels/fp16.h"
#include "kernels/sparse_attention.h"

namespace iris::kernels::cpu {
namespace {

struct Vec16 {
    using Reg = __m512;
    static constexpr int kWidth = 16;
    static Reg zero() { return _mm512_setzero_ps(); }
    static Reg broadcast(float f) { return _mm512_set1_ps(f); }
    static Reg load(const float* p) { return _mm512_loadu_ps(p); }
    // maskz form: the plain one expands to _mm512_undefined_ps, which GCC 12 warns about.
    static Reg loadHalf(const std::uint16_t* p) {
        return _mm512_maskz_cvtph_ps(__mmask16(0xFFFF),
                                     _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static void store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
    static Reg fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
    static float reduce(Reg v) { return horizontalSum(v); }
};

#include "kernels/cpu/x86/sparse_attention_x86.h"  // the bodies, instantiated below

}  // namespace

void indexerBlockScoresAvx512(const float* q, int groups, const PagedIndexKeys& keys,
                              std::int64_t length, int selectionBlock, float* scores) {
    blockScoresX86<Vec16>(q, groups, keys, length, selectionBlock, scores);
}

void attendBlocksAvx512(const float* q, int heads, const PagedKv& kv, std::int64_t length,
                        float scale, const std::int32_t* blocks, int count, int selectionBlock,
                        float* out, float* scratch, int headBegin, int headEnd) {
    attendBlocksX86<Vec16>(q, heads, kv, length, scale, blocks, count, selectionBlock, out, scratch,
                           headBegin, headEnd);
}

void attendMaskedBlocksAvx512(const float* q, std::ptrdiff_t qStride, int n,
                              const std::int64_t* lengths, int heads, const PagedKv& kv,
                              float scale, const std::uint8_t* mask, std::int64_t maskStride,
                              int selectionBlock, float* out, std::ptrdiff_t outStride,
                              float* scratch, int headBegin, int headEnd) {
    attendMaskedX86<Vec16>(q, qStride, n, lengths, heads, kv, scale, mask, maskStride,
                           selectionBlock, out, outStride, scratch, headBegin, headEnd);
}

}  // namespace iris::kernels::cpu
