// MiniMax-M3 hyper-parameters and tensors as llama.cpp's converter writes them
// (docs/minimax-m3.md sections 1.2 and 2.1), checked for consistency before any weight is used.
#include "inference/models/minimax_m3.h"

#include <string>
#include <type_traits>

#include "inference/models/architectures.h"

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

// Tensor lookups whose errors name the file and the tensor.
class Tensors {
public:
    explicit Tensors(const GgufFile& file) : m_file(file) {}

    Result<const GgufTensor*> find(const std::string& name,
                                   const std::vector<std::int64_t>& shape) const {
        Result<const GgufTensor*> found = m_file.requireTensor(name, shape);
        if (!found) return found.status();
        const GgufTensor* t = *found;
        if (!kernels::tensorTypeInfo(t->type).computable) {
            return Status::unsupported(m_file.name() + ": tensor '" + name + "' has type " +
                                       std::string(kernels::tensorTypeInfo(t->type).name) +
                                       ", which Iris cannot compute with");
        }
        return t;
    }
    Status vector(const std::string& name, std::int64_t size, const float*& out) const {
        Result<const GgufTensor*> t = find(name, {size});
        if (!t) return t.status();
        if ((*t)->type != kernels::TensorType::F32) {
            return Status::unsupported(m_file.name() + ": tensor '" + name + "' must be f32");
        }
        out = reinterpret_cast<const float*>((*t)->data.data());
        return {};
    }
    Status linear(const std::string& name, std::int64_t in, std::int64_t out,
                  m3::Linear& linear) const {
        Result<const GgufTensor*> t = find(name, {in, out});
        if (!t) return t.status();
        linear = m3::Linear{(*t)->type, (*t)->data.data(), in, out, nullptr};
        return {};
    }
    Status experts(const std::string& name, std::int64_t in, std::int64_t out, std::int64_t count,
                   m3::ExpertStack& stack) const {
        Result<const GgufTensor*> t = find(name, {in, out, count});
        if (!t) return t.status();
        stack = m3::ExpertStack{(*t)->type, (*t)->data.data(), in, out, count};
        return {};
    }

private:
    const GgufFile& m_file;
};

