#include "kernels/gemm.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

#include "kernels/cpu/gemm_internal.h"
#include "kernels/cpu_features.h"
#include "kernels/fp16.h"

namespace iris::kernels {

namespace cpu {
namespace {

float weightAt(TensorType type, const void* w, std::ptrdiff_t index) {
    switch (type) {
        case TensorType::F16:
            return fp16ToFp32(static_cast<const std::uint16_t*>(w)[index]);
        case TensorType::BF16:
            return bf16ToFp32(static_cast<const std::uint16_t*>(w)[index]);
        default:
            return static_cast<const float*>(w)[index];
    }
}

float roundToBf16(float v) {
    return bf16ToFp32(fp32ToBf16(v));
}

// Rows of x rounded at a time by gemmBf16Rounded: bounds its copy to 256 x k floats.
constexpr std::int64_t kRoundedRows = 256;

}  // namespace

void gemmScalar(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
                const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias, float* y,
                std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t n = nBegin; n < nEnd; ++n) {
            float sum = bias != nullptr ? bias[n] : 0.0f;
            for (std::int64_t j = 0; j < k; ++j)
                sum += x[i * xStride + j] * weightAt(weightType, w, n * wStride + j);
            y[i * yStride + n] = sum;
        }
    }
}

void gemmBf16Scalar(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
                    const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias,
                    float* y, std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t n = nBegin; n < nEnd; ++n) {
            float sum = 0.0f;
            for (std::int64_t j = 0; j < k; ++j) {
                sum += roundToBf16(x[i * xStride + j]) *
                       roundToBf16(weightAt(weightType, w, n * wStride + j));
            }
            y[i * yStride + n] = bias != nullptr ? sum + bias[n] : sum;
        }
    }
}

void gemmBf16Rounded(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
                     const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias,
                     float* y, std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    if (m <= 0 || nEnd <= nBegin) return;
    thread_local std::vector<std::uint16_t> columns;
    thread_local std::vector<float> rows;
    const std::int64_t count = nEnd - nBegin;
    columns.resize(std::size_t(count * k));
    for (std::int64_t n = 0; n < count; ++n)
        for (std::int64_t j = 0; j < k; ++j)
            columns[std::size_t(n * k + j)] =
                fp32ToBf16(weightAt(weightType, w, (nBegin + n) * wStride + j));
    const float* columnBias = bias != nullptr ? bias + nBegin : nullptr;
    for (std::int64_t i0 = 0; i0 < m; i0 += kRoundedRows) {
        const std::int64_t chunk = std::min(kRoundedRows, m - i0);
        rows.resize(std::size_t(chunk * k));
        for (std::int64_t i = 0; i < chunk; ++i)
            for (std::int64_t j = 0; j < k; ++j)
                rows[std::size_t(i * k + j)] = roundToBf16(x[(i0 + i) * xStride + j]);
        kernels::gemm(TensorType::BF16, columns.data(), k, k, rows.data(), k, chunk, columnBias,
                      y + i0 * yStride + nBegin, yStride, 0, count);
    }
}

IsaVariants<GemmFn> gemmVariants() {
    return {.scalar = gemmScalar,
            .avx2 = IRIS_X86_VARIANT(gemmAvx2),
            .avx512 = IRIS_X86_VARIANT(gemmAvx512)};
}

}  // namespace cpu

void gemm(TensorType weightType, const void* w, std::ptrdiff_t wStride, std::int64_t k,
          const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias, float* y,
          std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    if (!gemmSupports(weightType)) {
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t n = nBegin; n < nEnd; ++n)
                y[i * yStride + n] = std::numeric_limits<float>::quiet_NaN();
        return;
    }
    static const cpu::GemmFn fn = cpu::pickVariant(cpu::gemmVariants(), activeIsa());
    fn(weightType, w, wStride, k, x, xStride, m, bias, y, yStride, nBegin, nEnd);
}

