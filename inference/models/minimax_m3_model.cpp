// The MiniMax-M3 forward pass (docs/minimax-m3.md section 3): attention with per-head q/k norm
// and partial NEOX rotary, dense on the leading layers and MiniMax Sparse Attention (MSA) on the
// others; feed-forward blocks in minimax_m3_ffn.cpp. Everything but MSA comes from the shared
// model parts (model_parts.h).
//
// MSA per token t at KV slot p and KV group g: the index query of g scores every cached index
// key j <= p, the scores are max-pooled into selection blocks anchored at slot 0, the query's
// own block (and localBlocks - 1 before it) is forced into the top-k, and the group's query heads
// attend to the chosen blocks only. Decode (one token) gathers the chosen blocks per (token,
// group); prefill turns the choices of a run of a chunk's tokens into a block mask and walks the
// selected blocks once for all of them (kernels::attendMaskedBlocks).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "inference/models/minimax_m3.h"
#include "inference/models/model_parts.h"
#include "inference/models/rope_tables.h"
#include "kernels/rms_norm.h"
#include "kernels/sparse_attention.h"

namespace iris::inference {
namespace m3 {
namespace {

class MiniMaxM3 final : public Model {
public:
    MiniMaxM3(ModelConfig config, Hyper hyper, Weights weights)
        : m_config(std::move(config)), m_hyper(hyper), m_weights(std::move(weights)) {
        m_runner.pack(m_weights.output);
        for (Layer& l : m_weights.layers) {
            for (Linear* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down})
                if (w->data != nullptr) m_runner.pack(*w);
        }
        const char* env = std::getenv("IRIS_DENSE_ATTENTION");
        m_dense = env != nullptr && std::strcmp(env, "1") == 0;
    }

    const ModelConfig& config() const override { return m_config; }

    bool setDenseAttention(bool dense) override {
        m_dense = dense;
        return m_hyper.leadingDense < m_config.layers;
    }

    Status forward(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                   std::vector<float>& logits) override;

    void setTrace(MiniMaxM3Trace* trace) { m_trace = trace; }

private:
    using BlockTrace = std::vector<std::vector<std::vector<std::int32_t>>>;  // [token][group]

    // Sizes the scratch for a batch of `tokens`.
    void reserve(std::int64_t tokens);
    // x += attention(RMSNorm(x)) for one layer; writes the batch's K, V and index keys first.
    void attentionBlock(std::size_t layer, std::span<const TokenInput> batch, KvCache& cache,
                        ThreadPool& pool);
    // x += FFN(RMSNorm(x)) for one layer: the dense FFN or the MoE (traced).
    void feedForwardBlock(std::size_t layer, std::int64_t tokens, ThreadPool& pool);
    // out (tokens x heads x headDim) = attention of the batch's queries (m_q) over the cache:
    // dense, or MSA on a sparse layer (one token: decodeSparse; several: prefillSparse).
    void attention(std::size_t layer, std::span<const TokenInput> batch, const KvCache& cache,
                   ThreadPool& pool, float* out);
    void decodeSparse(int layer, std::span<const TokenInput> batch, const KvCache& cache,
                      ThreadPool& pool, float* out, BlockTrace* traced);
    void prefillSparse(int layer, std::span<const TokenInput> batch, const KvCache& cache,
                       ThreadPool& pool, float* out, BlockTrace* traced);
    // With KV tiers (cache.residency()): adds the pool pages of the chosen selection blocks
    // (`chosen`, of a sequence's first `length` slots) to m_pages, the pages to bring in.
    void addChosenPages(const KvCache& cache, const TokenInput& in, std::int64_t length,
                        const std::int32_t* chosen, int count);
    // The same for a prefill run's block mask (rows of `lengths.size()` queries).
    void addMaskedPages(const KvCache& cache, const TokenInput& head,
                        const std::vector<std::uint8_t>& mask,
                        const std::vector<std::int64_t>& lengths);
    void addAllPages(const KvCache& cache, const TokenInput& in);
    // Brings m_pages in (async: KvResidency::requireAsync) and empties it.
    void requirePages(int layer, const KvCache& cache, bool async = false);
    // A sparse layer's attention over `items` independent (token or run, KV group) items:
    // choose(begin, end) picks the blocks of items [begin, end), pages(item) adds the pool
    // pages an item's choice reads to m_pages, attend(begin, end) attends. Without KV tiers all
    // items choose, then all attend. With tiers the items go in waves, and the pages of wave w
    // come in (KvResidency::requireAsync) while wave w + 1 chooses and wave w - 1 attends.
    void chooseFetchAttend(int layer, const KvCache& cache, ThreadPool& pool, std::int64_t items,
                           const std::function<void(std::int64_t, std::int64_t)>& choose,
                           const std::function<void(std::int64_t)>& pages,
                           const std::function<void(std::int64_t, std::int64_t)>& attend);
    // Copies the sparse layer's attention inputs and output of the batch into the trace.
    void traceAttention(std::size_t layer, std::int64_t tokens);

