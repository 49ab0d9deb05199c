// MiniMax-M3 (dense leading layers, MoE, MSA) against the float64 reference in
// minimax_m3_reference.cpp, on tiny random models written by GgufWriter.
#include "inference/models/minimax_m3.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include <gtest/gtest.h>

#include "inference/models/model.h"
#include "tests/inference/models/loaded_model.h"
#include "tests/inference/models/minimax_m3_reference.h"

namespace iris::inference {
namespace {

using kernels::TensorType;
using testing::M3Spec;

std::unique_ptr<testing::LoadedModel> load(const M3Spec& spec) {
    return testing::loadModelBytes(testing::makeM3Model(spec), "m3.gguf");
}

Status loadError(const M3Spec& spec) {
    const std::vector<std::byte> bytes = testing::makeM3Model(spec);
    Result<GgufFile> file = GgufFile::parse(bytes, "bad.gguf");
    if (!file) return file.status();
    Result<std::unique_ptr<Model>> model = createModel(*file);
    return model ? Status{} : model.status();
}

// What the engine decided over all chunks: per layer, per token of the whole sequence.
struct Decisions {
    std::vector<std::vector<std::vector<int>>> experts;                       // [l][t]
    std::vector<std::vector<std::vector<float>>> weights;                     // [l][t]
    std::vector<std::vector<std::vector<std::vector<std::int32_t>>>> blocks;  // [l][t][g]
};

// Runs `tokens` in chunks of `chunk` (a whole-prompt prefill when chunk >= size, decoding when
// 1); after `prefill` tokens the rest is decoded one at a time. Returns every token's logits.
std::vector<float> run(Model& model, const std::vector<std::int32_t>& tokens, std::size_t chunk,
                       Decisions* decisions = nullptr, std::size_t prefill = SIZE_MAX,
                       TensorType kvType = TensorType::F32, int pageSize = 16) {
    ThreadPool pool(2);
    const std::int64_t pages = std::int64_t(tokens.size()) / pageSize + 2;
    Result<KvCache> cache = KvCache::create(model.kvCacheOptions(pages, pageSize, kvType));
    EXPECT_TRUE(cache) << cache.status().message();
    if (!cache) return {};
    const SequenceId seq = cache->newSequence();
    MiniMaxM3Trace trace;
    traceMiniMaxM3(model, decisions != nullptr ? &trace : nullptr);
    std::vector<float> logits;
    for (std::size_t begin = 0; begin < tokens.size();) {
        const std::size_t step = begin >= prefill ? 1 : std::min(chunk, prefill - begin);
        const std::size_t end = std::min(tokens.size(), begin + step);
        EXPECT_TRUE(cache->extend(seq, std::int64_t(end)).isOk());
        std::vector<TokenInput> batch;
        for (std::size_t i = begin; i < end; ++i) {
            const auto p = std::int32_t(i);
            batch.push_back({tokens[i], seq, std::int64_t(i), {p, p, p, 0}, true});
        }
        const Status status = model.forward(batch, *cache, pool, logits);
        EXPECT_TRUE(status.isOk()) << status.message();
        if (decisions != nullptr) {
            const std::size_t layers = trace.experts.size();
            decisions->experts.resize(layers);
            decisions->weights.resize(layers);
            decisions->blocks.resize(layers);
            for (std::size_t l = 0; l < layers; ++l) {
                for (auto& e : trace.experts[l])
                    decisions->experts[l].push_back(e);
                for (auto& w : trace.expertWeights[l])
                    decisions->weights[l].push_back(w);
                for (auto& b : trace.blocks[l])
                    decisions->blocks[l].push_back(b);
            }
        }
        begin = end;
    }
    traceMiniMaxM3(model, nullptr);
    return logits;
}

double relativeError(const std::vector<float>& got, const std::vector<double>& want) {
    EXPECT_EQ(got.size(), want.size());
    double maxDiff = 0, maxRef = 0;
    for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
        maxDiff = std::max(maxDiff, std::fabs(double(got[i]) - want[i]));
        maxRef = std::max(maxRef, std::fabs(want[i]));
    }
    return maxDiff / maxRef;
}

std::vector<double> widen(const std::vector<float>& v) {
    return {v.begin(), v.end()};
}

std::vector<std::int32_t> someTokens(std::size_t n, std::int64_t vocab, unsigned seed = 5) {
    std::vector<std::int32_t> tokens(n);
    std::uint32_t state = seed;
    for (std::int32_t& t : tokens) {
        state = state * 1664525u + 1013904223u;
        t = std::int32_t((state >> 8) % std::uint32_t(vocab));
    }
    return tokens;
}

// The reference with the engine's block choice where the reference itself sees a tie.
testing::M3ReferenceOptions tieTolerant(const Decisions& engine) {
    testing::M3ReferenceOptions options;
    options.tieTolerance = 1e-3;
    options.tieBreaker = [&engine](int l, int t, int g) {
        return engine.blocks[std::size_t(l)][std::size_t(t)][std::size_t(g)];
    };
    return options;
}

TEST(MiniMaxM3, ReadsTheArchitectureFromTheFile) {
    const M3Spec spec;
    auto m = load(spec);
    ASSERT_TRUE(m->model);
    const ModelConfig& c = m->model->config();
    EXPECT_EQ(c.architecture, "minimax-m3");
    EXPECT_EQ(c.ropeDims, 16);  // partial rotary: 16 of 32
    EXPECT_EQ(c.headDim, 32);
    EXPECT_EQ(c.indexerDim, 32);
    EXPECT_EQ(c.indexerFirstLayer, 1);
    EXPECT_EQ(c.selectionBlock, 16);
    const KvCacheOptions options = m->model->kvCacheOptions(8, 16, TensorType::F16);
    EXPECT_EQ(options.indexerDim, 32);
    Result<KvCache> cache = KvCache::create(options);
    ASSERT_TRUE(cache) << cache.status().message();
    EXPECT_NE(cache->indexKeys(1), nullptr);
    EXPECT_TRUE(m->model->setDenseAttention(false));
}

TEST(MiniMaxM3, MatchesTheFloat64ReferenceInPrefillChunksAndDecode) {
    const M3Spec spec;  // block 16, top-k 2: selection matters from position 32 on
    auto m = load(spec);
    ASSERT_TRUE(m->model);
    const std::vector<std::int32_t> tokens = someTokens(150, spec.vocab);
    for (std::size_t chunk : {std::size_t(150), std::size_t(7), std::size_t(1)}) {
        Decisions decisions;
        const std::vector<float> logits = run(*m->model, tokens, chunk, &decisions);
        testing::M3ReferenceTrace trace;
        std::vector<std::string> badTies;
        const std::vector<double> want =
            testing::m3ReferenceLogits(*m->file, tokens, tieTolerant(decisions), &trace, &badTies);
        EXPECT_TRUE(badTies.empty()) << badTies.front();
        EXPECT_LT(relativeError(logits, want), 1e-3) << "chunk " << chunk;
        for (std::size_t l = 1; l < 3; ++l)
            EXPECT_EQ(decisions.blocks[l], trace.blocks[l]) << "layer " << l << " chunk " << chunk;
    }
}

TEST(MiniMaxM3, RoutesToTheSameExpertsAsTheReference) {
    M3Spec spec;
    spec.experts = 8;
    spec.expertsUsed = 3;
    auto m = load(spec);
    ASSERT_TRUE(m->model);
    const std::vector<std::int32_t> tokens = someTokens(40, spec.vocab);
    Decisions decisions;
    run(*m->model, tokens, 40, &decisions);
    testing::M3ReferenceTrace trace;
    testing::m3ReferenceLogits(*m->file, tokens, tieTolerant(decisions), &trace);
    for (std::size_t l = 1; l < 3; ++l) {
        ASSERT_EQ(decisions.experts[l].size(), tokens.size());
        int distinct = 0;
        std::vector<int> seen(8, 0);
        for (std::size_t t = 0; t < tokens.size(); ++t) {
            EXPECT_EQ(decisions.experts[l][t], trace.experts[l][t])
                << "layer " << l << " token " << t;
            for (int e : decisions.experts[l][t])
                distinct += seen[std::size_t(e)]++ == 0;
            for (std::size_t i = 0; i < trace.weights[l][t].size(); ++i)
                EXPECT_NEAR(double(decisions.weights[l][t][i]), trace.weights[l][t][i], 1e-5);
        }
        EXPECT_GE(distinct, 4) << "the test prompt should exercise several experts";
    }
}

TEST(MiniMaxM3, ExpertBiasChoosesButDoesNotWeigh) {
    M3Spec spec;
    spec.biasedExpert = 2;
    auto m = load(spec);
    ASSERT_TRUE(m->model);
    const std::vector<std::int32_t> tokens = someTokens(30, spec.vocab);
    Decisions decisions;
    const std::vector<float> logits = run(*m->model, tokens, 30, &decisions);
    testing::M3ReferenceTrace trace;
    const std::vector<double> want =
        testing::m3ReferenceLogits(*m->file, tokens, tieTolerant(decisions), &trace);
    EXPECT_LT(relativeError(logits, want), 1e-3);
    for (std::size_t t = 0; t < tokens.size(); ++t) {
        const std::vector<int>& chosen = decisions.experts[1][t];
        ASSERT_EQ(chosen.size(), 2u);
        EXPECT_EQ(chosen[0], 2);  // +10 bias: always first
        // Weights from the unbiased sigmoid: normalised to the routed scale, and the biased
        // expert's weight stays below 2 * 1 (it would be ~2 if the bias counted).
        const std::vector<float>& w = decisions.weights[1][t];
        EXPECT_NEAR(double(w[0] + w[1]), 2.0, 1e-5);
        EXPECT_LT(w[0], 1.99f);
    }
}

TEST(MiniMaxM3, SparseEqualsDenseWithinTopKBlocks) {
    M3Spec spec;
    spec.blockSize = 16;
    spec.topK = 4;
    auto m = load(spec);
    ASSERT_TRUE(m->model);
    const std::vector<std::int32_t> tokens = someTokens(64, spec.vocab);  // = top_k x block
    const std::vector<float> sparse = run(*m->model, tokens, 64);         // block-masked prefill
    const std::vector<float> decoded = run(*m->model, tokens, 1);         // gathered decode
    ASSERT_TRUE(m->model->setDenseAttention(true));
    const std::vector<float> dense = run(*m->model, tokens, 64);
    m->model->setDenseAttention(false);
    EXPECT_LT(relativeError(sparse, widen(dense)), 1e-6);
    EXPECT_LT(relativeError(decoded, widen(dense)), 1e-6);
    testing::M3ReferenceOptions denseOptions;
    denseOptions.dense = true;
    EXPECT_LT(
        relativeError(dense, testing::m3ReferenceLogits(*m->file, tokens, denseOptions, nullptr)),
        1e-3);
}

TEST(MiniMaxM3, DenseFlagDiffersOnceSelectionMatters) {
    const M3Spec spec;
    auto m = load(spec);
    ASSERT_TRUE(m->model);
    const std::vector<std::int32_t> tokens = someTokens(120, spec.vocab);
    const std::vector<float> sparse = run(*m->model, tokens, 120);
    m->model->setDenseAttention(true);
    const std::vector<float> dense = run(*m->model, tokens, 120);
    m->model->setDenseAttention(false);
    testing::M3ReferenceOptions denseOptions;
    denseOptions.dense = true;
    const std::vector<double> want =
        testing::m3ReferenceLogits(*m->file, tokens, denseOptions, nullptr);
    EXPECT_LT(relativeError(dense, want), 1e-3);
    // Positions < 32 see at most two blocks: equal; later ones differ.
    const std::size_t vocab = std::size_t(spec.vocab);
    const std::vector<float> early(sparse.begin(), sparse.begin() + 32 * std::ptrdiff_t(vocab));
    EXPECT_LT(relativeError(early, std::vector<double>(dense.begin(),
                                                       dense.begin() + 32 * std::ptrdiff_t(vocab))),
              1e-6);
    EXPECT_GT(relativeError(sparse, widen(dense)), 1e-2);
}

// Several thousand tokens with 128-token blocks and top-k 4: prefill chunks of 300 (ending
// mid-block), then decoding; f16 and f32 caches, pages of 16 (inside blocks) and 256 (holding
// two blocks).
struct LongCase {
    TensorType kvType;
    int pageSize;
    double tolerance;
};

class MiniMaxM3Long : public ::testing::TestWithParam<LongCase> {};

TEST_P(MiniMaxM3Long, MatchesTheReferenceMsaOverLongContexts) {
    M3Spec spec;
    spec.blockSize = 128;
    spec.topK = 4;
    spec.layers = 2;
    auto m = load(spec);
    ASSERT_TRUE(m->model);
    const std::vector<std::int32_t> tokens = someTokens(2600, spec.vocab, 9);
    Decisions decisions;
    const std::vector<float> logits =
        run(*m->model, tokens, 300, &decisions, 2580, GetParam().kvType, GetParam().pageSize);
    testing::M3ReferenceTrace trace;
    std::vector<std::string> badTies;
    const std::vector<double> want =
        testing::m3ReferenceLogits(*m->file, tokens, tieTolerant(decisions), &trace, &badTies);
    EXPECT_TRUE(badTies.empty()) << badTies.size() << " bad ties, first " << badTies.front();
    EXPECT_LT(relativeError(logits, want), GetParam().tolerance);
    // Selection really is sparse here: late tokens attend to 4 of ~20 blocks.
    ASSERT_EQ(decisions.blocks[1].size(), tokens.size());
    EXPECT_EQ(decisions.blocks[1].back()[0].size(), 4u);
    std::size_t differing = 0;
    for (std::size_t t = 0; t < tokens.size(); ++t)
        differing += decisions.blocks[1][t] != trace.blocks[1][t];
    // The reference took the engine's set only at near-ties it validated; elsewhere it is its own.
    EXPECT_EQ(differing, 0u);
    RecordProperty("near_ties_resolved", trace.tiesResolved);
    // And it changes the answer: the dense reference is far from the engine.
    testing::M3ReferenceOptions denseOptions;
    denseOptions.dense = true;
    EXPECT_GT(
        relativeError(logits, testing::m3ReferenceLogits(*m->file, tokens, denseOptions, nullptr)),
        1e-2);
}

INSTANTIATE_TEST_SUITE_P(Caches, MiniMaxM3Long,
                         ::testing::Values(LongCase{TensorType::F32, 16, 1e-3},
                                           LongCase{TensorType::F16, 256, 3e-3}));

TEST(KvCacheIndexerKeys, ForkSharesThemAndCopiesThemOnWrite) {
    KvCacheOptions options{3, 2, 8, 4, 16, TensorType::F32};
    options.indexerDim = 5;
    options.indexerFirstLayer = 1;
    options.selectionBlock = 8;
    Result<KvCache> cache = KvCache::create(options);
    ASSERT_TRUE(cache) << cache.status().message();
    const SequenceId a = cache->newSequence();
    ASSERT_TRUE(cache->extend(a, 6).isOk());
    for (int layer = 1; layer < 3; ++layer)
        for (std::int64_t p = 0; p < 6; ++p)
            std::fill_n(cache->indexKeySlot(layer, a, p), 5, float(layer * 100 + p));
    const SequenceId b = cache->fork(a, 6);
    ASSERT_TRUE(cache->extend(b, 7).isOk());  // the shared, partly filled block is copied
    std::fill_n(cache->indexKeySlot(2, b, 6), 5, -1.0f);
    const auto key = [&](SequenceId s, int layer, std::int64_t p) {
        const std::span<const std::int32_t> table = cache->blockTable(s);
        return cache->indexKeys(layer)[(table[std::size_t(p / 4)] * 4 + p % 4) * 5];
    };
    EXPECT_NE(cache->blockTable(a)[1], cache->blockTable(b)[1]);
    EXPECT_EQ(cache->blockTable(a)[0], cache->blockTable(b)[0]);
    for (int layer = 1; layer < 3; ++layer)
        for (std::int64_t p = 0; p < 6; ++p)
            EXPECT_EQ(key(b, layer, p), float(layer * 100 + p)) << layer << " " << p;
    EXPECT_EQ(key(b, 2, 6), -1.0f);
}

TEST(MiniMaxM3BadFile, RefusesIndexHeadsOtherThanKvHeads) {
    M3Spec spec;
    spec.indexHeads = 1;
    const Status status = loadError(spec);
    EXPECT_FALSE(status.isOk());
    EXPECT_NE(status.message().find("minimax-m3.attention.indexer.head_count"), std::string::npos)
        << status.message();
}

TEST(MiniMaxM3BadFile, RefusesTopKBelowLocalBlocks) {
    M3Spec spec;
    spec.topK = 1;
    spec.localBlocks = 2;
    const Status status = loadError(spec);
    EXPECT_NE(status.message().find("minimax-m3.attention.indexer.top_k"), std::string::npos)
        << status.message();
}

TEST(MiniMaxM3BadFile, RefusesMissingIndexerKeys) {
    M3Spec spec;
    spec.writeIndexer = false;
    const Status status = loadError(spec);
    EXPECT_NE(status.message().find("minimax-m3.attention.indexer."), std::string::npos)
        << status.message();
}

TEST(MiniMaxM3BadFile, RefusesNonSigmoidGating) {
    M3Spec spec;
    spec.gatingFunc = 1;
    const Status status = loadError(spec);
    EXPECT_NE(status.message().find("minimax-m3.expert_gating_func"), std::string::npos)
        << status.message();
}

TEST(MiniMaxM3BadFile, RefusesIndexerKeysShorterThanTheRotary) {
    M3Spec spec;
    spec.indexDim = 8;  // rope.dimension_count is 16
    const Status status = loadError(spec);
    EXPECT_NE(status.message().find("minimax-m3.attention.indexer.key_length"), std::string::npos)
        << status.message();
}

TEST(MiniMaxM3BadFile, RefusesSelectionBlocksThatDoNotLineUpWithPages) {
    M3Spec spec;
    spec.blockSize = 24;  // neither divides nor is a multiple of 16-token pages
    auto m = load(spec);
    ASSERT_TRUE(m->model);
    Result<KvCache> cache = KvCache::create(m->model->kvCacheOptions(8, 16, TensorType::F16));
    ASSERT_FALSE(cache);
    EXPECT_NE(cache.status().message().find("minimax-m3.attention.indexer.block_size"),
              std::string::npos)
        << cache.status().message();
    EXPECT_TRUE(KvCache::create(m->model->kvCacheOptions(8, 8, TensorType::F16)));   // 8 | 24
    EXPECT_TRUE(KvCache::create(m->model->kvCacheOptions(8, 48, TensorType::F16)));  // 24 | 48
}

TEST(MiniMaxM3BadFile, ForwardRefusesACacheWithoutIndexerKeys) {
    const M3Spec spec;
    auto m = load(spec);
    ASSERT_TRUE(m->model);
    KvCacheOptions options = m->model->kvCacheOptions(8, 16, TensorType::F32);
    options.indexerDim = 0;
    Result<KvCache> cache = KvCache::create(options);
    ASSERT_TRUE(cache);
    const SequenceId seq = cache->newSequence();
    ASSERT_TRUE(cache->extend(seq, 1).isOk());
    ThreadPool pool(1);
    std::vector<float> logits;
    const std::vector<TokenInput> batch = {{1, seq, 0, {0, 0, 0, 0}, true}};
    const Status status = m->model->forward(batch, *cache, pool, logits);
    EXPECT_FALSE(status.isOk());
    EXPECT_NE(status.message().find("indexer"), std::string::npos) << status.message();
}

TEST(MiniMaxM3BadFile, RefusesAMissingIndexerTensor) {
    const M3Spec spec;
    std::vector<std::byte> bytes = testing::makeM3Model(spec);
    // Rename the tensor in place (same length) so the file stays well formed.
    const std::string from = "blk.1.indexer.k_norm.weight", to = "blk.1.indexer.x_norm.weight";
    auto* begin = reinterpret_cast<const char*>(bytes.data());
    const std::string text(begin, bytes.size());
    const std::size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos);
    for (std::size_t i = 0; i < to.size(); ++i)
        bytes[at + i] = std::byte(to[i]);
    Result<GgufFile> file = GgufFile::parse(bytes, "bad.gguf");
    ASSERT_TRUE(file);
    Result<std::unique_ptr<Model>> model = createModel(*file);
    ASSERT_FALSE(model);
    EXPECT_NE(model.status().message().find(from), std::string::npos) << model.status().message();
}

}  // namespace
}  // namespace iris::inference
