// MiniMax Sparse Attention (MSA) against dense attention for one decode token on one
// MiniMax-M3-shaped layer (docs/minimax-m3.md 1.1): 64 query heads, 4 KV heads, head dim 128,
// 4 index heads of 128, selection blocks of 128 tokens, top-16 blocks, 1 local block. K/V in the
// engine's default f16 pages of 16 tokens, indexer keys f32 in the same pages (shuffled page
// table), random data. One thread, as the kernels run per (token, group) work item.
//
//   BM_Dense/<context>   attendPaged over all 64 heads
//   BM_Msa/<context>     indexer block scores for the 4 groups + top-k + attention over the
//                        selected blocks
//   BM_Indexer/<context> the indexer block scores alone (its share of BM_Msa)
//   BM_PrefillGather/BM_PrefillMasked: a 32-token prefill chunk's sparse attention, per-query
//                        gather against the block-masked kernel
//
// Run: iris_msa_bench --benchmark_repetitions=3 (Release build).
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "kernels/attention.h"
#include "kernels/fp16.h"
#include "kernels/sparse_attention.h"

namespace {

using namespace iris::kernels;

constexpr int kHeads = 64, kKvHeads = 4, kHeadDim = 128, kIndexDim = 128, kBlock = 128, kTopK = 16,
              kLocal = 1, kPage = 16;

struct Layer {
    std::int64_t length;
    std::vector<std::int32_t> table;
    std::vector<std::uint16_t> keys, values;
    std::vector<float> indexKeys, q, iq, out, scratch, blockScores;
    std::vector<std::int32_t> chosen;

    explicit Layer(std::int64_t n) : length(n) {
        const std::int64_t pages = (n + kPage - 1) / kPage;
        table.resize(std::size_t(pages));
        std::iota(table.begin(), table.end(), 0);
        std::mt19937 rng(1);
        std::shuffle(table.begin(), table.end(), rng);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        const std::size_t rows = std::size_t(pages * kPage);
        keys.resize(rows * kKvHeads * kHeadDim);
        values.resize(keys.size());
        for (std::size_t i = 0; i < keys.size(); ++i) {
            keys[i] = fp32ToFp16(normal(rng));
            values[i] = fp32ToFp16(normal(rng));
        }
        indexKeys.resize(rows * kIndexDim);
        for (float& x : indexKeys)
            x = normal(rng);
        q.resize(kHeads * kHeadDim);
        for (float& x : q)
            x = normal(rng);
        iq.resize(kKvHeads * kIndexDim);
        for (float& x : iq)
            x = normal(rng);
        out.resize(q.size());
        scratch.resize(std::size_t(kHeads / kKvHeads) * std::size_t(n + kTopK * kBlock));
        blockScores.resize(std::size_t(kKvHeads * selectionBlocks(n, kBlock)));
        chosen.resize(kTopK);
    }
    PagedKv kv() const {
        return {keys.data(), values.data(), table.data(),   kPage,
                kKvHeads,    kHeadDim,      TensorType::F16};
    }
    PagedIndexKeys index() const { return {indexKeys.data(), table.data(), kPage, kIndexDim}; }
};

Layer& layerFor(std::int64_t n) {
    static std::map<std::int64_t, std::unique_ptr<Layer>> layers;
    auto& l = layers[n];
    if (!l) l = std::make_unique<Layer>(n);
    return *l;
}

const float kScale = 1.0f / std::sqrt(float(kHeadDim));

void BM_Dense(benchmark::State& state) {
    Layer& l = layerFor(state.range(0));
    const int group = kHeads / kKvHeads;
    for (auto _ : state) {
        for (int g = 0; g < kKvHeads; ++g)
            attendPaged(l.q.data(), kHeads, l.kv(), l.length, kScale, l.out.data(),
                        l.scratch.data(), g * group, (g + 1) * group);
        benchmark::DoNotOptimize(l.out.data());
    }
}

void BM_Msa(benchmark::State& state) {
    Layer& l = layerFor(state.range(0));
    const int group = kHeads / kKvHeads;
    const std::int64_t blocks = selectionBlocks(l.length, kBlock);
    for (auto _ : state) {
        indexerBlockScores(l.iq.data(), kKvHeads, l.index(), l.length, kBlock,
                           l.blockScores.data());
        for (int g = 0; g < kKvHeads; ++g) {
            const int count = selectTopBlocks(l.blockScores.data() + g * blocks, blocks, kTopK,
                                              kLocal, l.chosen.data());
            attendBlocks(l.q.data(), kHeads, l.kv(), l.length, kScale, l.chosen.data(), count,
                         kBlock, l.out.data(), l.scratch.data(), g * group, (g + 1) * group);
        }
        benchmark::DoNotOptimize(l.out.data());
    }
}

void BM_Indexer(benchmark::State& state) {
    Layer& l = layerFor(state.range(0));
    for (auto _ : state) {
        indexerBlockScores(l.iq.data(), kKvHeads, l.index(), l.length, kBlock,
                           l.blockScores.data());
        benchmark::DoNotOptimize(l.blockScores.data());
    }
}

// A prefill chunk of 32 queries at the end of the context, each with its own top-16 from the
// indexer (random queries, so the chunk's selections overlap less than real text would): the
// per-query gather against the block-masked kernel that reads each selected block once.
constexpr int kChunk = 32;

struct Chunk {
    std::vector<float> q, out, scratch;
    std::vector<std::int64_t> lengths;
    std::vector<std::uint8_t> mask;                 // [group][query][block]
    std::vector<std::vector<std::int32_t>> chosen;  // [group * kChunk + query]
    std::int64_t blocks = 0;

