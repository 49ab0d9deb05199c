// CPU kernel variants side by side, in one run so their ratios are comparable.
//   build/release/tests/bench/iris_kernels_bench [--benchmark_filter=RmsNorm]
// Gemm: single-threaded GFLOP/s of the dense f32/f16 product; compare with one core's FMA peak
// (AVX2: 2 FMA/cycle x 8 lanes x 2 flops x clock = 72 GFLOP/s at 2.25 GHz).
//   iris_kernels_bench --benchmark_filter='Gemm|Matmul/F16_.*/512'
// Packed q8_0/q5_0/q4_0 (AVX-512 VNNI): a prefill chunk is bound by vpdpbusd throughput; the
// Gdots rate (10^9 vpdpbusd per second) against VnniPeak's (register-only vpdpbusd, 12
// independent chains) says how close one core gets to it.
//   iris_kernels_bench --benchmark_filter='MatmulPacked/|VnniPeak'
// Prefill attention (attendRows): one call's 64 rows (9 tokens of a 7-head GQA group, each with
// its causal length, and one row of a tenth) over f16 keys and values; GFLOP/s counts 4 * headDim flops per row and key
// (the score and the weighted value), against one core's f32 FMA peak (Zen 5 at 3.5 GHz:
// 2 FMA x 16 lanes x 2 flops = 224 GFLOP/s).
//   iris_kernels_bench --benchmark_filter=AttendRows
// RMSNorm reads x and w and writes y: it is bound by memory bandwidth once rows*cols*4 bytes
// no longer fit in cache, so the bytes/s column is the number to compare with the machine's
// streaming bandwidth (about 27 GB/s on one core here).
#include <cstdint>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>
#if defined(IRIS_KERNELS_X86)
#include <immintrin.h>
#endif

#include "kernels/attention.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/gemm_internal.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu_features.h"
#include "kernels/fp16.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"

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

// Random W (n x k rows of `type`) and m activation rows prepared for it, with room for y.
struct MatmulOperands {
    std::vector<std::byte> w, prepared;
    std::vector<float> y;
};

MatmulOperands makeMatmulOperands(iris::kernels::TensorType type, std::int64_t n, std::int64_t k,
                                  std::int64_t m) {
    using namespace iris::kernels;
    MatmulOperands o;
    std::vector<float> raw(std::size_t(k), 0.0f);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    o.w.resize(std::size_t(rowBytes(type, k) * n));
    for (std::int64_t r = 0; r < n; ++r) {
        for (float& v : raw)
            v = normal(rng);
        quantizeRow(type, raw.data(), o.w.data() + r * rowBytes(type, k), k);
    }
    std::vector<float> x(std::size_t(m * k), 0.0f);
    for (float& v : x)
        v = normal(rng);
    o.prepared.resize(std::size_t(preparedRowBytes(type, k) * m));
    prepareActivations(type, x.data(), k, m, k, o.prepared.data());
    o.y.assign(std::size_t(m * n), 0.0f);
    return o;
}