    ModelConfig m_config;
    Hyper m_hyper;
    Weights m_weights;
    bool m_dense = false;
    MiniMaxM3Trace* m_trace = nullptr;
    LinearRunner m_runner;  // owns the packed copies of the weights
    FeedForward m_ffn;
    RopeTables m_rope;
    // Scratch, reused between calls (forward is not reentrant).
    std::vector<float> m_x, m_norm, m_q, m_k, m_v, m_iq, m_ik, m_attn, m_out, m_rows,
        m_expertWeights;
    std::vector<int> m_experts;
    // Sparse decode: the chosen selection blocks per (token, group), topK apart, and how many.
    std::vector<std::int32_t> m_chosen;
    std::vector<int> m_chosenCount;
    std::vector<std::int32_t> m_pages;  // pool pages to bring in (KV tiers)
    Status m_tierStatus;                // the first failure to bring a page in, this forward
};

void MiniMaxM3::attention(std::size_t layerIndex, std::span<const TokenInput> batch,
                          const KvCache& cache, ThreadPool& pool, float* out) {
    const Layer& layer = m_weights.layers[layerIndex];
    const int li = int(layerIndex);
    if (!layer.sparse || m_dense) {
        if (layer.sparse && cache.residency() != nullptr) {
            for (const TokenInput& in : batch)
                addAllPages(cache, in);
            requirePages(li, cache);
        }
        attendDense(li, batch, m_q.data(), int(m_config.heads), cache, pool, out);
        return;
    }
    BlockTrace* traced = nullptr;
    if (m_trace != nullptr) {
        traced = &m_trace->blocks[layerIndex];
        traced->assign(batch.size(), std::vector<std::vector<std::int32_t>>(
                                         static_cast<std::size_t>(m_config.kvHeads)));
    }
    if (batch.size() > 1) {
        prefillSparse(li, batch, cache, pool, out, traced);
    } else {
        decodeSparse(li, batch, cache, pool, out, traced);
    }
}

// Decode on a sparse layer: per (token, KV group), the group's index query chooses blocks and
// the group's query heads attend to them. Choosing and attending are separate passes so that
// KV tiers can bring the chosen blocks in between (chooseFetchAttend).
void MiniMaxM3::decodeSparse(int li, std::span<const TokenInput> batch, const KvCache& cache,
                             ThreadPool& pool, float* out, BlockTrace* traced) {
    const ModelConfig& c = m_config;
    const std::int64_t T = std::int64_t(batch.size()), H = c.heads, G = c.kvHeads, hd = c.headDim,
                       group = H / G;
    const int S = m_hyper.blockSize, topK = std::max(m_hyper.topK, 1), Di = m_hyper.indexDim;
    const float scale = 1.0f / std::sqrt(float(hd));
    m_chosen.resize(std::size_t(T * G * topK));
    m_chosenCount.resize(std::size_t(T * G));
    const auto choose = [&](std::int64_t begin, std::int64_t end) {
        std::vector<float> blockScores;
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t t = item / G;
            const int g = int(item % G);
            const TokenInput& in = batch[std::size_t(t)];
            const std::int64_t length = in.slot + 1;
            const std::int64_t blocks = kernels::selectionBlocks(length, S);
            blockScores.resize(static_cast<std::size_t>(blocks));
            const kernels::PagedIndexKeys keys{cache.indexKeys(li),
                                               cache.blockTable(in.sequence).data(),
                                               cache.options().blockSize, Di};
            kernels::indexerBlockScores(m_iq.data() + (t * G + g) * Di, 1, keys, length, S,
                                        blockScores.data());
            m_chosenCount[std::size_t(item)] =
                kernels::selectTopBlocks(blockScores.data(), blocks, m_hyper.topK,
                                         m_hyper.localBlocks, m_chosen.data() + item * topK);
        }
    };
    const auto pages = [&](std::int64_t item) {
        const TokenInput& in = batch[std::size_t(item / G)];
        addChosenPages(cache, in, in.slot + 1, m_chosen.data() + item * topK,
                       m_chosenCount[std::size_t(item)]);
    };
    const auto attend = [&](std::int64_t begin, std::int64_t end) {
        std::vector<float> work;
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t t = item / G;
            const int g = int(item % G), count = m_chosenCount[std::size_t(item)];
            const TokenInput& in = batch[std::size_t(t)];
            const std::int32_t* chosen = m_chosen.data() + item * topK;
            work.resize(std::size_t(group * count * S));
            kernels::attendBlocks(m_q.data() + t * H * hd, int(H), pagedKv(cache, li, in.sequence),
                                  in.slot + 1, scale, chosen, count, S, out + t * H * hd,
                                  work.data(), int(g * group), int((g + 1) * group));
            if (traced != nullptr)
                (*traced)[std::size_t(t)][std::size_t(g)].assign(chosen, chosen + count);
        }
    };
    chooseFetchAttend(li, cache, pool, T * G, choose, pages, attend);
}