    explicit Chunk(Layer& l) {
        std::mt19937 rng(2);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        q.resize(std::size_t(kChunk) * kHeads * kHeadDim);
        for (float& x : q)
            x = normal(rng);
        out.resize(q.size());
        blocks = selectionBlocks(l.length, kBlock);
        mask.assign(std::size_t(kKvHeads * kChunk * blocks), 0);
        chosen.resize(std::size_t(kKvHeads * kChunk));
        std::vector<float> iq(kIndexDim), scores(static_cast<std::size_t>(blocks));
        for (int i = 0; i < kChunk; ++i) {
            lengths.push_back(l.length - kChunk + i + 1);
            for (int g = 0; g < kKvHeads; ++g) {
                for (float& x : iq)
                    x = normal(rng);
                const std::int64_t own = selectionBlocks(lengths.back(), kBlock);
                indexerBlockScores(iq.data(), 1, l.index(), lengths.back(), kBlock, scores.data());
                std::vector<std::int32_t>& c = chosen[std::size_t(g * kChunk + i)];
                c.resize(kTopK);
                c.resize(std::size_t(selectTopBlocks(scores.data(), own, kTopK, kLocal, c.data())));
                for (std::int32_t b : c)
                    mask[std::size_t((g * kChunk + i) * blocks + b)] = 1;
            }
        }
        scratch.resize(std::size_t(kChunk) * kHeads * (kHeadDim + 2) + kTopK * kBlock * kHeads);
    }
};

void BM_PrefillGather(benchmark::State& state) {
    Layer& l = layerFor(state.range(0));
    Chunk c(l);
    const int group = kHeads / kKvHeads;
    for (auto _ : state) {
        for (int i = 0; i < kChunk; ++i)
            for (int g = 0; g < kKvHeads; ++g) {
                const std::vector<std::int32_t>& chosen = c.chosen[std::size_t(g * kChunk + i)];
                attendBlocks(c.q.data() + i * kHeads * kHeadDim, kHeads, l.kv(),
                             c.lengths[std::size_t(i)], kScale, chosen.data(), int(chosen.size()),
                             kBlock, c.out.data() + i * kHeads * kHeadDim, c.scratch.data(),
                             g * group, (g + 1) * group);
            }
        benchmark::DoNotOptimize(c.out.data());
    }
}

void BM_PrefillMasked(benchmark::State& state) {
    Layer& l = layerFor(state.range(0));
    Chunk c(l);
    const int group = kHeads / kKvHeads;
    for (auto _ : state) {
        for (int g = 0; g < kKvHeads; ++g)
            attendMaskedBlocks(c.q.data(), kHeads * kHeadDim, kChunk, c.lengths.data(), kHeads,
                               l.kv(), kScale, c.mask.data() + g * kChunk * c.blocks, c.blocks,
                               kBlock, c.out.data(), kHeads * kHeadDim, c.scratch.data(), g * group,
                               (g + 1) * group);
        benchmark::DoNotOptimize(c.out.data());
    }
}

BENCHMARK(BM_Dense)->Arg(32768)->Arg(131072)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Msa)->Arg(32768)->Arg(131072)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Indexer)->Arg(32768)->Arg(131072)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrefillGather)->Arg(32768)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrefillMasked)->Arg(32768)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
