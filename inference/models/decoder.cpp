#include "inference/models/decoder.h"

#include <string>
#include <utility>

#include "inference/backend/backend.h"
#include "inference/models/model_parts.h"
#include "inference/models/tensor_binder.h"
#include "kernels/tensor_type.h"

namespace iris::inference {
namespace {

class DecoderModel final : public Model {
public:
    DecoderModel(ModelConfig config, DecoderWeights weights,
                 std::unique_ptr<DecoderBackend> backend)
        : m_config(std::move(config)),
          m_weights(std::move(weights)),
          m_backend(std::move(backend)) {}

    // Hands every weight to the backend (packing on the CPU, upload on CUDA).
    Status adoptWeights();

    const ModelConfig& config() const override { return m_config; }

    Status bindCache(KvCache& cache) override { return m_backend->bindCache(cache); }

    Status forward(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                   std::vector<float>& logits) override;
    bool samplesOnDevice() const override { return m_backend->samplesOnDevice(); }
    Status forwardCandidates(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                             std::span<const CandidateRequest> requests,
                             Candidates& candidates) override;

private:
    // Every layer over a non-empty `batch`; returns the final hidden states (backend memory).
    Result<const float*> layers(std::span<const TokenInput> batch, KvCache& cache,
                                ThreadPool& pool);
    // x += attention(RMSNorm(x)) for one layer; writes the batch's K and V first.
    void attentionBlock(int layer, std::int64_t tokens);
    // x += FFN(RMSNorm(x)) for one layer: down(silu(gate(x)) * up(x)).
    void feedForwardBlock(const DecoderLayer& layer, std::int64_t tokens);

