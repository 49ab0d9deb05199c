#include "inference/models/decoder.h"

#include <string>
#include <utility>

#include "inference/models/gated_ffn.h"
#include "inference/models/model_parts.h"
#include "inference/models/rope_tables.h"
#include "inference/models/tensor_binder.h"
#include "kernels/rms_norm.h"

namespace iris::inference {
namespace {

class DecoderModel final : public Model {
public:
    DecoderModel(ModelConfig config, DecoderWeights weights)
        : m_config(std::move(config)), m_weights(std::move(weights)) {
        m_runner.pack(m_weights.output);
        for (DecoderLayer& layer : m_weights.layers) {
            for (Linear* w :
                 {&layer.q, &layer.k, &layer.v, &layer.o, &layer.gate, &layer.up, &layer.down})
                m_runner.pack(*w);
        }
    }

    const ModelConfig& config() const override { return m_config; }

    Status forward(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                   std::vector<float>& logits) override;

private:
    // x += attention(RMSNorm(x)) for one layer; writes the batch's K and V first.
    void attentionBlock(int layer, std::span<const TokenInput> batch, KvCache& cache,
                        ThreadPool& pool);
    // x += FFN(RMSNorm(x)) for one layer.
    void feedForwardBlock(const DecoderLayer& layer, std::int64_t tokens, ThreadPool& pool);

    ModelConfig m_config;
    DecoderWeights m_weights;
    LinearRunner m_runner;  // owns the packed copies of the weights
    GatedFfn m_ffn;
    RopeTables m_rope;
    // Scratch, reused across calls (forward is not reentrant).
    std::vector<float> m_x, m_norm, m_q, m_k, m_v, m_attn, m_rows;
};

void DecoderModel::attentionBlock(int li, std::span<const TokenInput> batch, KvCache& cache,
                                  ThreadPool& pool) {
    const ModelConfig& c = m_config;
    const DecoderLayer& layer = m_weights.layers[std::size_t(li)];
    const std::int64_t T = std::int64_t(batch.size()), D = c.hiddenSize, H = c.heads, G = c.kvHeads,
                       hd = c.headDim;
    float* x = m_x.data();
    float* norm = growScratch(m_norm, T * D);
    float* q = growScratch(m_q, T * H * hd);
    float* k = growScratch(m_k, T * G * hd);
    float* v = growScratch(m_v, T * G * hd);
    float* attn = growScratch(m_attn, T * H * hd);
    kernels::rmsNorm(x, D, layer.attnNorm, norm, D, T, D, c.rmsEps);
    m_runner.run({{&layer.q, q}, {&layer.k, k}, {&layer.v, v}}, norm, T, pool);
    if (layer.qNorm != nullptr) kernels::rmsNorm(q, hd, layer.qNorm, q, hd, T * H, hd, c.rmsEps);
    if (layer.kNorm != nullptr) kernels::rmsNorm(k, hd, layer.kNorm, k, hd, T * G, hd, c.rmsEps);
    m_rope.apply(q, int(H), int(hd));
    m_rope.apply(k, int(G), int(hd));
    writeKv(li, batch, k, v, nullptr, cache);
    attendDense(li, batch, q, int(H), cache, pool, attn);
    m_runner.run(layer.o, attn, T, norm, pool);  // norm is free here: reuse it for the projection
    addResidual(x, norm, T * D);
}

void DecoderModel::feedForwardBlock(const DecoderLayer& layer, std::int64_t T, ThreadPool& pool) {
    const std::int64_t D = m_config.hiddenSize;
    float* x = m_x.data();
    float* norm = m_norm.data();
    kernels::rmsNorm(x, D, layer.ffnNorm, norm, D, T, D, m_config.rmsEps);
    m_ffn.run(layer.gate, layer.up, layer.down, GateActivation::SwiGlu, norm, T, norm, m_runner,
              pool);
    addResidual(x, norm, T * D);
}

Status DecoderModel::forward(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                             std::vector<float>& logits) {
    const std::int64_t T = std::int64_t(batch.size());
    if (T == 0) return {};
    IRIS_RETURN_IF_ERROR(checkBatch(batch, cache, m_config));
    embedTokens(batch, *m_weights.tokenEmbedding, m_config.hiddenSize,
                growScratch(m_x, T * m_config.hiddenSize));
    m_rope.build(batch, m_config);
    for (std::size_t l = 0; l < m_weights.layers.size(); ++l) {
        attentionBlock(int(l), batch, cache, pool);
        feedForwardBlock(m_weights.layers[l], T, pool);
    }
    appendLogits(batch, m_x.data(), m_weights.outputNorm, m_config.rmsEps, m_weights.output,
                 m_runner, pool, m_rows, logits);
    return {};
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

std::unique_ptr<Model> makeDecoderModel(ModelConfig config, DecoderWeights weights) {
    return std::make_unique<DecoderModel>(std::move(config), std::move(weights));
}

}  // namespace iris::inference