namespace {

// The GemmPrecision::Bf16 variant for this CPU: AMX tiles, else AVX512-BF16 dot products, else
// rounding followed by the F32 kernel.
cpu::GemmFn pickBf16Variant() {
#if defined(IRIS_KERNELS_X86)
    const CpuFeatures& features = cpuFeatures();
    if (activeIsa() >= CpuIsa::Avx512 && features.avx512bf16)
        return features.amxBf16 ? cpu::gemmBf16Amx : cpu::gemmBf16Avx512;
#endif
    return cpu::gemmBf16Rounded;
}

}  // namespace

bool gemmBf16OnAmx() {
#if defined(IRIS_KERNELS_X86)
    static const bool onAmx = pickBf16Variant() == cpu::gemmBf16Amx;
    return onAmx;
#else
    return false;
#endif
}

namespace {

// Seconds of the best of `rounds` runs of fn().
template <class Fn>
double bestSeconds(int rounds, Fn&& fn) {
    double best = std::numeric_limits<double>::infinity();
    for (int r = 0; r < rounds; ++r) {
        const auto start = std::chrono::steady_clock::now();
        fn();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                            start)
                                  .count());
    }
    return best;
}

}  // namespace

Bf16Speed measureBf16Speed() {
    // A slice of a vision-tower product: 512 patch rows through 256 columns of a 1280-wide f16
    // projection (Qwen2.5-VL's tower width). Converting W to bf16 costs 1/m and x 1/n of the
    // multiply-adds, a fraction of a percent as in a whole tower's products.
    constexpr std::int64_t m = 512, k = 1280, n = 256;
    std::vector<std::uint16_t> w(std::size_t(n * k));
    std::vector<float> x(std::size_t(m * k)), y(std::size_t(m * n));
    for (std::size_t i = 0; i < w.size(); ++i)
        w[i] = fp32ToFp16(float(int(i * 7919 % 2001) - 1000) * 1e-3f);
    for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = float(int(i * 104729 % 2001) - 1000) * 1e-3f;
    const auto run = [&](GemmPrecision precision) {
        gemm(precision, TensorType::F16, w.data(), k, k, x.data(), k, m, nullptr, y.data(), n, 0,
             n);
    };
    // Alternately, so that a load that comes and goes falls on both.
    Bf16Speed speed;
    speed.f32Seconds = speed.bf16Seconds = std::numeric_limits<double>::infinity();
    for (int round = 0; round < 3; ++round) {
        speed.f32Seconds = std::min(speed.f32Seconds, bestSeconds(1, [&] { run(GemmPrecision::F32); }));
        speed.bf16Seconds =
            std::min(speed.bf16Seconds, bestSeconds(1, [&] { run(GemmPrecision::Bf16); }));
    }
    return speed;
}

bool gemmBf16Faster() {
    static const bool faster = [] {
#if defined(IRIS_KERNELS_X86)
        // Rounding followed by the F32 kernel is never faster than the F32 kernel alone.
        if (pickBf16Variant() == cpu::gemmBf16Rounded) return false;
        const Bf16Speed speed = measureBf16Speed();
        return speed.bf16Seconds < speed.f32Seconds;
#else
        return false;
#endif
    }();
    return faster;
}

void gemm(GemmPrecision precision, TensorType weightType, const void* w, std::ptrdiff_t wStride,
          std::int64_t k, const float* x, std::ptrdiff_t xStride, std::int64_t m, const float* bias,
          float* y, std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    if (precision == GemmPrecision::F32 || !gemmSupports(weightType)) {
        gemm(weightType, w, wStride, k, x, xStride, m, bias, y, yStride, nBegin, nEnd);
        return;
    }
    static const cpu::GemmFn fn = pickBf16Variant();
    fn(weightType, w, wStride, k, x, xStride, m, bias, y, yStride, nBegin, nEnd);
}

}  // namespace iris::kernels
