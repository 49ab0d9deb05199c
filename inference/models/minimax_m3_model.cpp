// The MiniMax-M3 forward pass (docs/minimax-m3.md section 3), as operations of a DecoderBackend
// (inference/backend/backend.h): attention with per-head q/k norm and partial NEOX rotary,
// dense on the leading layers and MiniMax Sparse Attention (MSA) on the others; the dense
// swigluoai FFN on the leading layers, the sigmoid-routed experts plus the shared expert on the
// others. The backend implements MSA and the experts (on the CPU: backend/cpu_sparse_attention.h
// and MixtureOfExperts); this file names the tensors' roles and never calls a kernel.
#include <array>
#include <cstdlib>
#include <cstring>

#include "inference/backend/backend.h"
#include "inference/models/minimax_m3.h"
#include "inference/models/model_parts.h"

namespace iris::inference {
namespace m3 {
namespace {

class MiniMaxM3 final : public Model {
public:
    MiniMaxM3(ModelConfig config, Hyper hyper, Weights weights,
              std::unique_ptr<DecoderBackend> backend)
        : m_config(std::move(config)),
          m_hyper(hyper),
          m_weights(std::move(weights)),
          m_backend(std::move(backend)) {
        const char* env = std::getenv("IRIS_DENSE_ATTENTION");
        m_dense = env != nullptr && std::strcmp(env, "1") == 0;
    }

    // Hands every weight to the backend (packing on the CPU, upload on CUDA).
    Status adoptWeights();

    const ModelConfig& config() const override { return m_config; }

    bool setDenseAttention(bool dense) override {
        m_dense = dense;
        return m_hyper.leadingDense < m_config.layers;
    }

    Status bindCache(KvCache& cache) override { return m_backend->bindCache(cache); }

    Status forward(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                   std::vector<float>& logits) override;
    bool samplesOnDevice() const override { return m_backend->samplesOnDevice(); }
    Status forwardCandidates(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                             std::span<const CandidateRequest> requests,
                             Candidates& candidates) override;

    void setTrace(MiniMaxM3Trace* trace) { m_trace = trace; }

private:
    // Every layer over `batch` (the trace reset first); returns the final hidden states (backend
    // memory), null for an empty batch.
    Result<const float*> layers(std::span<const TokenInput> batch, KvCache& cache,
                                ThreadPool& pool);
    // x += attention(RMSNorm(x)) for one layer; writes the batch's K, V and index keys first.
    void attentionBlock(std::size_t layer, std::int64_t tokens);
    // x += FFN(RMSNorm(x)) for one layer: the dense FFN, or the shared and routed experts.
    void feedForwardBlock(std::size_t layer, std::int64_t tokens);
    // y = down(swigluoai(gate(x), up(x))) over `tokens` rows.
    void gatedFfn(const Layer& layer, const float* x, std::int64_t tokens, float* y);
    // Copies the sparse layer's attention inputs and output of the batch into the trace.
    void traceAttention(std::size_t layer, std::int64_t tokens);