    ModelConfig m_config;
    DecoderWeights m_weights;
    std::unique_ptr<DecoderBackend> m_backend;
};

Status DecoderModel::adoptWeights() {
    DecoderBackend& b = *m_backend;
    const ModelConfig& c = m_config;
    const GgufTensor& table = *m_weights.tokenEmbedding;
    const auto vectorBytes = [](std::int64_t n) { return n * std::int64_t(sizeof(float)); };
    std::int64_t bytes =
        kernels::rowBytes(table.type, c.hiddenSize) * c.vocabSize + vectorBytes(c.hiddenSize);
    if (m_weights.output.data != table.data.data()) bytes += m_weights.output.bytes();
    for (const DecoderLayer& layer : m_weights.layers) {
        for (const Linear* w :
             {&layer.q, &layer.k, &layer.v, &layer.o, &layer.gate, &layer.up, &layer.down})
            bytes += w->bytes();
        bytes += vectorBytes(2 * c.hiddenSize + (layer.qNorm != nullptr ? 2 * c.headDim : 0));
    }
    IRIS_RETURN_IF_ERROR(b.beginLoading(bytes));
    IRIS_RETURN_IF_ERROR(b.adoptEmbedding(*m_weights.tokenEmbedding, c.hiddenSize));
    IRIS_RETURN_IF_ERROR(b.adoptVector(m_weights.outputNorm, c.hiddenSize));
    IRIS_RETURN_IF_ERROR(b.adoptLinear(m_weights.output));
    for (DecoderLayer& layer : m_weights.layers) {
        for (Linear* w :
             {&layer.q, &layer.k, &layer.v, &layer.o, &layer.gate, &layer.up, &layer.down})
            IRIS_RETURN_IF_ERROR(b.adoptLinear(*w));
        IRIS_RETURN_IF_ERROR(b.adoptVector(layer.attnNorm, c.hiddenSize));
        IRIS_RETURN_IF_ERROR(b.adoptVector(layer.ffnNorm, c.hiddenSize));
        if (layer.qNorm != nullptr) IRIS_RETURN_IF_ERROR(b.adoptVector(layer.qNorm, c.headDim));
        if (layer.kNorm != nullptr) IRIS_RETURN_IF_ERROR(b.adoptVector(layer.kNorm, c.headDim));
    }
    return b.finishLoading();
}

void DecoderModel::attentionBlock(int li, std::int64_t T) {
    const ModelConfig& c = m_config;
    const DecoderLayer& layer = m_weights.layers[std::size_t(li)];
    const std::int64_t D = c.hiddenSize, H = c.heads, G = c.kvHeads, hd = c.headDim;
    DecoderBackend& b = *m_backend;
    float* x = b.scratch(Activations::X, T * D);
    float* norm = b.scratch(Activations::Norm, T * D);
    float* q = b.scratch(Activations::Q, T * H * hd);
    float* k = b.scratch(Activations::K, T * G * hd);
    float* v = b.scratch(Activations::V, T * G * hd);
    float* attn = b.scratch(Activations::Attention, T * H * hd);
    b.rmsNorm(x, layer.attnNorm, norm, T, D, c.rmsEps);
    b.linear({{&layer.q, q}, {&layer.k, k}, {&layer.v, v}}, norm, T);
    if (layer.qNorm != nullptr) b.rmsNorm(q, layer.qNorm, q, T * H, hd, c.rmsEps);
    if (layer.kNorm != nullptr) b.rmsNorm(k, layer.kNorm, k, T * G, hd, c.rmsEps);
    b.rope(q, int(H), int(hd));
    b.rope(k, int(G), int(hd));
    b.writeKv(li, k, v, nullptr);
    b.attend(li, q, int(H), attn);
    b.linear({{&layer.o, norm}}, attn, T);  // norm is free here: reuse it for the projection
    b.addResidual(x, norm, T * D);
}

void DecoderModel::feedForwardBlock(const DecoderLayer& layer, std::int64_t T) {
    const std::int64_t D = m_config.hiddenSize, F = layer.gate.out;
    DecoderBackend& b = *m_backend;
    float* x = b.scratch(Activations::X, T * D);
    float* norm = b.scratch(Activations::Norm, T * D);
    float* gate = b.scratch(Activations::Gate, T * F);
    float* up = b.scratch(Activations::Up, T * F);
    b.rmsNorm(x, layer.ffnNorm, norm, T, D, m_config.rmsEps);
    b.linear({{&layer.gate, gate}, {&layer.up, up}}, norm, T);
    b.gatedActivation(GateActivation::SwiGlu, gate, up, T * F);
    b.linear({{&layer.down, norm}}, gate, T);
    b.addResidual(x, norm, T * D);
}

Result<const float*> DecoderModel::layers(std::span<const TokenInput> batch, KvCache& cache,
                                          ThreadPool& pool) {
    const std::int64_t T = std::int64_t(batch.size());
    IRIS_RETURN_IF_ERROR(checkBatch(batch, cache, m_config));
    IRIS_RETURN_IF_ERROR(m_backend->begin(batch, cache, m_config, pool));
    float* x = m_backend->scratch(Activations::X, T * m_config.hiddenSize);
    m_backend->embed(x);
    for (std::size_t l = 0; l < m_weights.layers.size(); ++l) {
        attentionBlock(int(l), T);
        feedForwardBlock(m_weights.layers[l], T);
    }
    return x;
}

Status DecoderModel::forward(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                             std::vector<float>& logits) {
    if (batch.empty()) return {};
    Result<const float*> x = layers(batch, cache, pool);
    if (!x) return x.status();
    return m_backend->finish(*x, m_weights.outputNorm, m_config.rmsEps, m_weights.output, logits);
}

Status DecoderModel::forwardCandidates(std::span<const TokenInput> batch, KvCache& cache,
                                       ThreadPool& pool, std::span<const CandidateRequest> requests,
                                       Candidates& candidates) {
    if (batch.empty()) return {};
    Result<const float*> x = layers(batch, cache, pool);
    if (!x) return x.status();
    return m_backend->finishCandidates(*x, m_weights.outputNorm, m_config.rmsEps, m_weights.output,
                                       requests, candidates);
}

}  // namespace

Result<ModelConfig> readDecoderConfig(const GgufFile& file, const std::string& arch) {
    ModelConfig c;
    c.architecture = arch;
    if (Result<std::string> name = file.getString("general.name")) c.name = *name;
    const auto integer = [&](const std::string& key, std::int64_t& out) -> Status {
        Result<std::int64_t> v = file.getInteger(key);
        if (!v) return v.status();
        if (*v <= 0)
            return Status::corrupt(file.name() + ": metadata '" + key + "' must be positive");
        out = *v;
        return {};
    };
    IRIS_RETURN_IF_ERROR(integer(arch + ".block_count", c.layers));
    IRIS_RETURN_IF_ERROR(integer(arch + ".embedding_length", c.hiddenSize));
    IRIS_RETURN_IF_ERROR(integer(arch + ".feed_forward_length", c.ffnSize));
    IRIS_RETURN_IF_ERROR(integer(arch + ".attention.head_count", c.heads));
    IRIS_RETURN_IF_ERROR(integer(arch + ".attention.head_count_kv", c.kvHeads));
    if (file.find(arch + ".context_length") != nullptr)
        IRIS_RETURN_IF_ERROR(integer(arch + ".context_length", c.contextLength));
    if (file.find(arch + ".attention.key_length") != nullptr) {
        IRIS_RETURN_IF_ERROR(integer(arch + ".attention.key_length", c.headDim));
    } else {
        if (c.hiddenSize % c.heads != 0) {
            return Status::corrupt(file.name() + ": embedding_length " +
                                   std::to_string(c.hiddenSize) +
                                   " is not a multiple of head_count " + std::to_string(c.heads));
        }
        c.headDim = c.hiddenSize / c.heads;
    }
    if (c.heads % c.kvHeads != 0) {
        return Status::corrupt(file.name() + ": metadata '" + arch + ".attention.head_count' (" +
                               std::to_string(c.heads) + ") is not a multiple of '" + arch +
                               ".attention.head_count_kv' (" + std::to_string(c.kvHeads) + ")");
    }
    if (c.headDim % 2 != 0)
        return Status::corrupt(file.name() + ": head size " + std::to_string(c.headDim) +
                               " is odd");
    if (Result<double> eps = file.getFloat(arch + ".attention.layer_norm_rms_epsilon")) {
        c.rmsEps = float(*eps);
    } else {
        return eps.status();
    }
    if (file.find(arch + ".rope.freq_base") != nullptr) {
        Result<double> base = file.getFloat(arch + ".rope.freq_base");
        if (!base) return base.status();
        c.ropeBase = float(*base);
    }
    c.ropeDims = int(c.headDim);
    Result<std::int64_t> vocabulary = readVocabularySize(file, c.hiddenSize);
    if (!vocabulary) return vocabulary.status();
    c.vocabSize = *vocabulary;
    return c;
}

Result<DecoderWeights> bindDecoderWeights(const GgufFile& file, const ModelConfig& c,
                                          const DecoderTensorNames& names) {
    const TensorBinder bind(file);
    DecoderWeights w;
    Result<const GgufTensor*> embedding =
        bind.tensor("token_embd.weight", {c.hiddenSize, c.vocabSize});
    if (!embedding) return embedding.status();
    w.tokenEmbedding = *embedding;
    Result<const float*> outputNorm = bind.vector("output_norm.weight", c.hiddenSize);
    if (!outputNorm) return outputNorm.status();
    w.outputNorm = *outputNorm;
    if (bind.has("output.weight")) {
        Result<Linear> output = bind.linear("output", c.hiddenSize, c.vocabSize, false);
        if (!output) return output.status();
        w.output = *output;
    } else {  // tied embeddings, as in the small Qwen releases
        w.output = Linear{(*embedding)->type,
                          (*embedding)->data.data(),
                          c.hiddenSize,
                          c.vocabSize,
                          nullptr,
                          nullptr};
    }
    const std::int64_t qSize = c.heads * c.headDim, kvSize = c.kvHeads * c.headDim;
    for (std::int64_t i = 0; i < c.layers; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        DecoderLayer layer;
        IRIS_RETURN_IF_ERROR(
            assign(layer.attnNorm, bind.vector(p + "attn_norm.weight", c.hiddenSize)));
        IRIS_RETURN_IF_ERROR(
            assign(layer.q, bind.linear(p + "attn_q", c.hiddenSize, qSize, names.qkvBias)));
        IRIS_RETURN_IF_ERROR(
            assign(layer.k, bind.linear(p + "attn_k", c.hiddenSize, kvSize, names.qkvBias)));
        IRIS_RETURN_IF_ERROR(
            assign(layer.v, bind.linear(p + "attn_v", c.hiddenSize, kvSize, names.qkvBias)));
        IRIS_RETURN_IF_ERROR(
            assign(layer.o, bind.linear(p + "attn_output", qSize, c.hiddenSize, false)));
        if (names.qkNorm) {
            IRIS_RETURN_IF_ERROR(
                assign(layer.qNorm, bind.vector(p + "attn_q_norm.weight", c.headDim)));
            IRIS_RETURN_IF_ERROR(
                assign(layer.kNorm, bind.vector(p + "attn_k_norm.weight", c.headDim)));
        }
        IRIS_RETURN_IF_ERROR(
            assign(layer.ffnNorm, bind.vector(p + "ffn_norm.weight", c.hiddenSize)));
        IRIS_RETURN_IF_ERROR(
            assign(layer.gate, bind.linear(p + "ffn_gate", c.hiddenSize, c.ffnSize, false)));
        IRIS_RETURN_IF_ERROR(
            assign(layer.up, bind.linear(p + "ffn_up", c.hiddenSize, c.ffnSize, false)));
        IRIS_RETURN_IF_ERROR(
            assign(layer.down, bind.linear(p + "ffn_down", c.ffnSize, c.hiddenSize, false)));
        w.layers.push_back(layer);
    }
    return w;
}

Result<std::unique_ptr<Model>> makeDecoderModel(ModelConfig config, DecoderWeights weights,
                                                const ModelBackend& where) {
    Result<std::unique_ptr<DecoderBackend>> backend = makeBackend(config, where);
    if (!backend) return backend.status();
    auto model =
        std::make_unique<DecoderModel>(std::move(config), std::move(weights), std::move(*backend));
    IRIS_RETURN_IF_ERROR(model->adoptWeights());
    return std::unique_ptr<Model>(std::move(model));
}

}  // namespace iris::inference
