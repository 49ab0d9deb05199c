// CPU kernel variants side by side, in one run so their ratios are comparable.
//   build/release/tests/bench/iris_kernels_bench [--benchmark_filter=RmsNorm]
// RMSNorm reads x and w and writes y: it is bound by memory bandwidth once rows*cols*4 bytes
// no longer fit in cache, so the bytes/s column is the number to compare with the machine's
// streaming bandwidth (about 27 GB/s on one core here).
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu_features.h"

namespace {

using iris::kernels::CpuIsa;

void benchRmsNorm(benchmark::State& state, iris::kernels::cpu::RmsNormFn fn, CpuIsa isa) {
    if (isa > iris::kernels::highestSupportedIsa(iris::kernels::cpuFeatures())) {
        state.SkipWithError("CPU lacks this level");
        return;
    }
    const std::int64_t rows = state.range(0), cols = state.range(1);
    std::vector<float> x(std::size_t(rows * cols), 0.0f), y(x.size(), 0.0f);
    std::vector<float> w(std::size_t(cols), 0.0f);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    for (float& v : x)
        v = normal(rng);
    for (float& v : w)
        v = normal(rng);
    for (auto _ : state) {
        fn(x.data(), cols, w.data(), y.data(), cols, rows, cols, 1e-6f);
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(std::int64_t(state.iterations()) * (2 * rows * cols + cols) * 4);
}

// Decode-sized (one token, Qwen2.5-0.5B width), prefill-sized (512 tokens), and a large
// batch that leaves the cache (64 MiB per buffer).
void shapes(benchmark::internal::Benchmark* b) {
    b->Args({1, 896})->Args({512, 896})->Args({4096, 4096});
}

}  // namespace

BENCHMARK_CAPTURE(benchRmsNorm, scalar, iris::kernels::cpu::rmsNormScalar, CpuIsa::Scalar)
    ->Apply(shapes);
#if defined(IRIS_KERNELS_X86)
BENCHMARK_CAPTURE(benchRmsNorm, avx2, iris::kernels::cpu::rmsNormAvx2, CpuIsa::Avx2)->Apply(shapes);
BENCHMARK_CAPTURE(benchRmsNorm, avx512, iris::kernels::cpu::rmsNormAvx512, CpuIsa::Avx512)
    ->Apply(shapes);
#endif

BENCHMARK_MAIN();