void MiniMaxM3::chooseFetchAttend(int li, const KvCache& cache, ThreadPool& pool,
                                  std::int64_t items,
                                  const std::function<void(std::int64_t, std::int64_t)>& choose,
                                  const std::function<void(std::int64_t)>& pages,
                                  const std::function<void(std::int64_t, std::int64_t)>& attend) {
    KvResidency* tiers = cache.residency();
    if (tiers == nullptr) {
        pool.parallelFor(items, 1, choose);
        pool.parallelFor(items, 1, attend);
        return;
    }
    // A wave keeps every thread busy, and there are at least two when there are two items (the
    // copies of one overlap the other's work), at most about eight (each costs a wait).
    const std::int64_t wave = std::min(std::max<std::int64_t>(pool.threads(), (items + 7) / 8),
                                       std::max<std::int64_t>(1, (items + 1) / 2));
    const auto inRange = [&pool](std::int64_t begin, std::int64_t end,
                                 const std::function<void(std::int64_t, std::int64_t)>& fn) {
        pool.parallelFor(end - begin, 1, [&](std::int64_t b, std::int64_t e) {
            fn(begin + b, begin + e);
        });
    };
    const auto fetch = [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t item = begin; item < end; ++item)
            pages(item);
        requirePages(li, cache, /*async=*/true);
    };
    inRange(0, std::min(wave, items), choose);
    fetch(0, std::min(wave, items));
    for (std::int64_t begin = 0; begin < items; begin += wave) {
        const std::int64_t end = std::min(begin + wave, items);
        if (end < items) {
            const std::int64_t next = std::min(end + wave, items);
            inRange(end, next, choose);  // while this wave's pages come in
            fetch(end, next);            // waits for them, then starts the next wave's
        } else {
            Status arrived = tiers->awaitRequired();
            if (m_tierStatus.isOk()) m_tierStatus = std::move(arrived);
        }
        inRange(begin, end, attend);  // while the next wave's pages come in
    }
}

void MiniMaxM3::addChosenPages(const KvCache& cache, const TokenInput& in, std::int64_t length,
                               const std::int32_t* chosen, int count) {
    const std::span<const std::int32_t> table = cache.blockTable(in.sequence);
    const std::int64_t page = cache.options().blockSize, S = m_hyper.blockSize;
    for (int j = 0; j < count; ++j) {
        const std::int64_t first = chosen[j] * S, last = std::min((chosen[j] + 1) * S, length);
        for (std::int64_t p = first / page; p * page < last; ++p)
            m_pages.push_back(table[std::size_t(p)]);
    }
}

void MiniMaxM3::addMaskedPages(const KvCache& cache, const TokenInput& head,
                               const std::vector<std::uint8_t>& mask,
                               const std::vector<std::int64_t>& lengths) {
    const std::int64_t longest = *std::max_element(lengths.begin(), lengths.end());
    const std::int64_t blocks = kernels::selectionBlocks(longest, m_hyper.blockSize),
                       n = std::int64_t(lengths.size());
    for (std::int32_t b = 0; b < blocks; ++b) {
        bool any = false;
        for (std::int64_t i = 0; i < n && !any; ++i)
            any = mask[std::size_t(i * blocks + b)] != 0;
        if (any) addChosenPages(cache, head, longest, &b, 1);
    }
}

