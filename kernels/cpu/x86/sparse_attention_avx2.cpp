// Compiled with -mavx2 -mfma -mf16c; only called when the CPU has them (cpu/dispatch.h).
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
    static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
    static float reduce(Reg v) { return horizontalSum(v); }
};

#include "kernels/cpu/x86/sparse_attention_x86.h"  // the bodies, instantiated below

}  // namespace

void indexerBlockScoresAvx2(const float* q, int groups, const PagedIndexKeys& keys,
                            std::int64_t length, int selectionBlock, float* scores) {
    blockScoresX86<Vec8>(q, groups, keys, length, selectionBlock, scores);
}

void attendBlocksAvx2(const float* q, int heads, const PagedKv& kv, std::int64_t length,
                      float scale, const std::int32_t* blocks, int count, int selectionBlock,
                      float* out, float* scratch, int headBegin, int headEnd) {
    attendBlocksX86<Vec8>(q, heads, kv, length, scale, blocks, count, selectionBlock, out, scratch,
                          headBegin, headEnd);
}

void attendMaskedBlocksAvx2(const float* q, std::ptrdiff_t qStride, int n,
                            const std::int64_t* lengths, int heads, const PagedKv& kv, float scale,
                            const std::uint8_t* mask, std::int64_t maskStride, int selectionBlock,
                            float* out, std::ptrdiff_t outStride, float* scratch, int headBegin,
                            int headEnd) {
    attendMaskedX86<Vec8>(q, qStride, n, lengths, heads, kv, scale, mask, maskStride,
                          selectionBlock, out, outStride, scratch, headBegin, headEnd);
}

}  // namespace iris::kernels::cpu