// bytes/s counts `weightBytes` per iteration; GFLOP/s the 2 m n k of the product.
void setMatmulCounters(benchmark::State& state, std::size_t weightBytes) {
    const std::int64_t n = state.range(0), k = state.range(1), m = state.range(2);
    state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(weightBytes));
    state.counters["GFLOP/s"] = benchmark::Counter(
        double(2 * m * n * k) * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

// One linear layer, y = x W^T, with W (n x k) in `type`: m = 1 is a decode step (bound by reading
// W: compare bytes/s with the machine's bandwidth), m = 64 a prefill chunk (bound by arithmetic).
void benchMatmul(benchmark::State& state, iris::kernels::TensorType type, CpuIsa isa) {
    using namespace iris::kernels;
    if (isa > highestSupportedIsa(cpuFeatures())) {
        state.SkipWithError("CPU lacks this level");
        return;
    }
    const std::int64_t n = state.range(0), k = state.range(1), m = state.range(2);
    MatmulOperands o = makeMatmulOperands(type, n, k, m);
    cpu::MatmulFn fn = isa == CpuIsa::Scalar ? cpu::matmulScalar(type)
#if defined(IRIS_KERNELS_X86)
                       : isa == CpuIsa::Avx2 ? cpu::matmulAvx2(type)
                                             : cpu::matmulAvx512(type);
#else
                                             : nullptr;
#endif
    for (auto _ : state) {
        fn(o.w.data(), k, o.prepared.data(), m, o.y.data(), n, 0, n);
        benchmark::DoNotOptimize(o.y.data());
    }
    setMatmulCounters(state, o.w.size());
}

// As benchMatmul, on the packed K layout (kernels::packWeights) of the same weights; bytes/s
// counts the packed bytes the kernel reads.
void benchMatmulPackedK(benchmark::State& state, iris::kernels::TensorType type, CpuIsa isa) {
    using namespace iris::kernels;
    if (isa > highestSupportedIsa(cpuFeatures())) {
        state.SkipWithError("CPU lacks this level");
        return;
    }
    const std::int64_t n = state.range(0), k = state.range(1), m = state.range(2);
    MatmulOperands o = makeMatmulOperands(type, n, k, m);
    std::vector<std::byte> packed(
        std::size_t((n + 15) / 16 * (k / 256) * cpu::packedKSuperBlockBytes(type)));
    packWeights(type, o.w.data(), n, k, packed.data());
    cpu::PackedMatmulFn fn = cpu::matmulPackedKScalar;
#if defined(IRIS_KERNELS_X86)
    if (isa == CpuIsa::Avx2) fn = cpu::matmulPackedKAvx2;
    if (isa == CpuIsa::Avx512) fn = cpu::matmulPackedKAvx512;
#endif
    for (auto _ : state) {
        fn(type, packed.data(), k, o.prepared.data(), m, o.y.data(), n, 0, n);
        benchmark::DoNotOptimize(o.y.data());
    }
    setMatmulCounters(state, packed.size());
}

// As benchMatmul, on the packed layout of q8_0, q5_0 and q4_0 (AVX2 and AVX-512 VNNI; the ISA
// of IRIS_CPU_ISA): Gdots counts 64 multiply-adds (one vpdpbusd) as one, 10^9 per second.
void benchMatmulPacked(benchmark::State& state, iris::kernels::TensorType type) {
    using namespace iris::kernels;
    const std::int64_t n = state.range(0), k = state.range(1), m = state.range(2);
    const std::int64_t bytes = packedBytes(type, n, k);
    if (bytes == 0) {
        state.SkipWithError("no packed layout for this type on this CPU (AVX2 or later)");
        return;
    }
    MatmulOperands o = makeMatmulOperands(type, n, k, m);
    std::vector<std::byte> packed(static_cast<std::size_t>(bytes));
    packWeights(type, o.w.data(), n, k, packed.data());
    for (auto _ : state) {
        matmulPacked(type, packed.data(), k, o.prepared.data(), m, o.y.data(), n, 0, n);
        benchmark::DoNotOptimize(o.y.data());
    }
    setMatmulCounters(state, packed.size());
    state.counters["Gdots"] = benchmark::Counter(
        double(m * n * k / 64) * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

#if defined(IRIS_KERNELS_X86)
// 12 independent chains of vpdpbusd on registers: one core's throughput with no loads.
__attribute__((target("avx512f,avx512vnni"), noipa)) int vnniChains(std::int64_t rounds) {
    __m512i a[12];
    for (int i = 0; i < 12; ++i)
        a[i] = _mm512_set1_epi32(i);  // distinct, so the compiler keeps 12 chains
    __m512i w = _mm512_set1_epi32(0x01020304), x = _mm512_set1_epi32(0x01010101);
    __asm__("" : "+v"(w), "+v"(x));  // opaque, so the chains are not folded at compile time
    for (std::int64_t r = 0; r < rounds; ++r)
        for (__m512i& v : a)
            v = _mm512_dpbusd_epi32(v, w, x);
    for (int i = 1; i < 12; ++i)
        a[0] = _mm512_add_epi32(a[0], a[i]);
    return _mm512_reduce_add_epi32(a[0]);
}

void benchVnniPeak(benchmark::State& state) {
    if (!iris::kernels::cpuFeatures().avx512vnni) {
        state.SkipWithError("CPU lacks AVX-512 VNNI");
        return;
    }
    constexpr std::int64_t kRounds = 1 << 20;
    for (auto _ : state)
        benchmark::DoNotOptimize(vnniChains(kRounds));
    state.counters["Gdots"] = benchmark::Counter(
        double(12 * kRounds) * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}
#endif

// Qwen2.5-0.5B's FFN down projection: 896 x 4864 (decode, and a 64-token prefill chunk). Its rows
// are whole K super-blocks (4864 = 19 x 256); the 896-wide rows of the other projections are not,
// which is why llama.cpp's Q4_K_M stores those as q5_0 / q8_0.
void matmulShapes(benchmark::internal::Benchmark* b) {
    b->Args({896, 4864, 1})
        ->Args({896, 4864, 64})
        ->Args({151936, 896, 1});  // last: the output head, from DRAM
}

// One dense product y = x W^T (+ bias), single-threaded, with W (n x k) f32 or f16/bf16.
// Args: m, k, n.
enum class Bf16Kernel { None, Dots, Tiles };  // GemmPrecision::Bf16: AVX512-BF16 or AMX

void benchGemm(benchmark::State& state, iris::kernels::TensorType type, CpuIsa isa,
               Bf16Kernel bf16 = Bf16Kernel::None) {
    using namespace iris::kernels;
    if (isa > highestSupportedIsa(cpuFeatures())) {
        state.SkipWithError("CPU lacks this level");
        return;
    }
    if ((bf16 == Bf16Kernel::Dots && !cpuFeatures().avx512bf16) ||
        (bf16 == Bf16Kernel::Tiles && !(cpuFeatures().amxBf16 && cpuFeatures().avx512bf16))) {
        state.SkipWithError("CPU (or OS) lacks AVX512-BF16 or AMX bf16 tiles");
        return;
    }
    const std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<float> w32;
    std::vector<std::uint16_t> w16;
    if (type == TensorType::F32) {
        w32.resize(std::size_t(n * k));
        for (float& v : w32)
            v = normal(rng);
    } else {
        w16.resize(std::size_t(n * k));
        for (std::uint16_t& v : w16)
            v = type == TensorType::F16 ? fp32ToFp16(normal(rng)) : fp32ToBf16(normal(rng));
    }
    const void* w = type == TensorType::F32 ? static_cast<const void*>(w32.data())
                                            : static_cast<const void*>(w16.data());
    // y 64-byte aligned, so that runs do not differ by where malloc put it.
    std::vector<float> x(std::size_t(m * k), 0.0f), yStorage(std::size_t(m * n + 16), 0.0f);
    float* y = yStorage.data();
    while (reinterpret_cast<std::uintptr_t>(y) % 64 != 0)
        ++y;
    std::vector<float> bias(std::size_t(n), 0.0f);
    for (float& v : x)
        v = normal(rng);
    for (float& v : bias)
        v = normal(rng);
    cpu::GemmFn fn = isa == CpuIsa::Scalar ? cpu::gemmScalar
#if defined(IRIS_KERNELS_X86)
                     : isa == CpuIsa::Avx2       ? cpu::gemmAvx2
                     : bf16 == Bf16Kernel::Tiles ? cpu::gemmBf16Amx
                     : bf16 == Bf16Kernel::Dots  ? cpu::gemmBf16Avx512
                                                 : cpu::gemmAvx512;
#else
                                             : nullptr;
#endif
    for (auto _ : state) {
        fn(type, w, k, k, x.data(), k, m, bias.data(), y, n, 0, n);
        benchmark::DoNotOptimize(y);
        benchmark::ClobberMemory();
    }
    state.counters["GFLOP/s"] = benchmark::Counter(
        double(2 * m * n * k) * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

// The Qwen2.5-VL vision tower on a 1920 x 1080-ish screenshot (5336 patches): the attention
// projections (1280 -> 1280), the MLP up (1280 -> 3420) and down (3420 -> 1280); attention
// products of one full-attention block in 1024-query chunks (S = Q K^T with headDim 80, then
// O = P V^T); and a decoder prefill chunk of 512 tokens (Qwen2.5-0.5B widths).
void gemmVisionShapes(benchmark::internal::Benchmark* b) {
    b->Args({5336, 1280, 1280})->Args({5336, 1280, 3420})->Args({5336, 3420, 1280});
    b->Args({1024, 80, 5336})->Args({1024, 5336, 80});
    b->Args({512, 896, 4864})->Args({512, 4864, 896});
    b->Unit(benchmark::kMillisecond);
}
void gemmSmallShapes(benchmark::internal::Benchmark* b) {  // for the slow scalar reference
    b->Args({64, 1280, 1280})->Unit(benchmark::kMillisecond);
}
// kernels::matmul on the prefill shapes above, for the gemm/matmul ratio (n, k, m).
void matmulPrefillShapes(benchmark::internal::Benchmark* b) {
    b->Args({4864, 896, 512})->Args({896, 4864, 512})->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK_CAPTURE(benchGemm, F32_scalar, iris::kernels::TensorType::F32, CpuIsa::Scalar)
    ->Apply(gemmSmallShapes);
BENCHMARK_CAPTURE(benchGemm, F16_scalar, iris::kernels::TensorType::F16, CpuIsa::Scalar)
    ->Apply(gemmSmallShapes);
#define IRIS_GEMM_BENCH(type)                                                                    \
    BENCHMARK_CAPTURE(benchGemm, type##_avx2, iris::kernels::TensorType::type, CpuIsa::Avx2)     \
        ->Apply(gemmVisionShapes);                                                               \
    BENCHMARK_CAPTURE(benchGemm, type##_avx512, iris::kernels::TensorType::type, CpuIsa::Avx512) \
        ->Apply(gemmVisionShapes);
IRIS_GEMM_BENCH(F32)
IRIS_GEMM_BENCH(F16)
IRIS_GEMM_BENCH(BF16)
BENCHMARK_CAPTURE(benchGemm, F16_avx512bf16, iris::kernels::TensorType::F16, CpuIsa::Avx512,
                  Bf16Kernel::Dots)
    ->Apply(gemmVisionShapes);
BENCHMARK_CAPTURE(benchGemm, F16_amx_bf16, iris::kernels::TensorType::F16, CpuIsa::Avx512,
                  Bf16Kernel::Tiles)
    ->Apply(gemmVisionShapes);
BENCHMARK_CAPTURE(benchMatmul, F16_avx2_prefill, iris::kernels::TensorType::F16, CpuIsa::Avx2)
    ->Apply(matmulPrefillShapes);
BENCHMARK_CAPTURE(benchMatmul, F16_avx512_prefill, iris::kernels::TensorType::F16, CpuIsa::Avx512)
    ->Apply(matmulPrefillShapes);

#define IRIS_MATMUL_BENCH(type)                                                                    \
    BENCHMARK_CAPTURE(benchMatmul, type##_scalar, iris::kernels::TensorType::type, CpuIsa::Scalar) \
        ->Apply(matmulShapes);                                                                     \
    BENCHMARK_CAPTURE(benchMatmul, type##_avx2, iris::kernels::TensorType::type, CpuIsa::Avx2)     \
        ->Apply(matmulShapes);                                                                     \
    BENCHMARK_CAPTURE(benchMatmul, type##_avx512, iris::kernels::TensorType::type, CpuIsa::Avx512) \
        ->Apply(matmulShapes);
IRIS_MATMUL_BENCH(F16)
IRIS_MATMUL_BENCH(Q8_0)
IRIS_MATMUL_BENCH(Q4_K)
IRIS_MATMUL_BENCH(Q6_K)
IRIS_MATMUL_BENCH(Q4_0)

// The packed K layouts, on the FFN down projection only (the output head is never a K type in
// the Q4_K_M recipe).
void matmulPackedShapes(benchmark::internal::Benchmark* b) {
    b->Args({896, 4864, 1})->Args({896, 4864, 64});
}
#define IRIS_MATMUL_PACKED_BENCH(type)                                                    \
    BENCHMARK_CAPTURE(benchMatmulPackedK, type##_avx2, iris::kernels::TensorType::type,   \
                      CpuIsa::Avx2)                                                       \
        ->Apply(matmulPackedShapes);                                                      \
    BENCHMARK_CAPTURE(benchMatmulPackedK, type##_avx512, iris::kernels::TensorType::type, \
                      CpuIsa::Avx512)                                                     \
        ->Apply(matmulPackedShapes);
IRIS_MATMUL_PACKED_BENCH(Q4_K)
IRIS_MATMUL_PACKED_BENCH(Q5_K)
IRIS_MATMUL_PACKED_BENCH(Q6_K)
IRIS_MATMUL_BENCH(Q5_0)

// Qwen2.5-0.5B's FFN up (gate) and down projections: decode, four sequences decoding together
// (a serving step), and a 512-token prefill chunk; and its tied output head decoding one and
// four sequences (144 MB of q8_0: read from memory, not from the caches).
void matmulPackedQ8Shapes(benchmark::internal::Benchmark* b) {
    b->Args({4864, 896, 1})->Args({4864, 896, 4})->Args({4864, 896, 512})->Args({896, 4864, 512});
    b->Args({151936, 896, 1})->Args({151936, 896, 4});
    // A 7B model's (Qwen2.5-VL-7B) attention and FFN projections on a 128-token chunk.
    b->Args({3584, 3584, 128})->Args({18944, 3584, 128})->Args({3584, 18944, 128});
    b->Unit(benchmark::kMillisecond);
}
BENCHMARK_CAPTURE(benchMatmulPacked, Q8_0, iris::kernels::TensorType::Q8_0)
    ->Apply(matmulPackedQ8Shapes);
BENCHMARK_CAPTURE(benchMatmulPacked, Q4_0, iris::kernels::TensorType::Q4_0)
    ->Apply(matmulPackedQ8Shapes);
#if defined(IRIS_KERNELS_X86)
BENCHMARK(benchVnniPeak)->Unit(benchmark::kMillisecond);
#endif

void benchAttendRows(benchmark::State& state, iris::kernels::cpu::AttendRowsFn fn, CpuIsa isa) {
    using namespace iris::kernels;
    if (isa > highestSupportedIsa(cpuFeatures())) {
        state.SkipWithError("CPU lacks this level");
        return;
    }
    constexpr int kHeadDim = 64, kKvHeads = 2, kBlockSize = 16, kGroup = 7;
    const std::int64_t length = state.range(0);
    const std::int64_t blocks = (length + kBlockSize - 1) / kBlockSize;
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<std::uint16_t> keys(std::size_t(blocks * kBlockSize * kKvHeads * kHeadDim));
    std::vector<std::uint16_t> values(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
        keys[i] = fp32ToFp16(normal(rng));
        values[i] = fp32ToFp16(normal(rng));
    }
    std::vector<std::int32_t> table(static_cast<std::size_t>(blocks));
    for (std::size_t b = 0; b < table.size(); ++b)  // blocks out of order, as a pool gives them
        table[b] = std::int32_t((b * 7919) % table.size());
    const PagedKv kv{.keys = keys.data(),
                     .values = values.data(),
                     .blockTable = table.data(),
                     .blockSize = kBlockSize,
                     .kvHeads = kKvHeads,
                     .headDim = kHeadDim,
                     .type = TensorType::F16};
    std::vector<float> q(std::size_t(cpu::kAttendTile * kHeadDim)), out(q.size());
    for (float& v : q)
        v = normal(rng);
    std::vector<AttentionRow> rows(cpu::kAttendTile);
    double keyRows = 0.0;
    for (int r = 0; r < cpu::kAttendTile; ++r) {
        // The chunk's last tokens: the first row's is the furthest back.
        const std::int64_t token = (cpu::kAttendTile - 1) / kGroup - r / kGroup;
        rows[std::size_t(r)] = {q.data() + r * kHeadDim, out.data() + r * kHeadDim,
                                length - token};
        keyRows += double(rows[std::size_t(r)].length);
    }
    std::vector<float> scratch(std::size_t(attendRowsScratch(kHeadDim, length)));
    for (auto _ : state) {
        fn(rows.data(), cpu::kAttendTile, kv, 0, 0.125f, scratch.data());
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["GFLOP/s"] = benchmark::Counter(
        4.0 * kHeadDim * keyRows * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void attendShapes(benchmark::internal::Benchmark* b) {
    b->Arg(512)->Arg(2048)->Arg(8192)->Unit(benchmark::kMicrosecond);
}
BENCHMARK_CAPTURE(benchAttendRows, scalar, iris::kernels::cpu::attendRowsScalar, CpuIsa::Scalar)
    ->Apply(attendShapes);
#if defined(IRIS_KERNELS_X86)
BENCHMARK_CAPTURE(benchAttendRows, avx2, iris::kernels::cpu::attendRowsAvx2, CpuIsa::Avx2)
    ->Apply(attendShapes);
BENCHMARK_CAPTURE(benchAttendRows, avx512, iris::kernels::cpu::attendRowsAvx512, CpuIsa::Avx512)
    ->Apply(attendShapes);
#endif

BENCHMARK_CAPTURE(benchRmsNorm, scalar, iris::kernels::cpu::rmsNormScalar, CpuIsa::Scalar)
    ->Apply(shapes);
#if defined(IRIS_KERNELS_X86)
BENCHMARK_CAPTURE(benchRmsNorm, avx2, iris::kernels::cpu::rmsNormAvx2, CpuIsa::Avx2)->Apply(shapes);
BENCHMARK_CAPTURE(benchRmsNorm, avx512, iris::kernels::cpu::rmsNormAvx512, CpuIsa::Avx512)
    ->Apply(shapes);
#endif

BENCHMARK_MAIN();