void MiniMaxM3::addAllPages(const KvCache& cache, const TokenInput& in) {
    const std::span<const std::int32_t> table = cache.blockTable(in.sequence);
    const std::int64_t pages = (in.slot + cache.options().blockSize) / cache.options().blockSize;
    m_pages.insert(m_pages.end(), table.begin(), table.begin() + pages);
}

void MiniMaxM3::requirePages(int li, const KvCache& cache, bool async) {
    std::sort(m_pages.begin(), m_pages.end());
    m_pages.erase(std::unique(m_pages.begin(), m_pages.end()), m_pages.end());
    KvResidency& tiers = *cache.residency();
    Status required = async ? tiers.requireAsync(li, m_pages) : tiers.require(li, m_pages);
    if (m_tierStatus.isOk()) m_tierStatus = std::move(required);
    m_pages.clear();
}

// Prefill on a sparse layer: the batch is cut into runs of up to kRun consecutive tokens of one
// sequence; per (run, KV group) each token's choice becomes a row of a block mask, and the masked
// kernel reads every block the run selected once for all of its queries.
void MiniMaxM3::prefillSparse(int li, std::span<const TokenInput> batch, const KvCache& cache,
                              ThreadPool& pool, float* out, BlockTrace* traced) {
    constexpr std::int64_t kRun = 32;
    const ModelConfig& c = m_config;
    const std::int64_t T = std::int64_t(batch.size()), H = c.heads, G = c.kvHeads, hd = c.headDim,
                       group = H / G;
    const int S = m_hyper.blockSize, topK = m_hyper.topK, Di = m_hyper.indexDim;
    const float scale = 1.0f / std::sqrt(float(hd));
    std::vector<std::int64_t> starts;
    for (std::int64_t t = 0; t < T; ++t) {
        if (t == 0 || batch[std::size_t(t)].sequence != batch[std::size_t(t - 1)].sequence ||
            t - starts.back() == kRun)
            starts.push_back(t);
    }
    starts.push_back(T);
    const std::int64_t runs = std::int64_t(starts.size()) - 1;
    // Per (run, group): the block mask and the query lengths, made before attending so that KV
    // tiers can bring the masked blocks in between (chooseFetchAttend).
    std::vector<std::vector<std::uint8_t>> masks(std::size_t(runs * G));
    std::vector<std::vector<std::int64_t>> runLengths(std::size_t(runs * G));
    const auto choose = [&](std::int64_t begin, std::int64_t end) {
        std::vector<float> blockScores;
        std::vector<std::int32_t> chosen(static_cast<std::size_t>(std::max(topK, 1)));
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t first = starts[std::size_t(item / G)],
                               last = starts[std::size_t(item / G + 1)];
            const int g = int(item % G), n = int(last - first);
            const TokenInput& head = batch[std::size_t(first)];
            const std::span<const std::int32_t> table = cache.blockTable(head.sequence);
            std::vector<std::uint8_t>& mask = masks[std::size_t(item)];
            std::vector<std::int64_t>& lengths = runLengths[std::size_t(item)];
            std::int64_t longest = 0;
            lengths.resize(std::size_t(n));
            for (int i = 0; i < n; ++i) {
                lengths[std::size_t(i)] = batch[std::size_t(first + i)].slot + 1;
                longest = std::max(longest, lengths[std::size_t(i)]);
            }
            const std::int64_t blocks = kernels::selectionBlocks(longest, S);
            mask.assign(std::size_t(n * blocks), 0);
            const kernels::PagedIndexKeys keys{cache.indexKeys(li), table.data(),
                                               cache.options().blockSize, Di};
            for (int i = 0; i < n; ++i) {
                const std::int64_t t = first + i, length = lengths[std::size_t(i)];
                const std::int64_t own = kernels::selectionBlocks(length, S);
                blockScores.resize(std::size_t(own));
                kernels::indexerBlockScores(m_iq.data() + (t * G + g) * Di, 1, keys, length, S,
                                            blockScores.data());
                const int count = kernels::selectTopBlocks(blockScores.data(), own, topK,
                                                           m_hyper.localBlocks, chosen.data());
                for (int j = 0; j < count; ++j)
                    mask[std::size_t(i * blocks + chosen[std::size_t(j)])] = 1;
                if (traced != nullptr)
                    (*traced)[std::size_t(t)][std::size_t(g)].assign(chosen.begin(),
                                                                     chosen.begin() + count);
            }
        }
    };
    const auto pages = [&](std::int64_t item) {
        addMaskedPages(cache, batch[std::size_t(starts[std::size_t(item / G)])],
                       masks[std::size_t(item)], runLengths[std::size_t(item)]);
    };
    const auto attend = [&](std::int64_t begin, std::int64_t end) {
        std::vector<float> work;
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t first = starts[std::size_t(item / G)];
            const int g = int(item % G);
            const TokenInput& head = batch[std::size_t(first)];
            const std::vector<std::uint8_t>& mask = masks[std::size_t(item)];
            const std::vector<std::int64_t>& lengths = runLengths[std::size_t(item)];
            const int n = int(lengths.size());
            const std::int64_t blocks = std::int64_t(mask.size()) / n;
            work.resize(std::size_t(n * group * (hd + 2) + S));
            kernels::attendMaskedBlocks(m_q.data() + first * H * hd, H * hd, n, lengths.data(),
                                        int(H), pagedKv(cache, li, head.sequence), scale,
                                        mask.data(), blocks, S, out + first * H * hd, H * hd,
                                        work.data(), int(g * group), int((g + 1) * group));
        }
    };
    chooseFetchAttend(li, cache, pool, runs * G, choose, pages, attend);
}