    ModelConfig m_config;
    Hyper m_hyper;
    Weights m_weights;
    std::unique_ptr<DecoderBackend> m_backend;
    bool m_dense = false;
    MiniMaxM3Trace* m_trace = nullptr;
    std::vector<int> m_experts;  // the routing, kept for the trace
    std::vector<float> m_expertWeights;
};

Status MiniMaxM3::adoptWeights() {
    DecoderBackend& b = *m_backend;
    const ModelConfig& c = m_config;
    const GgufTensor& table = *m_weights.tokenEmbedding;
    const auto vectorBytes = [](std::int64_t n) { return n * std::int64_t(sizeof(float)); };
    const auto products = [](Layer& l) {
        return std::array<Linear*, 9>{&l.q,  &l.k,    &l.v,      &l.o,     &l.gate,
                                      &l.up, &l.down, &l.indexQ, &l.indexK};
    };
    std::int64_t bytes =
        kernels::rowBytes(table.type, c.hiddenSize) * c.vocabSize + vectorBytes(c.hiddenSize);
    if (m_weights.output.data != table.data.data()) bytes += m_weights.output.bytes();
    for (Layer& layer : m_weights.layers) {
        for (const Linear* w : products(layer))
            if (w->data != nullptr) bytes += w->bytes();
        bytes += vectorBytes(2 * c.hiddenSize + 2 * c.headDim);
        if (layer.sparse) {
            const ExpertLayer& e = layer.experts;
            bytes += e.router.bytes() + vectorBytes(e.router.out) + e.gate.bytes() + e.up.bytes() +
                     e.down.bytes() + vectorBytes(2 * m_hyper.indexDim);
        }
    }
    IRIS_RETURN_IF_ERROR(b.beginLoading(bytes));
    IRIS_RETURN_IF_ERROR(b.adoptEmbedding(table, c.hiddenSize));
    IRIS_RETURN_IF_ERROR(b.adoptVector(m_weights.outputNorm, c.hiddenSize));
    IRIS_RETURN_IF_ERROR(b.adoptLinear(m_weights.output));
    for (Layer& layer : m_weights.layers) {
        for (Linear* w : products(layer))
            if (w->data != nullptr) IRIS_RETURN_IF_ERROR(b.adoptLinear(*w));
        IRIS_RETURN_IF_ERROR(b.adoptVector(layer.attnNorm, c.hiddenSize));
        IRIS_RETURN_IF_ERROR(b.adoptVector(layer.ffnNorm, c.hiddenSize));
        IRIS_RETURN_IF_ERROR(b.adoptVector(layer.qNorm, c.headDim));
        IRIS_RETURN_IF_ERROR(b.adoptVector(layer.kNorm, c.headDim));
        if (layer.sparse) {
            IRIS_RETURN_IF_ERROR(b.adoptExperts(layer.experts));
            IRIS_RETURN_IF_ERROR(b.adoptVector(layer.indexQNorm, m_hyper.indexDim));
            IRIS_RETURN_IF_ERROR(b.adoptVector(layer.indexKNorm, m_hyper.indexDim));
        }
    }
    return b.finishLoading();
}

void MiniMaxM3::attentionBlock(std::size_t l, std::int64_t T) {
    const ModelConfig& c = m_config;
    const Layer& layer = m_weights.layers[l];
    const std::int64_t D = c.hiddenSize, H = c.heads, G = c.kvHeads, hd = c.headDim,
                       Di = m_hyper.indexDim;
    const int li = int(l);
    DecoderBackend& b = *m_backend;
    float* x = b.scratch(Activations::X, T * D);
    float* norm = b.scratch(Activations::Norm, T * D);
    float* q = b.scratch(Activations::Q, T * H * hd);
    float* k = b.scratch(Activations::K, T * G * hd);
    float* v = b.scratch(Activations::V, T * G * hd);
    float* attn = b.scratch(Activations::Attention, T * H * hd);
    float* iq = nullptr;
    float* ik = nullptr;
    b.rmsNorm(x, layer.attnNorm, norm, T, D, c.rmsEps);
    if (layer.sparse) {
        iq = b.scratch(Activations::IndexQ, T * G * Di);
        ik = b.scratch(Activations::IndexK, T * Di);
        b.linear(
            {{&layer.q, q}, {&layer.k, k}, {&layer.v, v}, {&layer.indexQ, iq}, {&layer.indexK, ik}},
            norm, T);
        b.rmsNorm(iq, layer.indexQNorm, iq, T * G, Di, c.rmsEps);
        b.rmsNorm(ik, layer.indexKNorm, ik, T, Di, c.rmsEps);
    } else {
        b.linear({{&layer.q, q}, {&layer.k, k}, {&layer.v, v}}, norm, T);
    }
    // Norm before rotary, per head with one shared weight vector.
    b.rmsNorm(q, layer.qNorm, q, T * H, hd, c.rmsEps);
    b.rmsNorm(k, layer.kNorm, k, T * G, hd, c.rmsEps);
    b.rope(q, int(H), int(hd));
    b.rope(k, int(G), int(hd));
    if (layer.sparse) {
        b.rope(iq, int(G), int(Di));
        b.rope(ik, 1, int(Di));
    }
    b.writeKv(li, k, v, ik);
    if (layer.sparse && !m_dense) {
        const SparseAttention msa{int(Di), m_hyper.topK, m_hyper.blockSize, m_hyper.localBlocks};
        b.attendSparse(li, q, iq, int(H), msa, attn,
                       m_trace != nullptr ? &m_trace->blocks[l] : nullptr);
    } else {
        b.attend(li, q, int(H), attn);
    }
    if (m_trace != nullptr && layer.sparse) traceAttention(l, T);
    b.linear({{&layer.o, norm}}, attn, T);  // norm is free here: reuse it for the projection
    b.addResidual(x, norm, T * D);
}

void MiniMaxM3::traceAttention(std::size_t l, std::int64_t T) {
    const std::int64_t H = m_config.heads, G = m_config.kvHeads, hd = m_config.headDim,
                       Di = m_hyper.indexDim;
    DecoderBackend& b = *m_backend;
    const auto rows = [&](Activations which, std::int64_t width) {
        std::vector<float> all(std::size_t(T * width));
        b.download(b.scratch(which, T * width), T * width, all.data());
        return all;
    };
    const std::vector<float> q = rows(Activations::Q, H * hd),
                             iq = rows(Activations::IndexQ, G * Di),
                             k = rows(Activations::K, G * hd), v = rows(Activations::V, G * hd),
                             ik = rows(Activations::IndexK, Di),
                             out = rows(Activations::Attention, H * hd);
    const auto slice = [](const std::vector<float>& from, std::int64_t t, std::int64_t n) {
        return std::vector<float>(from.begin() + t * n, from.begin() + (t + 1) * n);
    };
    auto& traced = m_trace->attention[l];
    traced.resize(std::size_t(T));
    for (std::int64_t t = 0; t < T; ++t) {
        traced[std::size_t(t)] = {slice(q, t, H * hd), slice(iq, t, G * Di), slice(k, t, G * hd),
                                  slice(v, t, G * hd), slice(ik, t, Di),     slice(out, t, H * hd)};
    }
}

void MiniMaxM3::gatedFfn(const Layer& layer, const float* x, std::int64_t T, float* y) {
    const std::int64_t F = layer.gate.out;
    DecoderBackend& b = *m_backend;
    float* gate = b.scratch(Activations::Gate, T * F);
    float* up = b.scratch(Activations::Up, T * F);
    b.linear({{&layer.gate, gate}, {&layer.up, up}}, x, T);
    b.gatedActivation(GateActivation::SwiGluOai, gate, up, T * F);
    b.linear({{&layer.down, y}}, gate, T);
}

void MiniMaxM3::feedForwardBlock(std::size_t l, std::int64_t T) {
    const Layer& layer = m_weights.layers[l];
    const std::int64_t D = m_config.hiddenSize, k = m_hyper.routing.used;
    DecoderBackend& b = *m_backend;
    float* x = b.scratch(Activations::X, T * D);
    float* norm = b.scratch(Activations::Norm, T * D);
    float* out = b.scratch(Activations::Out, T * D);
    b.rmsNorm(x, layer.ffnNorm, norm, T, D, m_config.rmsEps);
    if (!layer.sparse) {
        gatedFfn(layer, norm, T, out);
        b.addResidual(x, out, T * D);
        return;
    }
    // The shared expert (weight 1), when the file has one, starts the sum the routed experts
    // add to; without one the sum starts from zero.
    if (layer.gate.data != nullptr) {
        gatedFfn(layer, norm, T, out);
    } else {
        b.zero(out, T * D);
    }
    int* experts = nullptr;
    float* weights = nullptr;
    if (m_trace != nullptr) {
        m_experts.resize(std::size_t(T * k));
        m_expertWeights.resize(std::size_t(T * k));
        experts = m_experts.data();
        weights = m_expertWeights.data();
    }
    b.mixtureOfExperts(layer.experts, m_hyper.routing, GateActivation::SwiGluOai, norm, T, out,
                       experts, weights);
    if (m_trace != nullptr) {
        auto& e = m_trace->experts[l];
        auto& w = m_trace->expertWeights[l];
        for (std::int64_t t = 0; t < T; ++t) {
            e.emplace_back(experts + t * k, experts + (t + 1) * k);
            w.emplace_back(weights + t * k, weights + (t + 1) * k);
        }
    }
    b.addResidual(x, out, T * D);
}

Result<const float*> MiniMaxM3::layers(std::span<const TokenInput> batch, KvCache& cache,
                                       ThreadPool& pool) {
    const std::int64_t T = std::int64_t(batch.size());
    if (m_trace != nullptr) {
        const std::size_t layers = m_weights.layers.size();
        m_trace->experts.assign(layers, {});
        m_trace->expertWeights.assign(layers, {});
        m_trace->blocks.assign(layers, {});
        m_trace->attention.assign(layers, {});
    }
    if (T == 0) return nullptr;
    IRIS_RETURN_IF_ERROR(checkBatch(batch, cache, m_config));
    IRIS_RETURN_IF_ERROR(m_backend->begin(batch, cache, m_config, pool));
    float* x = m_backend->scratch(Activations::X, T * m_config.hiddenSize);
    m_backend->embed(x);
    for (std::size_t l = 0; l < m_weights.layers.size(); ++l) {
        attentionBlock(l, T);
        feedForwardBlock(l, T);
    }
    return x;
}

Status MiniMaxM3::forward(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                          std::vector<float>& logits) {
    Result<const float*> x = layers(batch, cache, pool);
    if (!x) return x.status();
    if (*x == nullptr) return {};
    return m_backend->finish(*x, m_weights.outputNorm, m_config.rmsEps, m_weights.output, logits);
}

Status MiniMaxM3::forwardCandidates(std::span<const TokenInput> batch, KvCache& cache,
                                    ThreadPool& pool, std::span<const CandidateRequest> requests,
                                    Candidates& candidates) {
    Result<const float*> x = layers(batch, cache, pool);
    if (!x) return x.status();
    if (*x == nullptr) return {};
    return m_backend->finishCandidates(*x, m_weights.outputNorm, m_config.rmsEps, m_weights.output,
                                       requests, candidates);
}

}  // namespace

Result<std::unique_ptr<Model>> makeModel(ModelConfig config, Hyper hyper, Weights weights,
                                         const ModelBackend& where) {
    Result<std::unique_ptr<DecoderBackend>> backend = makeBackend(config, where);
    if (!backend) return backend.status();
    auto model = std::make_unique<MiniMaxM3>(std::move(config), hyper, std::move(weights),
                                             std::move(*backend));
    IRIS_RETURN_IF_ERROR(model->adoptWeights());
    return std::unique_ptr<Model>(std::move(model));
}

}  // namespace m3

bool traceMiniMaxM3(Model& model, MiniMaxM3Trace* trace) {
    auto* m3 = dynamic_cast<m3::MiniMaxM3*>(&model);
    if (m3 == nullptr) return false;
    m3->setTrace(trace);
    return true;
}

}  // namespace iris::inference
