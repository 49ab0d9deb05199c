// Decode products on the GPU as a fraction of its memory bandwidth, both measured in this run,
// and the tensor-core products of a prefill chunk in TFLOP/s.
//
//   iris_cuda_bench [--repeat N]
//
// A decode step reads every weight once, so its speed limit is the bandwidth: the program first
// times a large device-to-device copy (bytes read plus written per second), then each product of
// a Qwen2.5-VL-7B-shaped layer (hidden 3584, MLP 18944) for several weight types and 1 or 4
// activation rows, and prints the weight bytes read per second and that rate over the copy's;
// then the same layers for a 2048-token prefill chunk (2 m n k floating-point operations each);
// last, a decode step's attention in a MiniMax-M3-shaped layer (64 query heads, 4 KV heads of
// 128, f16 KV in 16-token pages) at long contexts: dense (attendDecode) against MiniMax sparse
// attention (index scores over 128-token blocks, top 16 blocks, attention over those), with the
// bytes each reads per token.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernels/cuda/attention_decode.cuh"
#include "kernels/cuda/matmul_decode.cuh"
#include "kernels/cuda/matmul_prefill.cuh"
#include "kernels/cuda/sparse_select.cuh"
#include "kernels/fp16.h"
#include "kernels/quant.h"
#include "kernels/tensor_type.h"

