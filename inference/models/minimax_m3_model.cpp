// The MiniMax-M3 forward pass (docs/minimax-m3.md section 3): attention with per-head q/k norm
// and partial NEOX rotary, dense on the leading layers and MiniMax Sparse Attention (MSA) on the
// others; feed-forward blocks in minimax_m3_ffn.cpp.
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

#include "inference/models/minimax_m3.h"
#include "kernels/attention.h"
#include "kernels/fp16.h"
#include "kernels/quant.h"
#include "kernels/rms_norm.h"
#include "kernels/rope.h"
#include "kernels/sparse_attention.h"

namespace iris::inference {
namespace m3 {
namespace {

class MiniMaxM3 final : public Model {
public:
    MiniMaxM3(ModelConfig config, Hyper hyper, Weights weights)
        : m_config(std::move(config)), m_hyper(hyper), m_weights(std::move(weights)) {
        m_projector.pack(m_weights.output);
        for (Layer& l : m_weights.layers) {
            for (Linear* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down})
                if (w->data != nullptr) m_projector.pack(*w);
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
    Status check(std::span<const TokenInput> batch, const KvCache& cache) const;
    void embed(std::span<const TokenInput> batch, float* x) const;
    void ropeTables(std::span<const TokenInput> batch);
    void attention(std::size_t layer, std::span<const TokenInput> batch, KvCache& cache,
                   ThreadPool& pool, float* out);
    void store(int layer, std::span<const TokenInput> batch, KvCache& cache) const;
    using BlockTrace = std::vector<std::vector<std::vector<std::int32_t>>>;  // [token][group]
    void prefillSparse(int layer, std::span<const TokenInput> batch, KvCache& cache,
                       ThreadPool& pool, float* out, BlockTrace* traced);

    ModelConfig m_config;
    Hyper m_hyper;
    Weights m_weights;
    bool m_dense = false;
    MiniMaxM3Trace* m_trace = nullptr;
    Projector m_projector;
    FeedForward m_ffn;
    // Scratch, reused between calls (forward is not reentrant).
    std::vector<float> m_x, m_norm, m_q, m_k, m_v, m_iq, m_ik, m_attn, m_out, m_cos, m_sin, m_rows,
        m_weightsBuf;
    std::vector<int> m_experts;
};

Status MiniMaxM3::check(std::span<const TokenInput> batch, const KvCache& cache) const {
    const KvCacheOptions& o = cache.options();
    if (o.layers != m_config.layers || o.kvHeads != m_config.kvHeads ||
        o.headDim != m_config.headDim) {
        return Status::invalidArgument("KV cache geometry does not match the model");
    }
    if (m_config.indexerDim > 0 &&
        (o.indexerDim != m_config.indexerDim || o.indexerFirstLayer != m_config.indexerFirstLayer ||
         o.selectionBlock != m_config.selectionBlock)) {
        return Status::invalidArgument(
            "KV cache has no room for MiniMax-M3's indexer keys: make it with "
            "Model::kvCacheOptions()");
    }
    for (const TokenInput& in : batch) {
        if (in.embedding == nullptr && (in.token < 0 || in.token >= m_config.vocabSize)) {
            return Status::invalidArgument("token id " + std::to_string(in.token) +
                                           " is outside the vocabulary (" +
                                           std::to_string(m_config.vocabSize) + " tokens)");
        }
        if (!cache.exists(in.sequence) || in.slot < 0 || in.slot >= cache.length(in.sequence)) {
            return Status::invalidArgument("KV slot " + std::to_string(in.slot) + " of sequence " +
                                           std::to_string(in.sequence) + " was not reserved");
        }
    }
    return {};
}

void MiniMaxM3::embed(std::span<const TokenInput> batch, float* x) const {
    const std::int64_t D = m_config.hiddenSize;
    const GgufTensor& table = *m_weights.tokenEmbedding;
    const std::int64_t rowBytes = kernels::rowBytes(table.type, D);
    for (std::size_t t = 0; t < batch.size(); ++t) {
        float* row = x + std::int64_t(t) * D;
        if (batch[t].embedding != nullptr) {
            std::copy(batch[t].embedding, batch[t].embedding + D, row);
        } else {
            kernels::dequantizeRow(table.type, table.data.data() + batch[t].token * rowBytes, row,
                                   D);
        }
    }
}

void MiniMaxM3::ropeTables(std::span<const TokenInput> batch) {
    const int dims = m_config.ropeDims, pairs = dims / 2;
    float* cos = scratch(m_cos, std::int64_t(batch.size()) * pairs);
    float* sin = scratch(m_sin, std::int64_t(batch.size()) * pairs);
    for (std::size_t t = 0; t < batch.size(); ++t) {
        for (int i = 0; i < pairs; ++i) {
            const double angle = double(batch[t].position[0]) *
                                 std::pow(double(m_config.ropeBase), -2.0 * i / double(dims));
            cos[t * std::size_t(pairs) + std::size_t(i)] = float(std::cos(angle));
            sin[t * std::size_t(pairs) + std::size_t(i)] = float(std::sin(angle));
        }
    }
}

// Writes the batch's K, V (and indexer keys on sparse layers) into their slots.
void MiniMaxM3::store(int layer, std::span<const TokenInput> batch, KvCache& cache) const {
    const std::int64_t kv = m_config.kvHeads * m_config.headDim;
    const bool f16 = cache.options().type == kernels::TensorType::F16;
    const bool sparse = m_weights.layers[std::size_t(layer)].sparse;
    for (std::size_t t = 0; t < batch.size(); ++t) {
        const float* k = m_k.data() + std::int64_t(t) * kv;
        const float* v = m_v.data() + std::int64_t(t) * kv;
        void* kSlot = cache.keySlot(layer, batch[t].sequence, batch[t].slot);
        void* vSlot = cache.valueSlot(layer, batch[t].sequence, batch[t].slot);
        if (f16) {
            auto* kd = static_cast<std::uint16_t*>(kSlot);
            auto* vd = static_cast<std::uint16_t*>(vSlot);
            for (std::int64_t i = 0; i < kv; ++i) {
                kd[i] = kernels::fp32ToFp16(k[i]);
                vd[i] = kernels::fp32ToFp16(v[i]);
            }
        } else {
            std::copy(k, k + kv, static_cast<float*>(kSlot));
            std::copy(v, v + kv, static_cast<float*>(vSlot));
        }
        if (sparse) {
            const float* ik = m_ik.data() + std::int64_t(t) * m_hyper.indexDim;
            std::copy(ik, ik + m_hyper.indexDim,
                      cache.indexKeySlot(layer, batch[t].sequence, batch[t].slot));
        }
    }
}

void MiniMaxM3::attention(std::size_t layerIndex, std::span<const TokenInput> batch, KvCache& cache,
                          ThreadPool& pool, float* out) {
    const ModelConfig& c = m_config;
    const Layer& layer = m_weights.layers[layerIndex];
    const int li = int(layerIndex);
    const std::int64_t T = std::int64_t(batch.size()), H = c.heads, G = c.kvHeads, hd = c.headDim,
                       group = H / G;
    const bool sparse = layer.sparse && !m_dense;
    const int S = m_hyper.blockSize, topK = m_hyper.topK, Di = m_hyper.indexDim;
    const float scale = 1.0f / std::sqrt(float(hd));
    std::int64_t longest = 0;
    for (const TokenInput& in : batch)
        longest = std::max(longest, in.slot + 1);
    BlockTrace* traced = nullptr;
    if (m_trace != nullptr && sparse) {
        traced = &m_trace->blocks[layerIndex];
        traced->assign(std::size_t(T),
                       std::vector<std::vector<std::int32_t>>(static_cast<std::size_t>(G)));
    }
    if (sparse && T > 1) {
        prefillSparse(li, batch, cache, pool, out, traced);
        return;
    }
    pool.parallelFor(T * G, 1, [&](std::int64_t begin, std::int64_t end) {
        std::vector<float> work;
        std::vector<float> blockScores;
        std::vector<std::int32_t> chosen(std::size_t(std::max(topK, 1)));
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t t = item / G;
            const int g = int(item % G);
            const TokenInput& in = batch[std::size_t(t)];
            const std::span<const std::int32_t> table = cache.blockTable(in.sequence);
            const kernels::PagedKv kv{
                cache.keys(li), cache.values(li), table.data(),        cache.options().blockSize,
                int(G),         int(hd),          cache.options().type};
            const float* q = m_q.data() + t * H * hd;
            float* o = out + t * H * hd;
            const std::int64_t length = in.slot + 1;
            if (!sparse) {
                work.resize(std::size_t(group * longest));
                kernels::attendPaged(q, int(H), kv, length, scale, o, work.data(), int(g * group),
                                     int((g + 1) * group));
                continue;
            }
            const std::int64_t blocks = kernels::selectionBlocks(length, S);
            blockScores.resize(static_cast<std::size_t>(blocks));
            const kernels::PagedIndexKeys keys{cache.indexKeys(li), table.data(),
                                               cache.options().blockSize, Di};
            kernels::indexerBlockScores(m_iq.data() + (t * G + g) * Di, 1, keys, length, S,
                                        blockScores.data());
            const int count = kernels::selectTopBlocks(blockScores.data(), blocks, topK,
                                                       m_hyper.localBlocks, chosen.data());
            work.resize(std::size_t(group * count * S));
            kernels::attendBlocks(q, int(H), kv, length, scale, chosen.data(), count, S, o,
                                  work.data(), int(g * group), int((g + 1) * group));
            if (traced != nullptr)
                (*traced)[std::size_t(t)][std::size_t(g)].assign(chosen.begin(),
                                                                 chosen.begin() + count);
        }
    });
}

// Prefill on a sparse layer: the batch is cut into runs of up to kRun consecutive tokens of one
// sequence; per (run, KV group) each token's choice becomes a row of a block mask, and the masked
// kernel reads every block the run selected once for all of its queries.
void MiniMaxM3::prefillSparse(int li, std::span<const TokenInput> batch, KvCache& cache,
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
    pool.parallelFor(runs * G, 1, [&](std::int64_t begin, std::int64_t end) {
        std::vector<float> work, blockScores;
        std::vector<std::uint8_t> mask;
        std::vector<std::int64_t> lengths;
        std::vector<std::int32_t> chosen(static_cast<std::size_t>(std::max(topK, 1)));
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t first = starts[std::size_t(item / G)],
                               last = starts[std::size_t(item / G + 1)];
            const int g = int(item % G), n = int(last - first);
            const TokenInput& head = batch[std::size_t(first)];
            const std::span<const std::int32_t> table = cache.blockTable(head.sequence);
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
            const kernels::PagedKv kv{
                cache.keys(li), cache.values(li), table.data(),        cache.options().blockSize,
                int(G),         int(hd),          cache.options().type};
            work.resize(std::size_t(n * group * (hd + 2) + S));
            kernels::attendMaskedBlocks(m_q.data() + first * H * hd, H * hd, n, lengths.data(),
                                        int(H), kv, scale, mask.data(), blocks, S,
                                        out + first * H * hd, H * hd, work.data(), int(g * group),
                                        int((g + 1) * group));
        }
    });
}

Status MiniMaxM3::forward(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                          std::vector<float>& logits) {
    const ModelConfig& c = m_config;
    const std::int64_t T = std::int64_t(batch.size()), D = c.hiddenSize, H = c.heads, G = c.kvHeads,
                       hd = c.headDim, Di = m_hyper.indexDim, k = m_hyper.expertsUsed;
    if (m_trace != nullptr) {
        const std::size_t layers = m_weights.layers.size();
        m_trace->experts.assign(layers, {});
        m_trace->expertWeights.assign(layers, {});
        m_trace->blocks.assign(layers, {});
    }
    if (T == 0) return {};
    IRIS_RETURN_IF_ERROR(check(batch, cache));

    float* x = scratch(m_x, T * D);
    embed(batch, x);
    ropeTables(batch);
    float* norm = scratch(m_norm, T * D);
    float* q = scratch(m_q, T * H * hd);
    float* kk = scratch(m_k, T * G * hd);
    float* v = scratch(m_v, T * G * hd);
    float* attn = scratch(m_attn, T * H * hd);
    float* out = scratch(m_out, T * D);
    float* iq = scratch(m_iq, T * G * std::max<std::int64_t>(Di, 1));
    float* ik = scratch(m_ik, T * std::max<std::int64_t>(Di, 1));
    int* experts = nullptr;
    float* weights = nullptr;
    if (k > 0) {
        m_experts.resize(std::size_t(T * k));
        experts = m_experts.data();
        weights = scratch(m_weightsBuf, T * k);
    }
    const int pairs = c.ropeDims / 2;

    for (std::size_t l = 0; l < m_weights.layers.size(); ++l) {
        const Layer& layer = m_weights.layers[l];
        kernels::rmsNorm(x, D, layer.attnNorm, norm, D, T, D, c.rmsEps);
        if (layer.sparse) {
            m_projector.run({{&layer.q, q},
                             {&layer.k, kk},
                             {&layer.v, v},
                             {&layer.indexQ, iq},
                             {&layer.indexK, ik}},
                            norm, T, pool);
            kernels::rmsNorm(iq, Di, layer.indexQNorm, iq, Di, T * G, Di, c.rmsEps);
            kernels::rmsNorm(ik, Di, layer.indexKNorm, ik, Di, T, Di, c.rmsEps);
        } else {
            m_projector.run({{&layer.q, q}, {&layer.k, kk}, {&layer.v, v}}, norm, T, pool);
        }
        // Norm before rotary, per head with one shared weight vector.
        kernels::rmsNorm(q, hd, layer.qNorm, q, hd, T * H, hd, c.rmsEps);
        kernels::rmsNorm(kk, hd, layer.kNorm, kk, hd, T * G, hd, c.rmsEps);
        for (std::int64_t t = 0; t < T; ++t) {
            const float* cos = m_cos.data() + t * pairs;
            const float* sin = m_sin.data() + t * pairs;
            kernels::ropeNeox(q + t * H * hd, int(H), int(hd), c.ropeDims, cos, sin);
            kernels::ropeNeox(kk + t * G * hd, int(G), int(hd), c.ropeDims, cos, sin);
            if (layer.sparse) {
                kernels::ropeNeox(iq + t * G * Di, int(G), int(Di), c.ropeDims, cos, sin);
                kernels::ropeNeox(ik + t * Di, 1, int(Di), c.ropeDims, cos, sin);
            }
        }
        store(int(l), batch, cache);
        attention(l, batch, cache, pool, attn);
        m_projector.run(layer.o, attn, T, out, pool);
        for (std::int64_t i = 0; i < T * D; ++i)
            x[i] += out[i];

        kernels::rmsNorm(x, D, layer.ffnNorm, norm, D, T, D, c.rmsEps);
        if (layer.sparse) {
            m_ffn.moe(layer, m_hyper, norm, T, out, experts, weights, m_projector, pool);
            if (m_trace != nullptr) {
                auto& e = m_trace->experts[l];
                auto& w = m_trace->expertWeights[l];
                for (std::int64_t t = 0; t < T; ++t) {
                    e.emplace_back(experts + t * k, experts + (t + 1) * k);
                    w.emplace_back(weights + t * k, weights + (t + 1) * k);
                }
            }
        } else {
            m_ffn.dense(layer, norm, T, out, m_projector, pool);
        }
        for (std::int64_t i = 0; i < T * D; ++i)
            x[i] += out[i];
    }

    std::vector<std::int64_t> rows;
    for (std::int64_t t = 0; t < T; ++t)
        if (batch[std::size_t(t)].wantLogits) rows.push_back(t);
    if (rows.empty()) return {};
    float* selected = scratch(m_rows, std::int64_t(rows.size()) * D);
    for (std::size_t r = 0; r < rows.size(); ++r)
        kernels::rmsNorm(x + rows[r] * D, D, m_weights.outputNorm, selected + std::int64_t(r) * D,
                         D, 1, D, c.rmsEps);
    const std::size_t offset = logits.size();
    logits.resize(offset + rows.size() * std::size_t(c.vocabSize));
    m_projector.run(m_weights.output, selected, std::int64_t(rows.size()), logits.data() + offset,
                    pool);
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
