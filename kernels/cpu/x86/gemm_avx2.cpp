// Compiled with -mavx2 -mfma -mf16c; only called when the CPU has them (cpu/dispatch.h).
#include "kernels/cpu/gemm_internal.h"
#include "kernels/cpu/x86/gemm_x86.h"

namespace iris::kernels::cpu {
namespace {

struct Avx2Ops {
    using V = __m256;
    static constexpr int kWidth = 8;
    static V zero() { return _mm256_setzero_ps(); }
    static V load(const float* p) { return _mm256_load_ps(p); }  // packed panels: aligned
    static V loadu(const float* p) { return _mm256_loadu_ps(p); }
    static V broadcast(const float* p) { return _mm256_broadcast_ss(p); }
    static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
    static V add(V a, V b) { return _mm256_add_ps(a, b); }
    static void store(float* p, V v) { _mm256_store_ps(p, v); }
    static void storeu(float* p, V v) { _mm256_storeu_ps(p, v); }
};

// 6 x 16: 12 accumulators + 2 weight vectors + 1 broadcast of the 16 ymm registers; 12
// independent FMA chains cover Zen 2's and Haswell's 2 pipes x 4-5 cycles of latency.
constexpr int kMr = 6;
constexpr std::int64_t kMc = 72;  // 72 rows x 1 KiB of x stay in L2 while the panels pass

// The AVX-512 variant's geometry (12 x 32 tiles) on pairs of 256-bit vectors: slow (the
// accumulators spill), but it lets CPUs without AVX-512 test the blocking gemmAvx512 uses.
struct Avx2PairOps {
    struct V {
        __m256 lo, hi;
    };
    static constexpr int kWidth = 16;
    static V zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
    static V load(const float* p) { return {_mm256_load_ps(p), _mm256_load_ps(p + 8)}; }
    static V loadu(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
    static V broadcast(const float* p) {
        const __m256 v = _mm256_broadcast_ss(p);
        return {v, v};
    }
    static V fmadd(V a, V b, V c) {
        return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
    }
    static V add(V a, V b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
    static void store(float* p, V v) {
        _mm256_store_ps(p, v.lo);
        _mm256_store_ps(p + 8, v.hi);
    }
    static void storeu(float* p, V v) {
        _mm256_storeu_ps(p, v.lo);
        _mm256_storeu_ps(p + 8, v.hi);
    }
};

}  // namespace

void gemmAvx2As12x32(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
                     const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias,
                     float* y, std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    gemmFor<Avx2PairOps, kAvx512Mr, kAvx512Mc>(weightType, w, wStride, k, x, xStride, m, bias, y,
                                               yStride, nBegin, nEnd);
}

void gemmAvx2(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
              const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias, float* y,
              std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    gemmFor<Avx2Ops, kMr, kMc>(weightType, w, wStride, k, x, xStride, m, bias, y, yStride, nBegin,
                               nEnd);
}

}  // namespace iris::kernels::cpu
