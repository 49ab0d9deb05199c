// Compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni (plus the AVX2 set); only
// called when the CPU has them (cpu/dispatch.h).
#include "kernels/cpu/gemm_internal.h"
#include "kernels/cpu/x86/gemm_x86.h"

namespace iris::kernels::cpu {
namespace {

struct Avx512Ops {
    using V = __m512;
    static constexpr int kWidth = 16;
    static V zero() { return _mm512_setzero_ps(); }
    static V load(const float* p) { return _mm512_load_ps(p); }  // packed panels: aligned
    static V loadu(const float* p) { return _mm512_loadu_ps(p); }
    static V broadcast(const float* p) { return _mm512_set1_ps(*p); }
    static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    static V add(V a, V b) { return _mm512_add_ps(a, b); }
    static void store(float* p, V v) { _mm512_store_ps(p, v); }
    static void storeu(float* p, V v) { _mm512_storeu_ps(p, v); }
};

// 12 x 32: 24 accumulators + 2 weight vectors + 1 broadcast of the 32 zmm registers, leaving
// room for the compiler; 24 independent FMA chains cover 2 pipes x 4 cycles of latency.
// (kAvx512Mr x 2 * 16 tiles, kAvx512Mc rows per L2 block: gemm_x86.h.)

}  // namespace

void gemmAvx512(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
                const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias, float* y,
                std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    gemmFor<Avx512Ops, kAvx512Mr, kAvx512Mc>(weightType, w, wStride, k, x, xStride, m, bias, y,
                                             yStride, nBegin, nEnd);
}

}  // namespace iris::kernels::cpu
