// MiniMax-M3 with KV tiers: (1) prefill and greedy decoding with most of the sparse layers' K/V
// out of the pool (host memory and disk, pages poisoned while away), copied in before attention
// or while the model works, give the same tokens and logits as without tiers; (2) decoding at a
// 1,048,576-token context whose K/V lies almost all in host memory and on disk: the K/V of the
// million tokens is synthetic (a hash of layer, position and element, written straight into the
// tiers instead of prefilling), and every decoded token's sparse attention is checked against a
// float64 reference that scores all the indexer keys, picks the top-k blocks and attends over
// them, reading the K/V from the hash.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include <gtest/gtest.h>

#include "inference/engine.h"
#include "inference/kv_tiers.h"
#include "inference/models/minimax_m3.h"
#include "inference/models/model.h"
#include "tests/inference/models/loaded_model.h"
#include "tests/inference/models/minimax_m3_reference.h"
#include "tests/inference/models/scratch_dir.h"
#include "tests/inference/models/tiny_model.h"

namespace iris::inference {
namespace {

using kernels::TensorType;

std::unique_ptr<testing::LoadedModel> loadM3(const testing::M3Spec& spec) {
    return testing::loadModelBytes(testing::makeM3Model(spec), "m3.gguf");
}

std::int32_t argmax(const float* logits, std::int64_t n) {
    return std::int32_t(std::max_element(logits, logits + n) - logits);
}

struct Decoded {
    std::vector<std::int32_t> tokens;
    std::vector<float> logits;  // every prompt and generated position
    KvTierStats stats;
};

// Prefills `prompt` in chunks of `chunk`, then decodes `steps` greedy tokens, with `tiers`
// attached to the cache (or none).
Decoded decodeGreedy(Model& model, std::vector<std::int32_t> prompt, int steps, int chunk,
                     const KvTierOptions* tiersOptions) {
    constexpr int kPage = 16;
    ThreadPool pool(2);
    const std::int64_t total = std::int64_t(prompt.size()) + steps;
    Result<KvCache> cache =
        KvCache::create(model.kvCacheOptions(total / kPage + 2, kPage, TensorType::F32));
    EXPECT_TRUE(cache) << cache.status().message();
    Decoded out;
    if (!cache) return out;
    std::unique_ptr<KvTiers> tiers;
    if (tiersOptions != nullptr) {
        Result<std::unique_ptr<KvTiers>> attached = KvTiers::attach(*cache, *tiersOptions, &pool);
        EXPECT_TRUE(attached) << attached.status().message();
        if (!attached) return out;
        tiers = std::move(*attached);
    }
    const SequenceId seq = cache->newSequence();
    const std::int64_t vocab = model.config().vocabSize;
    const std::size_t promptSize = prompt.size();
    std::vector<std::int32_t> tokens = std::move(prompt);
    for (std::size_t begin = 0; begin < tokens.size();) {
        const std::size_t end =
            begin >= promptSize ? begin + 1 : std::min(promptSize, begin + std::size_t(chunk));
        EXPECT_TRUE(cache->extend(seq, std::int64_t(end)).isOk());
        std::vector<TokenInput> batch;
        for (std::size_t i = begin; i < end; ++i) {
            const auto p = std::int32_t(i);
            batch.push_back({tokens[i], seq, std::int64_t(i), {p, p, p, 0}, true});
        }
        const Status status = model.forward(batch, *cache, pool, out.logits);
        EXPECT_TRUE(status.isOk()) << status.message();
        if (!status.isOk()) return out;
        begin = end;
        if (begin == tokens.size() && std::int64_t(out.tokens.size()) < steps) {
            const std::int32_t next = argmax(out.logits.data() + out.logits.size() - vocab, vocab);
            out.tokens.push_back(next);
            tokens.push_back(next);
        }
    }
    if (tiers != nullptr) out.stats = tiers->stats();
    return out;
}

TEST(KvTiersM3, PagedDecodingGivesTheSameTokensAndLogitsAsAllResident) {
    const testing::M3Spec spec;  // 3 layers, 2 of them sparse; 16-token blocks, top 2
    auto m3 = loadM3(spec);
    ASSERT_TRUE(m3->model);
    std::vector<std::int32_t> prompt(176);
    for (std::size_t i = 0; i < prompt.size(); ++i)
        prompt[i] = std::int32_t((i * 37 + 11) % std::size_t(spec.vocab));
    const Decoded plain = decodeGreedy(*m3->model, prompt, 24, 48, nullptr);

    const std::int64_t unit = 2 * 16 * spec.kvHeads * spec.headDim * 4;
    // Copies on the compute threads before attention; on the transfer thread while the model
    // chooses and attends other KV groups; the same with every copy slowed down, so that
    // attention that did not wait for its pages would read them poisoned.
    struct Variant {
        const char* name;
        bool overlap;
        std::chrono::microseconds copyDelay;
    };
    for (const Variant& variant : {Variant{"in place", false, {}},
                                   Variant{"overlapped", true, {}},
                                   Variant{"overlapped, slow copies", true,
                                           std::chrono::microseconds(300)}}) {
        SCOPED_TRACE(variant.name);
        testing::ScratchDir dir("iris-kv-tiers-m3");
        KvTierOptions options;
        options.computeBytes = 6 * unit;  // of 2 sparse layers x 13 pages
        options.hostBytes = 4 * unit;
        options.diskBytes = 1 << 20;
        options.diskFolder = dir.path().string();
        options.poisonEvicted = true;  // attention over a page that is away would give NaN
        options.overlap = variant.overlap;
        options.copyDelay = variant.copyDelay;
        const Decoded paged = decodeGreedy(*m3->model, prompt, 24, 48, &options);

        EXPECT_EQ(paged.tokens, plain.tokens);
        ASSERT_EQ(paged.logits.size(), plain.logits.size());
        double diff = 0;
        for (std::size_t i = 0; i < plain.logits.size(); ++i)
            diff = std::max(diff, std::fabs(double(paged.logits[i]) - double(plain.logits[i])));
        EXPECT_LE(diff, 1e-6);
        EXPECT_GT(paged.stats.spilled, 0);
        EXPECT_GT(paged.stats.fetched, 0);
        EXPECT_GT(paged.stats.fetchedFromDisk, 0);
        EXPECT_EQ(paged.stats.diskWriteFailures, 0);
        if (!variant.overlap) {
            EXPECT_EQ(paged.stats.fetchedBehind, 0);
        }
    }
}

TEST(KvTiersM3, AnEngineOfAModelWithoutSparseAttentionRefusesTiers) {
    testing::ScratchDir dir("iris-kv-tiers-engine");
    testing::TinyModelSpec spec;  // qwen2: every layer reads its whole context
    spec.vocab = 288;
    spec.withTokenizer = true;
    EngineOptions options;
    options.threads = 1;
    options.contextSize = 256;
    options.kvTiers.computeBytes = 1 << 20;
    Result<std::unique_ptr<Engine>> engine =
        Engine::load(dir.write("tiny.gguf", testing::makeTinyModel(spec)), options);
    ASSERT_FALSE(engine);
    EXPECT_EQ(engine.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(engine.status().message().find("no sparse-attention layers"), std::string::npos)
        << engine.status().message();
}

// ---- a million tokens ----

// The synthetic cache content: a hash of (layer, position, element, kind) in [-1, 1), exact in
// f32. kind 0: K, 1: V, 2: indexer key.
float synthetic(std::uint64_t layer, std::uint64_t position, std::uint64_t element,
                std::uint64_t kind) {
    std::uint64_t x = layer * 0x9E3779B97F4A7C15ull ^ position * 0xC2B2AE3D27D4EB4Full ^
                      element * 0x165667B19E3779F9ull ^ (kind + 1) * 0x27D4EB2F165667C5ull;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return float(double(x >> 40) / double(1 << 23) - 1.0);
}

struct MillionSetup {
    static constexpr std::int64_t kContext = 1'048'576;
    static constexpr int kDecoded = 3;  // the last positions, decoded by the model
    static constexpr std::int64_t kPrefix = kContext - kDecoded;
    static constexpr int kPage = 128;
    int layers = 0, kvHeads = 0, headDim = 0, indexDim = 0, heads = 0;
};

// What the decoded tokens wrote themselves (from the trace), by layer and position.
struct DecodedKv {
    std::vector<std::vector<std::vector<float>>> k, v, indexKey;  // [layer][step]
};

// Element `e` of position `p`'s K (kind 0), V (1) or indexer key (2) in layer `l`.
double cached(const DecodedKv& decoded, int l, std::int64_t p, int e, int kind) {
    if (p < MillionSetup::kPrefix) return synthetic(std::uint64_t(l), std::uint64_t(p),
                                                    std::uint64_t(e), std::uint64_t(kind));
    const auto step = std::size_t(p - MillionSetup::kPrefix);
    const auto& from = kind == 0 ? decoded.k : kind == 1 ? decoded.v : decoded.indexKey;
    return from[std::size_t(l)][step][std::size_t(e)];
}

// Writes the synthetic prefix: indexer keys into the pool (they stay resident), K/V of every
// page and layer straight into the tiers.
void writePrefix(const MillionSetup& s, KvCache& cache, KvTiers& tiers, SequenceId seq) {
    const std::span<const std::int32_t> table = cache.blockTable(seq);
    const std::int64_t row = std::int64_t(s.kvHeads) * s.headDim;
    std::vector<float> unit(std::size_t(2 * MillionSetup::kPage * row));
    for (std::int64_t page = 0; page < std::int64_t(table.size()); ++page) {
        for (int l = 0; l < s.layers; ++l) {
            std::fill(unit.begin(), unit.end(), 0.0f);
            for (int r = 0; r < MillionSetup::kPage; ++r) {
                const std::int64_t p = page * MillionSetup::kPage + r;
                if (p >= MillionSetup::kPrefix) break;
                float* index = cache.indexKeySlot(l, seq, p);
                for (int e = 0; e < s.indexDim; ++e)
                    index[e] = synthetic(std::uint64_t(l), std::uint64_t(p), std::uint64_t(e), 2);
                for (std::int64_t e = 0; e < row; ++e) {
                    unit[std::size_t(r * row + e)] =
                        synthetic(std::uint64_t(l), std::uint64_t(p), std::uint64_t(e), 0);
                    unit[std::size_t((MillionSetup::kPage + r) * row + e)] =
                        synthetic(std::uint64_t(l), std::uint64_t(p), std::uint64_t(e), 1);
                }
            }
            tiers.adopt(l, table[std::size_t(page)], std::as_bytes(std::span(unit)));
        }
    }
}

// Float64 MSA of one decoded token in layer l (one KV group here): scores of every block from
// the indexer keys, the own block forced, the best topK - 1 others; then each query head's
// softmax attention over the chosen blocks. Checks the engine's blocks and output.
void checkSparseAttention(const MillionSetup& s, const DecodedKv& decoded, int l,
                          std::int64_t slot, const MiniMaxM3Trace::Attention& io,
                          const std::vector<std::int32_t>& engineBlocks, int topK) {
    const std::int64_t blocks = slot / MillionSetup::kPage + 1;
    std::vector<double> score(std::size_t(blocks), -INFINITY);
    for (std::int64_t p = 0; p <= slot; ++p) {
        double dot = 0;
        for (int e = 0; e < s.indexDim; ++e)
            dot += double(io.indexQ[std::size_t(e)]) * cached(decoded, l, p, e, 2);
        double& best = score[std::size_t(p / MillionSetup::kPage)];
        best = std::max(best, dot);
    }
    std::vector<std::int32_t> order(std::size_t(blocks - 1));
    for (std::size_t b = 0; b < order.size(); ++b)
        order[b] = std::int32_t(b);
    std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
        return score[std::size_t(a)] > score[std::size_t(b)];
    });
    std::vector<std::int32_t> chosen(order.begin(), order.begin() + (topK - 1));
    chosen.push_back(std::int32_t(blocks - 1));
    std::sort(chosen.begin(), chosen.end());
    EXPECT_EQ(engineBlocks, chosen) << "layer " << l << " slot " << slot;