Status readHyper(const GgufFile& file, ModelConfig& c, m3::Hyper& h) {
    const Metadata meta(file);
    c.architecture = kArch;
    if (Result<std::string> name = file.getString("general.name")) c.name = *name;
    const auto read = [](auto& target, auto result) -> Status {
        if (!result) return result.status();
        target = static_cast<std::remove_reference_t<decltype(target)>>(*result);
        return {};
    };
    IRIS_RETURN_IF_ERROR(read(c.layers, meta.integer("block_count", 1)));
    IRIS_RETURN_IF_ERROR(read(c.hiddenSize, meta.integer("embedding_length", 1)));
    IRIS_RETURN_IF_ERROR(read(c.contextLength, meta.integer("context_length", 1, 0)));
    IRIS_RETURN_IF_ERROR(read(c.heads, meta.integer("attention.head_count", 1)));
    IRIS_RETURN_IF_ERROR(read(c.kvHeads, meta.integer("attention.head_count_kv", 1, c.heads)));
    if (c.heads % c.kvHeads != 0) {
        return meta.bad(
            "attention.head_count_kv",
            std::to_string(c.kvHeads) + " does not divide head_count " + std::to_string(c.heads));
    }
    IRIS_RETURN_IF_ERROR(
        read(c.headDim, meta.integer("attention.key_length", 2, c.hiddenSize / c.heads)));
    std::int64_t valueLength = 0;
    IRIS_RETURN_IF_ERROR(read(valueLength, meta.integer("attention.value_length", 1, c.headDim)));
    if (valueLength != c.headDim) {
        return meta.bad("attention.value_length", std::to_string(valueLength) +
                                                      " (must equal key_length " +
                                                      std::to_string(c.headDim) + ")");
    }
    IRIS_RETURN_IF_ERROR(read(c.ropeDims, meta.integer("rope.dimension_count", 2, c.headDim)));
    if (c.ropeDims % 2 != 0 || c.ropeDims > c.headDim) {
        return meta.bad("rope.dimension_count", std::to_string(c.ropeDims) +
                                                    " (must be even and at most key_length " +
                                                    std::to_string(c.headDim) + ")");
    }
    IRIS_RETURN_IF_ERROR(read(c.ropeBase, meta.real("rope.freq_base", 10000.0)));
    Result<double> eps = file.getFloat(key("attention.layer_norm_rms_epsilon"));
    if (!eps) return eps.status();
    c.rmsEps = float(*eps);

    IRIS_RETURN_IF_ERROR(read(h.leadingDense, meta.integer("leading_dense_block_count", 0, 0)));
    if (h.leadingDense > c.layers) {
        return meta.bad("leading_dense_block_count", std::to_string(h.leadingDense) +
                                                         " (more than block_count " +
                                                         std::to_string(c.layers) + ")");
    }
    IRIS_RETURN_IF_ERROR(read(h.denseFfn, meta.integer("feed_forward_length", 1)));
    c.ffnSize = h.denseFfn;
    const bool anySparse = h.leadingDense < c.layers;
    if (anySparse) {
        IRIS_RETURN_IF_ERROR(read(h.expertFfn, meta.integer("expert_feed_forward_length", 1)));
        IRIS_RETURN_IF_ERROR(read(h.experts, meta.integer("expert_count", 1)));
        IRIS_RETURN_IF_ERROR(read(h.expertsUsed, meta.integer("expert_used_count", 1)));
        if (h.expertsUsed > h.experts) {
            return meta.bad("expert_used_count", std::to_string(h.expertsUsed) +
                                                     " (more than expert_count " +
                                                     std::to_string(h.experts) + ")");
        }
        IRIS_RETURN_IF_ERROR(read(h.sharedExperts, meta.integer("expert_shared_count", 0)));
        std::int64_t gating = 0;
        IRIS_RETURN_IF_ERROR(read(gating, meta.integer("expert_gating_func", 0)));
        if (gating != 2) {
            return Status::unsupported(file.name() + ": metadata '" + key("expert_gating_func") +
                                       "' = " + std::to_string(gating) +
                                       " (MiniMax-M3 routes with sigmoid, 2)");
        }
        IRIS_RETURN_IF_ERROR(read(h.routedScale, meta.real("expert_weights_scale", 1.0)));
        IRIS_RETURN_IF_ERROR(read(h.normaliseWeights, meta.flag("expert_weights_norm", false)));

        // MSA: the graph needs all five, so all are required.
        IRIS_RETURN_IF_ERROR(read(h.indexHeads, meta.integer("attention.indexer.head_count", 1)));
        if (h.indexHeads != c.kvHeads) {
            return meta.bad("attention.indexer.head_count",
                            std::to_string(h.indexHeads) + " (must equal attention.head_count_kv " +
                                std::to_string(c.kvHeads) + ": one index head per KV group)");
        }
        IRIS_RETURN_IF_ERROR(read(h.indexDim, meta.integer("attention.indexer.key_length", 2)));
        if (h.indexDim < c.ropeDims || h.indexDim % 2 != 0) {
            return meta.bad("attention.indexer.key_length",
                            std::to_string(h.indexDim) +
                                " (must be even and at least rope.dimension_count " +
                                std::to_string(c.ropeDims) + ")");
        }
        IRIS_RETURN_IF_ERROR(read(h.blockSize, meta.integer("attention.indexer.block_size", 1)));
        IRIS_RETURN_IF_ERROR(
            read(h.localBlocks, meta.integer("attention.indexer.local_blocks", 1)));
        IRIS_RETURN_IF_ERROR(read(h.topK, meta.integer("attention.indexer.top_k", 1)));
        if (h.topK < h.localBlocks) {
            return meta.bad("attention.indexer.top_k",
                            std::to_string(h.topK) + " (fewer than local_blocks " +
                                std::to_string(h.localBlocks) + ", which count towards it)");
        }
        c.indexerDim = h.indexDim;
        c.indexerFirstLayer = int(h.leadingDense);
        c.selectionBlock = h.blockSize;
        c.selectionBlockKey = key("attention.indexer.block_size");
    }
    const GgufTensor* embedding = file.findTensor("token_embd.weight");
    if (embedding == nullptr)
        return Status::notFound(file.name() + ": missing tensor 'token_embd.weight'");
    if (embedding->shape.size() != 2 || embedding->shape[0] != c.hiddenSize) {
        return Status::corrupt(file.name() + ": tensor 'token_embd.weight' has shape " +
                               shapeText(embedding->shape) + ", expected " +
                               std::to_string(c.hiddenSize) + " x vocabulary");
    }
    c.vocabSize = embedding->shape[1];
    return {};
}

