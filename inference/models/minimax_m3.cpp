// MiniMax-M3 hyper-parameters and tensors as llama.cpp's converter writes them
// (docs/minimax-m3.md sections 1.2 and 2.1), checked for consistency before any weight is used.
#include "inference/models/minimax_m3.h"

#include <string>

#include "inference/models/architectures.h"
#include "inference/models/model_parts.h"
#include "inference/models/tensor_binder.h"

namespace iris::inference {
namespace {

constexpr const char* kArch = "minimax-m3";

std::string key(const std::string& name) {
    return std::string(kArch) + "." + name;
}

// Metadata reads whose errors name the file and the key.
class Metadata {
public:
    explicit Metadata(const GgufFile& file) : m_file(file) {}

    Result<std::int64_t> integer(const std::string& name, std::int64_t min) const {
        Result<std::int64_t> v = m_file.getInteger(key(name));
        if (!v) return v.status();
        if (*v < min)
            return bad(name,
                       std::to_string(*v) + " (must be at least " + std::to_string(min) + ")");
        return *v;
    }
    Result<std::int64_t> integer(const std::string& name, std::int64_t min,
                                 std::int64_t fallback) const {
        if (m_file.find(key(name)) == nullptr) return fallback;
        return integer(name, min);
    }
    Result<double> real(const std::string& name, double fallback) const {
        if (m_file.find(key(name)) == nullptr) return fallback;
        return m_file.getFloat(key(name));
    }
    Result<bool> flag(const std::string& name, bool fallback) const {
        const GgufValue* v = m_file.find(key(name));
        if (v == nullptr) return fallback;
        if (const bool* b = std::get_if<bool>(v)) return *b;
        Result<std::int64_t> i = m_file.getInteger(key(name));
        if (!i) return i.status();
        return *i != 0;
    }
    Status bad(const std::string& name, const std::string& what) const {
        return Status::corrupt(m_file.name() + ": metadata '" + key(name) + "' = " + what);
    }

private:
    const GgufFile& m_file;
};

// What every layer has: sizes, heads, rotary, norm epsilon.
Status readLayerShape(const GgufFile& file, const Metadata& meta, ModelConfig& c) {
    IRIS_RETURN_IF_ERROR(assign(c.layers, meta.integer("block_count", 1)));
    IRIS_RETURN_IF_ERROR(assign(c.hiddenSize, meta.integer("embedding_length", 1)));
    IRIS_RETURN_IF_ERROR(assign(c.contextLength, meta.integer("context_length", 1, 0)));
    IRIS_RETURN_IF_ERROR(assign(c.heads, meta.integer("attention.head_count", 1)));
    IRIS_RETURN_IF_ERROR(assign(c.kvHeads, meta.integer("attention.head_count_kv", 1, c.heads)));
    if (c.heads % c.kvHeads != 0) {
        return meta.bad(
            "attention.head_count_kv",
            std::to_string(c.kvHeads) + " does not divide head_count " + std::to_string(c.heads));
    }
    IRIS_RETURN_IF_ERROR(
        assign(c.headDim, meta.integer("attention.key_length", 2, c.hiddenSize / c.heads)));
    std::int64_t valueLength = 0;
    IRIS_RETURN_IF_ERROR(assign(valueLength, meta.integer("attention.value_length", 1, c.headDim)));
    if (valueLength != c.headDim) {
        return meta.bad("attention.value_length", std::to_string(valueLength) +
                                                      " (must equal key_length " +
                                                      std::to_string(c.headDim) + ")");
    }
    IRIS_RETURN_IF_ERROR(assign(c.ropeDims, meta.integer("rope.dimension_count", 2, c.headDim)));
    if (c.ropeDims % 2 != 0 || c.ropeDims > c.headDim) {
        return meta.bad("rope.dimension_count", std::to_string(c.ropeDims) +
                                                    " (must be even and at most key_length " +
                                                    std::to_string(c.headDim) + ")");
    }
    IRIS_RETURN_IF_ERROR(assign(c.ropeBase, meta.real("rope.freq_base", 10000.0)));
    Result<double> eps = file.getFloat(key("attention.layer_norm_rms_epsilon"));
    if (!eps) return eps.status();
    c.rmsEps = float(*eps);
    return {};
}

// The mixture of experts of the sparse layers: widths, counts, sigmoid routing.
Status readExperts(const GgufFile& file, const Metadata& meta, m3::Hyper& h) {
    IRIS_RETURN_IF_ERROR(assign(h.expertFfn, meta.integer("expert_feed_forward_length", 1)));
    IRIS_RETURN_IF_ERROR(assign(h.routing.experts, meta.integer("expert_count", 1)));
    IRIS_RETURN_IF_ERROR(assign(h.routing.used, meta.integer("expert_used_count", 1)));
    if (h.routing.used > h.routing.experts) {
        return meta.bad("expert_used_count", std::to_string(h.routing.used) +
                                                 " (more than expert_count " +
                                                 std::to_string(h.routing.experts) + ")");
    }
    IRIS_RETURN_IF_ERROR(assign(h.sharedExperts, meta.integer("expert_shared_count", 0)));
    std::int64_t gating = 0;
    IRIS_RETURN_IF_ERROR(assign(gating, meta.integer("expert_gating_func", 0)));
    if (gating != 2) {
        return Status::unsupported(file.name() + ": metadata '" + key("expert_gating_func") +
                                   "' = " + std::to_string(gating) +
                                   " (MiniMax-M3 routes with sigmoid, 2)");
    }
    IRIS_RETURN_IF_ERROR(assign(h.routing.scale, meta.real("expert_weights_scale", 1.0)));
    IRIS_RETURN_IF_ERROR(
        assign(h.routing.normaliseWeights, meta.flag("expert_weights_norm", false)));
    return {};
}

// MSA's indexer and block selection: the graph needs all five keys, so all are required.
Status readSparseAttention(const Metadata& meta, ModelConfig& c, m3::Hyper& h) {
    IRIS_RETURN_IF_ERROR(assign(h.indexHeads, meta.integer("attention.indexer.head_count", 1)));
    if (h.indexHeads != c.kvHeads) {
        return meta.bad("attention.indexer.head_count",
                        std::to_string(h.indexHeads) + " (must equal attention.head_count_kv " +
                            std::to_string(c.kvHeads) + ": one index head per KV group)");
    }
    IRIS_RETURN_IF_ERROR(assign(h.indexDim, meta.integer("attention.indexer.key_length", 2)));
    if (h.indexDim < c.ropeDims || h.indexDim % 2 != 0) {
        return meta.bad("attention.indexer.key_length",
                        std::to_string(h.indexDim) +
                            " (must be even and at least rope.dimension_count " +
                            std::to_string(c.ropeDims) + ")");
    }
    IRIS_RETURN_IF_ERROR(assign(h.blockSize, meta.integer("attention.indexer.block_size", 1)));
    IRIS_RETURN_IF_ERROR(assign(h.localBlocks, meta.integer("attention.indexer.local_blocks", 1)));
    IRIS_RETURN_IF_ERROR(assign(h.topK, meta.integer("attention.indexer.top_k", 1)));
    if (h.topK < h.localBlocks) {
        return meta.bad("attention.indexer.top_k",
                        std::to_string(h.topK) + " (fewer than local_blocks " +
                            std::to_string(h.localBlocks) + ", which count towards it)");
    }
    c.indexerDim = h.indexDim;
    c.indexerFirstLayer = int(h.leadingDense);
    c.selectionBlock = h.blockSize;
    c.selectionBlockKey = key("attention.indexer.block_size");
    return {};
}

Status readHyper(const GgufFile& file, ModelConfig& c, m3::Hyper& h) {
    const Metadata meta(file);
    c.architecture = kArch;
    if (Result<std::string> name = file.getString("general.name")) c.name = *name;
    IRIS_RETURN_IF_ERROR(readLayerShape(file, meta, c));
    IRIS_RETURN_IF_ERROR(assign(h.leadingDense, meta.integer("leading_dense_block_count", 0, 0)));
    if (h.leadingDense > c.layers) {
        return meta.bad("leading_dense_block_count", std::to_string(h.leadingDense) +
                                                         " (more than block_count " +
                                                         std::to_string(c.layers) + ")");
    }
    IRIS_RETURN_IF_ERROR(assign(h.denseFfn, meta.integer("feed_forward_length", 1)));
    c.ffnSize = h.denseFfn;
    if (h.leadingDense < c.layers) {  // any sparse layer
        IRIS_RETURN_IF_ERROR(readExperts(file, meta, h));
        IRIS_RETURN_IF_ERROR(readSparseAttention(meta, c, h));
    }
    return assign(c.vocabSize, readVocabularySize(file, c.hiddenSize));
}

Status bindWeights(const GgufFile& file, const ModelConfig& c, const m3::Hyper& h, m3::Weights& w) {
    const TensorBinder bind(file);
    const std::int64_t E = c.hiddenSize, qSize = c.heads * c.headDim,
                       kvSize = c.kvHeads * c.headDim;
    IRIS_RETURN_IF_ERROR(
        assign(w.tokenEmbedding, bind.tensor("token_embd.weight", {E, c.vocabSize})));
    IRIS_RETURN_IF_ERROR(assign(w.outputNorm, bind.vector("output_norm.weight", E)));
    IRIS_RETURN_IF_ERROR(assign(w.output, bind.linear("output", E, c.vocabSize, false)));
    for (std::int64_t i = 0; i < c.layers; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        m3::Layer l;
        l.sparse = i >= h.leadingDense;
        if (file.findTensor(p + "attn_qkv.weight") != nullptr) {
            return Status::unsupported(file.name() + ": tensor '" + p +
                                       "attn_qkv.weight' (fused q/k/v) is not supported yet");
        }
        IRIS_RETURN_IF_ERROR(assign(l.attnNorm, bind.vector(p + "attn_norm.weight", E)));
        IRIS_RETURN_IF_ERROR(assign(l.q, bind.linear(p + "attn_q", E, qSize, false)));
        IRIS_RETURN_IF_ERROR(assign(l.k, bind.linear(p + "attn_k", E, kvSize, false)));
        IRIS_RETURN_IF_ERROR(assign(l.v, bind.linear(p + "attn_v", E, kvSize, false)));
        IRIS_RETURN_IF_ERROR(assign(l.o, bind.linear(p + "attn_output", qSize, E, false)));
        IRIS_RETURN_IF_ERROR(assign(l.qNorm, bind.vector(p + "attn_q_norm.weight", c.headDim)));
        IRIS_RETURN_IF_ERROR(assign(l.kNorm, bind.vector(p + "attn_k_norm.weight", c.headDim)));
        IRIS_RETURN_IF_ERROR(assign(l.ffnNorm, bind.vector(p + "ffn_norm.weight", E)));
        if (!l.sparse) {
            IRIS_RETURN_IF_ERROR(assign(l.gate, bind.linear(p + "ffn_gate", E, h.denseFfn, false)));
            IRIS_RETURN_IF_ERROR(assign(l.up, bind.linear(p + "ffn_up", E, h.denseFfn, false)));
            IRIS_RETURN_IF_ERROR(assign(l.down, bind.linear(p + "ffn_down", h.denseFfn, E, false)));
            w.layers.push_back(l);
            continue;
        }
        const std::int64_t experts = h.routing.experts;
        IRIS_RETURN_IF_ERROR(
            assign(l.experts.router, bind.linear(p + "ffn_gate_inp", E, experts, false)));
        IRIS_RETURN_IF_ERROR(
            assign(l.experts.routerBias, bind.vector(p + "exp_probs_b.bias", experts)));
        IRIS_RETURN_IF_ERROR(assign(
            l.experts.gate, bind.experts(p + "ffn_gate_exps.weight", E, h.expertFfn, experts)));
        IRIS_RETURN_IF_ERROR(
            assign(l.experts.up, bind.experts(p + "ffn_up_exps.weight", E, h.expertFfn, experts)));
        IRIS_RETURN_IF_ERROR(assign(
            l.experts.down, bind.experts(p + "ffn_down_exps.weight", h.expertFfn, E, experts)));
        if (h.sharedExperts > 0) {
            const std::int64_t shared = h.expertFfn * h.sharedExperts;
            IRIS_RETURN_IF_ERROR(
                assign(l.gate, bind.linear(p + "ffn_gate_shexp", E, shared, false)));
            IRIS_RETURN_IF_ERROR(assign(l.up, bind.linear(p + "ffn_up_shexp", E, shared, false)));
            IRIS_RETURN_IF_ERROR(
                assign(l.down, bind.linear(p + "ffn_down_shexp", shared, E, false)));
        }
        IRIS_RETURN_IF_ERROR(assign(
            l.indexQ, bind.linear(p + "indexer.q_proj", E, h.indexHeads * h.indexDim, false)));
        IRIS_RETURN_IF_ERROR(
            assign(l.indexK, bind.linear(p + "indexer.k_proj", E, h.indexDim, false)));
        IRIS_RETURN_IF_ERROR(
            assign(l.indexQNorm, bind.vector(p + "indexer.q_norm.weight", h.indexDim)));
        IRIS_RETURN_IF_ERROR(
            assign(l.indexKNorm, bind.vector(p + "indexer.k_norm.weight", h.indexDim)));
        w.layers.push_back(l);
    }
    return {};
}

}  // namespace

Result<std::unique_ptr<Model>> createMiniMaxM3(const GgufFile& file, const ModelBackend& backend) {
    ModelConfig config;
    m3::Hyper hyper;
    IRIS_RETURN_IF_ERROR(readHyper(file, config, hyper));
    m3::Weights weights;
    IRIS_RETURN_IF_ERROR(bindWeights(file, config, hyper, weights));
    return m3::makeModel(std::move(config), hyper, std::move(weights), backend);
}

}  // namespace iris::inference