namespace {

using iris::kernels::TensorType;
namespace cuda = iris::kernels::cuda;

void check(cudaError_t err, const char* what) {
    if (err == cudaSuccess) return;
    std::fprintf(stderr, "iris_cuda_bench: %s: %s\n", what, cudaGetErrorString(err));
    std::exit(1);
}

// Milliseconds per call of `body`, the median of `repeat` timed calls after two warm-ups.
template <class Body>
double medianMilliseconds(int repeat, Body&& body) {
    cudaEvent_t start, stop;
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
    for (int i = 0; i < 2; ++i)
        body();
    std::vector<double> times;
    for (int i = 0; i < repeat; ++i) {
        check(cudaEventRecord(start), "cudaEventRecord");
        body();
        check(cudaEventRecord(stop), "cudaEventRecord");
        check(cudaEventSynchronize(stop), "cudaEventSynchronize");
        float ms = 0.0f;
        check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
        times.push_back(ms);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    std::nth_element(times.begin(), times.begin() + repeat / 2, times.end());
    return times[std::size_t(repeat / 2)];
}

// Bytes read plus written per second by a 2 GiB device-to-device copy.
double copyBandwidth(int repeat) {
    const std::size_t bytes = std::size_t(2) << 30;
    void *a = nullptr, *b = nullptr;
    check(cudaMalloc(&a, bytes), "cudaMalloc (copy source)");
    check(cudaMalloc(&b, bytes), "cudaMalloc (copy target)");
    check(cudaMemset(a, 1, bytes), "cudaMemset");
    const double ms = medianMilliseconds(repeat, [&] {
        check(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpyAsync");
    });
    cudaFree(a);
    cudaFree(b);
    return 2.0 * double(bytes) / (ms * 1e-3);
}

// n rows of k values of `type`: 64 distinct quantised random rows, repeated (the values do not
// change the speed, only realistic scales keep the arithmetic free of infinities).
std::vector<std::uint8_t> weightRows(TensorType type, std::int64_t n, std::int64_t k) {
    const auto& info = iris::kernels::tensorTypeInfo(type);
    const std::int64_t rowBytes = k / info.blockElements * info.blockBytes;
    std::vector<std::uint8_t> rows(std::size_t(n * rowBytes));
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<float> values(static_cast<std::size_t>(k));
    for (std::int64_t r = 0; r < std::min<std::int64_t>(n, 64); ++r) {
        for (float& v : values)
            v = normal(rng);
        iris::kernels::quantizeRow(type, values.data(), &rows[std::size_t(r * rowBytes)], k);
    }
    for (std::int64_t r = 64; r < n; ++r)
        std::memcpy(&rows[std::size_t(r * rowBytes)], &rows[std::size_t((r % 64) * rowBytes)],
                    std::size_t(rowBytes));
    return rows;
}

struct Shape {
    const char* name;
    std::int64_t n, k;
};

void benchProduct(TensorType type, const Shape& shape, std::int64_t m, int repeat,
                  double bandwidth) {
    const std::vector<std::uint8_t> host = weightRows(type, shape.n, shape.k);
    void *w = nullptr, *x = nullptr, *y = nullptr, *scratch = nullptr;
    check(cudaMalloc(&w, host.size()), "cudaMalloc (weights)");
    check(cudaMemcpy(w, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMalloc(&x, std::size_t(m * shape.k) * 4), "cudaMalloc (activations)");
    check(cudaMemset(x, 0, std::size_t(m * shape.k) * 4), "cudaMemset");
    check(cudaMalloc(&y, std::size_t(m * shape.n) * 4), "cudaMalloc (outputs)");
    check(cudaMalloc(&scratch, std::size_t(std::max<std::int64_t>(
                                   cuda::decodeScratchBytes(type, m, shape.k), 4))),
          "cudaMalloc (scratch)");
    const double ms = medianMilliseconds(repeat, [&] {
        check(cuda::matmulDecode(type, w, shape.n, shape.k, static_cast<float*>(x), shape.k, m,
                                 static_cast<float*>(y), shape.n, scratch, nullptr),
              "matmulDecode");
    });
    const double rate = double(host.size()) / (ms * 1e-3);
    std::printf("%-6s %-9s %5lld x %-5lld m=%lld  %8.1f us  %7.1f GB/s  %5.1f%% of copy\n",
                std::string(iris::kernels::tensorTypeInfo(type).name).c_str(), shape.name,
                static_cast<long long>(shape.n), static_cast<long long>(shape.k),
                static_cast<long long>(m), ms * 1e3, rate / 1e9, 100.0 * rate / bandwidth);
    cudaFree(w);
    cudaFree(x);
    cudaFree(y);
    cudaFree(scratch);
}

void benchPrefill(TensorType type, const Shape& shape, std::int64_t m, int repeat) {
    const std::vector<std::uint8_t> host = weightRows(type, shape.n, shape.k);
    void *w = nullptr, *x = nullptr, *y = nullptr;
    check(cudaMalloc(&w, host.size()), "cudaMalloc (weights)");
    check(cudaMemcpy(w, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMalloc(&x, std::size_t(m * shape.k) * 4), "cudaMalloc (activations)");
    check(cudaMemset(x, 0, std::size_t(m * shape.k) * 4), "cudaMemset");
    check(cudaMalloc(&y, std::size_t(m * shape.n) * 4), "cudaMalloc (outputs)");
    const double ms = medianMilliseconds(repeat, [&] {
        check(cuda::matmulPrefill(type, w, shape.n, shape.k, static_cast<float*>(x), shape.k, m,
                                  static_cast<float*>(y), shape.n, nullptr),
              "matmulPrefill");
    });
    const double flops = 2.0 * double(m) * double(shape.n) * double(shape.k);
    std::printf("%-6s %-9s %5lld x %-5lld m=%lld  %8.1f us  %7.1f TFLOP/s\n",
                std::string(iris::kernels::tensorTypeInfo(type).name).c_str(), shape.name,
                static_cast<long long>(shape.n), static_cast<long long>(shape.k),
                static_cast<long long>(m), ms * 1e3, flops / (ms * 1e-3) / 1e12);
    cudaFree(w);
    cudaFree(x);
    cudaFree(y);
}

// A device buffer of `bytes` filled with a repeated random pattern of f32 (or f16) values of
// about unit size: attention's speed does not depend on the values, its arithmetic must stay
// finite.
void* randomBuffer(std::size_t bytes, bool half) {
    constexpr std::size_t kPattern = std::size_t(1) << 22;
    std::vector<std::uint8_t> pattern(kPattern);
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (std::size_t i = 0; i < kPattern; i += half ? 2 : 4) {
        const float v = normal(rng);
        if (half) {
            const std::uint16_t h = iris::kernels::fp32ToFp16(v);
            std::memcpy(&pattern[i], &h, 2);
        } else {
            std::memcpy(&pattern[i], &v, 4);
        }
    }
    void* data = nullptr;
    check(cudaMalloc(&data, bytes), "cudaMalloc (attention inputs)");
    for (std::size_t at = 0; at < bytes; at += kPattern)
        check(cudaMemcpy(static_cast<std::uint8_t*>(data) + at, pattern.data(),
                         std::min(kPattern, bytes - at), cudaMemcpyHostToDevice),
              "cudaMemcpy");
    return data;
}

// One decode step's attention in a MiniMax-M3-shaped layer for `seqs` sequences of `context`
// tokens each: dense over every position, then sparse over the chosen blocks.
void benchAttention(std::int64_t context, int seqs, int repeat, double bandwidth) {
    constexpr int kHeads = 64, kKvHeads = 4, kHeadDim = 128, kPage = 16, kIndexDim = 128,
                  kSelection = 128, kTopK = 16, kLocal = 1;
    const std::int64_t pages = context / kPage, pool = pages * seqs;
    const std::size_t kvBytes = std::size_t(pool * kPage * kKvHeads * kHeadDim) * 2;
    const std::size_t indexBytes = std::size_t(pool * kPage * kIndexDim) * 4;
    void* keys = randomBuffer(kvBytes, true);
    void* values = randomBuffer(kvBytes, true);
    void* indexKeys = randomBuffer(indexBytes, false);
    void* q = randomBuffer(std::size_t(seqs * kHeads * kHeadDim) * 4, false);
    void* iq = randomBuffer(std::size_t(seqs * kKvHeads * kIndexDim) * 4, false);
    std::vector<std::int32_t> table(static_cast<std::size_t>(pool));
    for (std::int64_t i = 0; i < pool; ++i)
        table[std::size_t(i)] = std::int32_t(i);  // sequence s's pages at s * pages
    const std::vector<std::int32_t> lengths(static_cast<std::size_t>(seqs), std::int32_t(context));
    void *dTable = nullptr, *dLengths = nullptr, *out = nullptr;
    check(cudaMalloc(&dTable, table.size() * 4), "cudaMalloc (block tables)");
    check(cudaMemcpy(dTable, table.data(), table.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMalloc(&dLengths, lengths.size() * 4), "cudaMalloc (lengths)");
    check(cudaMemcpy(dLengths, lengths.data(), lengths.size() * 4, cudaMemcpyHostToDevice),
          "cudaMemcpy");
    check(cudaMalloc(&out, std::size_t(seqs * kHeads * kHeadDim) * 4), "cudaMalloc (outputs)");
    const auto* tables = static_cast<const std::int32_t*>(dTable);
    const auto* lens = static_cast<const std::int32_t*>(dLengths);
    const iris::kernels::PagedKv kv{keys,     values,   tables,         kPage,
                                    kKvHeads, kHeadDim, TensorType::F16};
    const float scale = 1.0f / std::sqrt(float(kHeadDim));

    void* denseScratch = nullptr;
    check(cudaMalloc(&denseScratch,
                     std::size_t(std::max<std::int64_t>(
                         cuda::attendDecodeScratchBytes(seqs, kHeads, kHeadDim, context), 4))),
          "cudaMalloc (dense scratch)");
    const double dense = medianMilliseconds(repeat, [&] {
        check(cuda::attendDecode(static_cast<float*>(q), seqs, kHeads, kv, pages, lens, context,
                                 scale, static_cast<float*>(out), denseScratch, nullptr),
              "attendDecode");
    });

    const int blocks = int((context + kSelection - 1) / kSelection), rows = seqs * kKvHeads;
    void *scores = nullptr, *selected = nullptr, *counts = nullptr, *sparseScratch = nullptr;
    check(cudaMalloc(&scores, std::size_t(rows) * std::size_t(blocks) * 4), "cudaMalloc (scores)");
    check(cudaMalloc(&selected, std::size_t(rows * kTopK) * 4), "cudaMalloc (selection)");
    check(cudaMalloc(&counts, std::size_t(rows) * 4), "cudaMalloc (counts)");
    check(cudaMalloc(&sparseScratch,
                     std::size_t(std::max(cuda::selectTopBlocksScratchBytes(rows, blocks, kTopK),
                                          cuda::attendSelectedScratchBytes(seqs, kHeads, kHeadDim,
                                                                           kTopK, kSelection)))),
          "cudaMalloc (sparse scratch)");
    const iris::kernels::PagedIndexKeys index{static_cast<float*>(indexKeys), tables, kPage,
                                              kIndexDim};
    auto* chosen = static_cast<std::int32_t*>(selected);
    auto* chosenCounts = static_cast<std::int32_t*>(counts);
    const double sparse = medianMilliseconds(repeat, [&] {
        check(cuda::indexerBlockScores(static_cast<float*>(iq), seqs, kKvHeads, index, pages, lens,
                                       kSelection, blocks, static_cast<float*>(scores), nullptr),
              "indexerBlockScores");
        check(cuda::selectTopBlocks(static_cast<float*>(scores), seqs, kKvHeads, lens, kSelection,
                                    blocks, kTopK, kLocal, chosen, chosenCounts, sparseScratch,
                                    nullptr),
              "selectTopBlocks");
        check(cuda::attendSelectedBlocks(static_cast<float*>(q), seqs, kHeads, kv, pages, lens,
                                         chosen, chosenCounts, kTopK, kSelection, scale,
                                         static_cast<float*>(out), sparseScratch, nullptr),
              "attendSelectedBlocks");
    });
    // Bytes each must read per step: every K/V row, or the index keys and the chosen blocks.
    const double denseBytes = double(kvBytes) * 2;
    const double sparseBytes =
        double(indexBytes) + double(seqs) * kKvHeads *
                                 double(std::min<std::int64_t>(context, kTopK * kSelection)) *
                                 kHeadDim * 2 * 2;
    std::printf(
        "%8lld tokens x %d  dense %8.1f us (%5.1f%% of copy)  sparse %8.1f us (%5.1f%% of "
        "copy)  %5.1fx\n",
        static_cast<long long>(context), seqs, dense * 1e3,
        100.0 * denseBytes / (dense * 1e-3) / bandwidth, sparse * 1e3,
        100.0 * sparseBytes / (sparse * 1e-3) / bandwidth, dense / sparse);
    for (void* p : {keys, values, indexKeys, q, iq, dTable, dLengths, out, denseScratch, scores,
                    selected, counts, sparseScratch})
        cudaFree(p);
}

}  // namespace

int main(int argc, char** argv) {
    int repeat = 20;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
            repeat = std::max(1, std::atoi(argv[++i]));
        } else {
            std::fprintf(stderr, "usage: iris_cuda_bench [--repeat N]\n");
            return 2;
        }
    }
    int device = 0;
    cudaDeviceProp props{};
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
    const double bandwidth = copyBandwidth(repeat);
    std::printf("device: %s (sm_%d%d, %d SMs), device-to-device copy %.0f GB/s (read + write)\n",
                props.name, props.major, props.minor, props.multiProcessorCount, bandwidth / 1e9);
    const Shape shapes[] = {
        {"attn_qkv", 4608, 3584}, {"ffn_up", 18944, 3584}, {"ffn_down", 3584, 18944}};
    for (TensorType type : {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0, TensorType::Q4_0,
                            TensorType::F16, TensorType::BF16}) {
        for (const Shape& shape : shapes)
            for (std::int64_t m : {1, 4})
                benchProduct(type, shape, m, repeat, bandwidth);
    }
    std::printf("prefill (bf16 tensor cores, f32 sums):\n");
    for (TensorType type : {TensorType::Q4_K, TensorType::Q8_0, TensorType::BF16})
        for (const Shape& shape : shapes)
            benchPrefill(type, shape, 2048, std::max(3, repeat / 4));
    std::printf("decode attention, MiniMax-M3 layer shape, dense against sparse (MSA):\n");
    for (std::int64_t context : {std::int64_t(32768), std::int64_t(131072), std::int64_t(1048576)})
        benchAttention(context, 1, std::max(3, repeat / 4), bandwidth);
    benchAttention(131072, 8, std::max(3, repeat / 4), bandwidth);
    return 0;
}