void MiniMaxM3::reserve(std::int64_t T) {
    const ModelConfig& c = m_config;
    const std::int64_t D = c.hiddenSize, H = c.heads, G = c.kvHeads, hd = c.headDim,
                       Di = std::max<std::int64_t>(m_hyper.indexDim, 1), k = m_hyper.routing.used;
    growScratch(m_x, T * D);
    growScratch(m_norm, T * D);
    growScratch(m_q, T * H * hd);
    growScratch(m_k, T * G * hd);
    growScratch(m_v, T * G * hd);
    growScratch(m_attn, T * H * hd);
    growScratch(m_out, T * D);
    growScratch(m_iq, T * G * Di);
    growScratch(m_ik, T * Di);
    if (k > 0) {
        m_experts.resize(std::size_t(T * k));
        growScratch(m_expertWeights, T * k);
    }
}

void MiniMaxM3::attentionBlock(std::size_t l, std::span<const TokenInput> batch, KvCache& cache,
                               ThreadPool& pool) {
    const ModelConfig& c = m_config;
    const Layer& layer = m_weights.layers[l];
    const std::int64_t T = std::int64_t(batch.size()), D = c.hiddenSize, H = c.heads, G = c.kvHeads,
                       hd = c.headDim, Di = m_hyper.indexDim;
    float *x = m_x.data(), *norm = m_norm.data(), *q = m_q.data(), *k = m_k.data(), *v = m_v.data(),
          *iq = m_iq.data(), *ik = m_ik.data();
    rmsNormRows(x, layer.attnNorm, norm, T, D, c.rmsEps, pool);
    if (layer.sparse) {
        m_runner.run(
            {{&layer.q, q}, {&layer.k, k}, {&layer.v, v}, {&layer.indexQ, iq}, {&layer.indexK, ik}},
            norm, T, pool);
        rmsNormRows(iq, layer.indexQNorm, iq, T * G, Di, c.rmsEps, pool);
        rmsNormRows(ik, layer.indexKNorm, ik, T, Di, c.rmsEps, pool);
    } else {
        m_runner.run({{&layer.q, q}, {&layer.k, k}, {&layer.v, v}}, norm, T, pool);
    }
    // Norm before rotary, per head with one shared weight vector.
    rmsNormRows(q, layer.qNorm, q, T * H, hd, c.rmsEps, pool);
    rmsNormRows(k, layer.kNorm, k, T * G, hd, c.rmsEps, pool);
    m_rope.apply(q, int(H), int(hd), pool);
    m_rope.apply(k, int(G), int(hd), pool);
    if (layer.sparse) {
        m_rope.apply(iq, int(G), int(Di), pool);
        m_rope.apply(ik, 1, int(Di), pool);
    }
    writeKv(int(l), batch, k, v, layer.sparse ? ik : nullptr, cache, pool);
    attention(l, batch, cache, pool, m_attn.data());
    if (m_trace != nullptr && layer.sparse) traceAttention(l, T);
    m_runner.run(layer.o, m_attn.data(), T, m_out.data(), pool);
    addResidual(x, m_out.data(), T * D, pool);
}