Status bindWeights(const GgufFile& file, const ModelConfig& c, const m3::Hyper& h, m3::Weights& w) {
    const Tensors bind(file);
    const std::int64_t E = c.hiddenSize, qSize = c.heads * c.headDim,
                       kvSize = c.kvHeads * c.headDim;
    Result<const GgufTensor*> embedding = bind.find("token_embd.weight", {E, c.vocabSize});
    if (!embedding) return embedding.status();
    w.tokenEmbedding = *embedding;
    IRIS_RETURN_IF_ERROR(bind.vector("output_norm.weight", E, w.outputNorm));
    IRIS_RETURN_IF_ERROR(bind.linear("output.weight", E, c.vocabSize, w.output));
    for (std::int64_t i = 0; i < c.layers; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        m3::Layer l;
        l.sparse = i >= h.leadingDense;
        if (file.findTensor(p + "attn_qkv.weight") != nullptr) {
            return Status::unsupported(file.name() + ": tensor '" + p +
                                       "attn_qkv.weight' (fused q/k/v) is not supported yet");
        }
        IRIS_RETURN_IF_ERROR(bind.vector(p + "attn_norm.weight", E, l.attnNorm));
        IRIS_RETURN_IF_ERROR(bind.linear(p + "attn_q.weight", E, qSize, l.q));
        IRIS_RETURN_IF_ERROR(bind.linear(p + "attn_k.weight", E, kvSize, l.k));
        IRIS_RETURN_IF_ERROR(bind.linear(p + "attn_v.weight", E, kvSize, l.v));
        IRIS_RETURN_IF_ERROR(bind.linear(p + "attn_output.weight", qSize, E, l.o));
        IRIS_RETURN_IF_ERROR(bind.vector(p + "attn_q_norm.weight", c.headDim, l.qNorm));
        IRIS_RETURN_IF_ERROR(bind.vector(p + "attn_k_norm.weight", c.headDim, l.kNorm));
        IRIS_RETURN_IF_ERROR(bind.vector(p + "ffn_norm.weight", E, l.ffnNorm));
        if (!l.sparse) {
            IRIS_RETURN_IF_ERROR(bind.linear(p + "ffn_gate.weight", E, h.denseFfn, l.gate));
            IRIS_RETURN_IF_ERROR(bind.linear(p + "ffn_up.weight", E, h.denseFfn, l.up));
            IRIS_RETURN_IF_ERROR(bind.linear(p + "ffn_down.weight", h.denseFfn, E, l.down));
            w.layers.push_back(l);
            continue;
        }
        IRIS_RETURN_IF_ERROR(bind.linear(p + "ffn_gate_inp.weight", E, h.experts, l.router));
        IRIS_RETURN_IF_ERROR(bind.vector(p + "exp_probs_b.bias", h.experts, l.routerBias));
        IRIS_RETURN_IF_ERROR(
            bind.experts(p + "ffn_gate_exps.weight", E, h.expertFfn, h.experts, l.gateExps));
        IRIS_RETURN_IF_ERROR(
            bind.experts(p + "ffn_up_exps.weight", E, h.expertFfn, h.experts, l.upExps));
        IRIS_RETURN_IF_ERROR(
            bind.experts(p + "ffn_down_exps.weight", h.expertFfn, E, h.experts, l.downExps));
        if (h.sharedExperts > 0) {
            const std::int64_t shared = h.expertFfn * h.sharedExperts;
            IRIS_RETURN_IF_ERROR(bind.linear(p + "ffn_gate_shexp.weight", E, shared, l.gate));
            IRIS_RETURN_IF_ERROR(bind.linear(p + "ffn_up_shexp.weight", E, shared, l.up));
            IRIS_RETURN_IF_ERROR(bind.linear(p + "ffn_down_shexp.weight", shared, E, l.down));
        }
        IRIS_RETURN_IF_ERROR(
            bind.linear(p + "indexer.q_proj.weight", E, h.indexHeads * h.indexDim, l.indexQ));
        IRIS_RETURN_IF_ERROR(bind.linear(p + "indexer.k_proj.weight", E, h.indexDim, l.indexK));
        IRIS_RETURN_IF_ERROR(bind.vector(p + "indexer.q_norm.weight", h.indexDim, l.indexQNorm));
        IRIS_RETURN_IF_ERROR(bind.vector(p + "indexer.k_norm.weight", h.indexDim, l.indexKNorm));
        w.layers.push_back(l);
    }
    return {};
}

}  // namespace

Result<std::unique_ptr<Model>> createMiniMaxM3(const GgufFile& file) {
    ModelConfig config;
    m3::Hyper hyper;
    IRIS_RETURN_IF_ERROR(readHyper(file, config, hyper));
    m3::Weights weights;
    IRIS_RETURN_IF_ERROR(bindWeights(file, config, hyper, weights));
    return m3::makeModel(std::move(config), hyper, std::move(weights));
}

}  // namespace iris::inference