    const double scale = 1.0 / std::sqrt(double(s.headDim));
    for (int h = 0; h < s.heads; ++h) {  // one KV group: every head reads group 0
        std::vector<double> weights, out(std::size_t(s.headDim), 0.0);
        std::vector<std::int64_t> positions;
        for (const std::int32_t b : chosen) {
            for (std::int64_t p = b * MillionSetup::kPage;
                 p < (b + 1) * MillionSetup::kPage && p <= slot; ++p) {
                double dot = 0;
                for (int e = 0; e < s.headDim; ++e)
                    dot += double(io.q[std::size_t(h * s.headDim + e)]) *
                           cached(decoded, l, p, e, 0);
                weights.push_back(dot * scale);
                positions.push_back(p);
            }
        }
        const double top = *std::max_element(weights.begin(), weights.end());
        double sum = 0;
        for (double& w : weights)
            sum += (w = std::exp(w - top));
        for (std::size_t i = 0; i < positions.size(); ++i) {
            for (int e = 0; e < s.headDim; ++e)
                out[std::size_t(e)] += weights[i] / sum * cached(decoded, l, positions[i], e, 1);
        }
        for (int e = 0; e < s.headDim; ++e) {
            EXPECT_NEAR(io.out[std::size_t(h * s.headDim + e)], out[std::size_t(e)], 1e-5)
                << "layer " << l << " slot " << slot << " head " << h << " element " << e;
        }
    }
}

TEST(KvTiersM3, DecodesAtAMillionTokensWithTheKvMostlyOnDisk) {
    testing::M3Spec spec;
    spec.layers = 2;
    spec.leadingDense = 0;  // both layers sparse: nothing reads the whole context's K/V
    spec.vocab = 32;
    spec.hidden = 32;
    spec.ffn = 32;
    spec.expertFfn = 16;
    spec.experts = 2;
    spec.expertsUsed = 1;
    spec.heads = 2;
    spec.kvHeads = 1;
    spec.indexHeads = 1;
    spec.headDim = 8;
    spec.ropeDims = 4;
    spec.indexDim = 8;
    spec.blockSize = MillionSetup::kPage;
    spec.topK = 4;
    auto m3 = loadM3(spec);
    ASSERT_TRUE(m3->model);
    Model& model = *m3->model;
    MillionSetup s{.layers = 2, .kvHeads = 1, .headDim = 8, .indexDim = 8, .heads = 2};

    Result<KvCache> cache = KvCache::create(model.kvCacheOptions(
        MillionSetup::kContext / MillionSetup::kPage + 1, MillionSetup::kPage, TensorType::F32));
    ASSERT_TRUE(cache) << cache.status().message();
    testing::ScratchDir dir("iris-kv-million");
    const std::int64_t unitBytes = 2 * MillionSetup::kPage * 8 * 4;
    const std::int64_t kvBytes = MillionSetup::kContext / MillionSetup::kPage * 2 * unitBytes;
    KvTierOptions options;
    options.computeBytes = 64 * unitBytes;  // 0.4% of the K/V
    options.hostBytes = 16 << 20;           // 12.5%; the rest goes to disk
    options.diskBytes = 1ll << 30;
    options.diskFolder = dir.path().string();
    options.poisonEvicted = true;
    ThreadPool pool(2);  // pages come in on both threads
    Result<std::unique_ptr<KvTiers>> tiers = KvTiers::attach(*cache, options, &pool);
    ASSERT_TRUE(tiers) << tiers.status().message();

    const SequenceId seq = cache->newSequence();
    ASSERT_TRUE(cache->extend(seq, MillionSetup::kPrefix).isOk());
    writePrefix(s, *cache, **tiers, seq);
    EXPECT_GT((*tiers)->stats().diskBytes, kvBytes / 2);

    MiniMaxM3Trace trace;
    ASSERT_TRUE(traceMiniMaxM3(model, &trace));
    DecodedKv decoded;
    decoded.k.resize(2);
    decoded.v.resize(2);
    decoded.indexKey.resize(2);
    std::vector<float> logits;
    std::int32_t token = 7;
    for (int step = 0; step < MillionSetup::kDecoded; ++step) {
        const std::int64_t slot = MillionSetup::kPrefix + step;
        ASSERT_TRUE(cache->extend(seq, slot + 1).isOk());
        const auto p = std::int32_t(slot);
        const TokenInput in{token, seq, slot, {p, p, p, 0}, true};
        logits.clear();
        const Status status = model.forward(std::span(&in, 1), *cache, pool, logits);
        ASSERT_TRUE(status.isOk()) << status.message();
        for (int l = 0; l < s.layers; ++l) {
            const MiniMaxM3Trace::Attention& io = trace.attention[std::size_t(l)][0];
            decoded.k[std::size_t(l)].push_back(io.k);
            decoded.v[std::size_t(l)].push_back(io.v);
            decoded.indexKey[std::size_t(l)].push_back(io.indexKey);
            checkSparseAttention(s, decoded, l, slot, io, trace.blocks[std::size_t(l)][0][0],
                                 int(spec.topK));
        }
        for (float x : logits)
            ASSERT_TRUE(std::isfinite(x));
        token = argmax(logits.data(), spec.vocab);
    }
    traceMiniMaxM3(model, nullptr);
    const KvTierStats stats = (*tiers)->stats();
    EXPECT_LE(stats.residentBytes, options.computeBytes);
    EXPECT_LT(stats.residentBytes, kvBytes / 100);  // the K/V is almost all away
    EXPECT_GT(stats.fetchedFromDisk, 0);
    EXPECT_EQ(stats.diskWriteFailures, 0);
}

}  // namespace
}  // namespace iris::inference