void MiniMaxM3::traceAttention(std::size_t l, std::int64_t T) {
    const std::int64_t H = m_config.heads, G = m_config.kvHeads, hd = m_config.headDim,
                       Di = m_hyper.indexDim;
    const auto slice = [](const std::vector<float>& from, std::int64_t t, std::int64_t n) {
        return std::vector<float>(from.begin() + t * n, from.begin() + (t + 1) * n);
    };
    auto& traced = m_trace->attention[l];
    traced.resize(std::size_t(T));
    for (std::int64_t t = 0; t < T; ++t) {
        traced[std::size_t(t)] = {slice(m_q, t, H * hd),  slice(m_iq, t, G * Di),
                                  slice(m_k, t, G * hd),  slice(m_v, t, G * hd),
                                  slice(m_ik, t, Di),     slice(m_attn, t, H * hd)};
    }
}

void MiniMaxM3::feedForwardBlock(std::size_t l, std::int64_t T, ThreadPool& pool) {
    const Layer& layer = m_weights.layers[l];
    const std::int64_t D = m_config.hiddenSize, k = m_hyper.routing.used;
    float *x = m_x.data(), *norm = m_norm.data(), *out = m_out.data();
    rmsNormRows(x, layer.ffnNorm, norm, T, D, m_config.rmsEps, pool);
    if (!layer.sparse) {
        m_ffn.dense(layer, norm, T, out, m_runner, pool);
        addResidual(x, out, T * D, pool);
        return;
    }
    int* experts = m_experts.data();
    float* weights = m_expertWeights.data();
    m_ffn.moe(layer, m_hyper, norm, T, out, experts, weights, m_runner, pool);
    if (m_trace != nullptr) {
        auto& e = m_trace->experts[l];
        auto& w = m_trace->expertWeights[l];
        for (std::int64_t t = 0; t < T; ++t) {
            e.emplace_back(experts + t * k, experts + (t + 1) * k);
            w.emplace_back(weights + t * k, weights + (t + 1) * k);
        }
    }
    addResidual(x, out, T * D, pool);
}

Status MiniMaxM3::forward(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                          std::vector<float>& logits) {
    const std::int64_t T = std::int64_t(batch.size());
    if (m_trace != nullptr) {
        const std::size_t layers = m_weights.layers.size();
        m_trace->experts.assign(layers, {});
        m_trace->expertWeights.assign(layers, {});
        m_trace->blocks.assign(layers, {});
        m_trace->attention.assign(layers, {});
    }
    if (T == 0) return {};
    IRIS_RETURN_IF_ERROR(checkBatch(batch, cache, m_config));
    reserve(T);
    embedTokens(batch, *m_weights.tokenEmbedding, m_config.hiddenSize, m_x.data());
    m_rope.build(batch, m_config);
    if (cache.residency() != nullptr) cache.residency()->beginForward();
    m_tierStatus = Status::ok();
    for (std::size_t l = 0; l < m_weights.layers.size(); ++l) {
        attentionBlock(l, batch, cache, pool);
        IRIS_RETURN_IF_ERROR(m_tierStatus);
        feedForwardBlock(l, T, pool);
    }
    appendLogits(batch, m_x.data(), m_weights.outputNorm, m_config.rmsEps, m_weights.output,
                 m_runner, pool, m_rows, logits);
    return {};
}

}  // namespace

std::unique_ptr<Model> makeModel(ModelConfig config, Hyper hyper, Weights weights) {
    return std::make_unique<MiniMaxM3>(std::move(config), hyper, std::move(weights));
}

}  // namespace m3

bool traceMiniMaxM3(Model& model, MiniMaxM3Trace* trace) {
    auto* m3 = dynamic_cast<m3::MiniMaxM3*>(&model);
    if (m3 == nullptr) return false;
    m3->setTrace(trace);
    return true;
}

}  // namespace iris::inference
