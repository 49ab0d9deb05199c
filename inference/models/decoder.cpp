#include "inference/models/decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/activation.h"
#include "kernels/attention.h"
#include "kernels/fp16.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "kernels/rms_norm.h"
#include "kernels/rope.h"

namespace iris::inference {
namespace {

// Finds tensors by name and checks their shapes and types, with errors that name both.
class TensorBinder {
public:
    explicit TensorBinder(const GgufFile& file) : m_file(file) {}

    Result<const GgufTensor*> tensor(const std::string& name,
                                     const std::vector<std::int64_t>& shape) const {
        Result<const GgufTensor*> found = m_file.requireTensor(name, shape);
        if (!found) return found.status();
        const GgufTensor* t = *found;
        if (!kernels::tensorTypeInfo(t->type).computable) {
            return Status::unsupported(m_file.name() + ": tensor '" + name + "' has type " +
                                       std::string(kernels::tensorTypeInfo(t->type).name) +
                                       ", which Iris cannot compute with yet");
        }
        return t;
    }

    // A 1-D f32 vector (norm weights, biases).
    Result<const float*> vector(const std::string& name, std::int64_t size) const {
        Result<const GgufTensor*> t = tensor(name, {size});
        if (!t) return t.status();
        if ((*t)->type != kernels::TensorType::F32) {
            return Status::unsupported(m_file.name() + ": tensor '" + name + "' is " +
                                       std::string(kernels::tensorTypeInfo((*t)->type).name) +
                                       ", expected f32");
        }
        return reinterpret_cast<const float*>((*t)->data.data());
    }

    Result<Linear> linear(const std::string& prefix, std::int64_t in, std::int64_t out,
                          bool bias) const {
        Result<const GgufTensor*> w = tensor(prefix + ".weight", {in, out});
        if (!w) return w.status();
        Linear linear{(*w)->type, (*w)->data.data(), in, out, nullptr};
        if (bias) {
            Result<const float*> b = vector(prefix + ".bias", out);
            if (!b) return b.status();
            linear.bias = *b;
        }
        return linear;
    }

    bool has(const std::string& name) const { return m_file.findTensor(name) != nullptr; }

private:
    const GgufFile& m_file;
};

// Growable f32 scratch that keeps its capacity between forward passes.
float* resized(std::vector<float>& buffer, std::int64_t size) {
    if (std::int64_t(buffer.size()) < size) buffer.resize(std::size_t(size));
    return buffer.data();
}

class DecoderModel final : public Model {
public:
    DecoderModel(ModelConfig config, DecoderWeights weights)
        : m_config(std::move(config)), m_weights(std::move(weights)) {
        pack(m_weights.output);
        for (DecoderLayer& layer : m_weights.layers) {
            for (Linear* w :
                 {&layer.q, &layer.k, &layer.v, &layer.o, &layer.gate, &layer.up, &layer.down})
                pack(*w);
        }
    }

    const ModelConfig& config() const override { return m_config; }

    Status forward(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                   std::vector<float>& logits) override;

private:
    struct Projection {
        const Linear* weights;
        float* y;  // rows x weights->out
    };
    // y = x W^T + b for several weight matrices that read the same x (q, k, v; gate, up): x is
    // quantised once per activation format, and one parallel pass covers all outputs.
    void linear(std::initializer_list<Projection> projections, const float* x, std::int64_t rows,
                ThreadPool& pool);
    void linear(const Linear& w, const float* x, std::int64_t rows, float* y, ThreadPool& pool) {
        linear({{&w, y}}, x, rows, pool);
    }
    void ropeTables(std::span<const TokenInput> batch);
    // Packs w when this CPU has a faster layout for its type and its rows split into whole groups.
    void pack(Linear& w) {
        const std::int64_t bytes = kernels::packedBytes(w.type, w.out, w.in);
        if (bytes == 0 || w.out % 16 != 0) return;
        // for_overwrite: packWeights writes every byte, no need to zero hundreds of MB first.
        std::unique_ptr<std::byte[]>& buffer =
            m_packed.emplace_back(std::make_unique_for_overwrite<std::byte[]>(std::size_t(bytes)));
        kernels::packWeights(w.type, w.data, w.out, w.in, buffer.get());
        w.packed = buffer.get();
    }

    ModelConfig m_config;
    DecoderWeights m_weights;
    // Scratch, reused across calls (forward is not reentrant).
    std::vector<float> m_x, m_norm, m_q, m_k, m_v, m_attn, m_gate, m_up, m_cos, m_sin, m_rows;
    std::vector<std::byte> m_prepared[3];                // one per kernels::ActivationFormat
    std::vector<std::unique_ptr<std::byte[]>> m_packed;  // owns the Linear::packed copies
};

void DecoderModel::linear(std::initializer_list<Projection> projections, const float* x,
                          std::int64_t rows, ThreadPool& pool) {
    const std::int64_t in = projections.begin()->weights->in;
    const std::byte* prepared[3] = {};
    std::int64_t totalOut = 0;
    for (const Projection& p : projections) {
        totalOut += p.weights->out;
        const kernels::TensorType type = p.weights->type;
        const auto format = std::size_t(kernels::activationFormat(type));
        if (prepared[format] != nullptr) continue;
        const std::int64_t rowBytes = kernels::preparedRowBytes(type, in);
        std::vector<std::byte>& buffer = m_prepared[format];
        if (std::int64_t(buffer.size()) < rowBytes * rows)
            buffer.resize(std::size_t(rowBytes * rows));
        pool.parallelFor(rows, 1, [&](std::int64_t begin, std::int64_t end) {
            kernels::prepareActivations(type, x + begin * in, in, end - begin, in,
                                        buffer.data() + begin * rowBytes);
        });
        prepared[format] = buffer.data();
    }
    // One pass over the concatenated output columns; grains of 16 keep each thread's share of y
    // whole cache lines.
    pool.parallelFor(totalOut, 16, [&](std::int64_t begin, std::int64_t end) {
        std::int64_t offset = 0;
        for (const Projection& p : projections) {
            const Linear& w = *p.weights;
            const std::int64_t from = std::max(begin - offset, std::int64_t(0));
            const std::int64_t to = std::min(end - offset, w.out);
            offset += w.out;
            if (from >= to) continue;
            const std::byte* xq = prepared[std::size_t(kernels::activationFormat(w.type))];
            // Packed groups are 16 rows; a range that starts inside one (after a projection whose
            // size is not a multiple of 16) takes the file's layout.
            if (w.packed != nullptr && from % 16 == 0) {
                kernels::matmulPacked(w.type, w.packed, w.in, xq, rows, p.y, w.out, from, to);
            } else {
                kernels::matmul(w.type, w.data, w.in, xq, rows, p.y, w.out, from, to);
            }
            if (w.bias == nullptr) continue;
            for (std::int64_t r = 0; r < rows; ++r) {
                for (std::int64_t n = from; n < to; ++n)
                    p.y[r * w.out + n] += w.bias[n];
            }
        }
    });
}

void DecoderModel::ropeTables(std::span<const TokenInput> batch) {
    const int pairs = m_config.ropeDims / 2;
    float* cos = resized(m_cos, std::int64_t(batch.size()) * pairs);
    float* sin = resized(m_sin, std::int64_t(batch.size()) * pairs);
    for (std::size_t t = 0; t < batch.size(); ++t) {
        int section = 0, sectionEnd = m_config.ropeSections[0];
        for (int i = 0; i < pairs; ++i) {
            int component = 0;
            if (m_config.multimodalRope) {
                while (i >= sectionEnd && section < 3)
                    sectionEnd += m_config.ropeSections[std::size_t(++section)];
                component = section;
            }
            const double theta =
                double(batch[t].position[std::size_t(component)]) *
                std::pow(double(m_config.ropeBase), -2.0 * i / double(m_config.ropeDims));
            cos[t * std::size_t(pairs) + std::size_t(i)] = float(std::cos(theta));
            sin[t * std::size_t(pairs) + std::size_t(i)] = float(std::sin(theta));
        }
    }
}

Status DecoderModel::forward(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                             std::vector<float>& logits) {
    const ModelConfig& c = m_config;
    const std::int64_t T = std::int64_t(batch.size()), D = c.hiddenSize, H = c.heads, G = c.kvHeads,
                       hd = c.headDim, F = c.ffnSize;
    if (T == 0) return {};
    for (const TokenInput& in : batch) {
        if (in.embedding == nullptr && (in.token < 0 || in.token >= c.vocabSize)) {
            return Status::invalidArgument("token id " + std::to_string(in.token) +
                                           " is outside the vocabulary (" +
                                           std::to_string(c.vocabSize) + " tokens)");
        }
        if (!cache.exists(in.sequence) || in.slot < 0 || in.slot >= cache.length(in.sequence)) {
            return Status::invalidArgument("KV slot " + std::to_string(in.slot) + " of sequence " +
                                           std::to_string(in.sequence) + " was not reserved");
        }
    }

    // Embedding rows, dequantised; an injected vector (an image token) replaces its row.
    float* x = resized(m_x, T * D);
    const GgufTensor& embedding = *m_weights.tokenEmbedding;
    const std::int64_t embeddingRowBytes = kernels::rowBytes(embedding.type, D);
    for (std::int64_t t = 0; t < T; ++t) {
        if (const float* injected = batch[std::size_t(t)].embedding) {
            std::copy(injected, injected + D, x + t * D);
            continue;
        }
        kernels::dequantizeRow(
            embedding.type, embedding.data.data() + batch[std::size_t(t)].token * embeddingRowBytes,
            x + t * D, D);
    }
    ropeTables(batch);

    float* norm = resized(m_norm, T * D);
    float* q = resized(m_q, T * H * hd);
    float* k = resized(m_k, T * G * hd);
    float* v = resized(m_v, T * G * hd);
    float* attn = resized(m_attn, T * H * hd);
    float* gate = resized(m_gate, T * F);
    float* up = resized(m_up, T * F);
    const float scale = 1.0f / std::sqrt(float(hd));
    const bool f16Cache = cache.options().type == kernels::TensorType::F16;
    std::int64_t longest = 0;
    for (const TokenInput& in : batch)
        longest = std::max(longest, in.slot + 1);

    for (std::size_t l = 0; l < m_weights.layers.size(); ++l) {
        const DecoderLayer& layer = m_weights.layers[l];
        const int li = int(l);

        // Attention block.
        kernels::rmsNorm(x, D, layer.attnNorm, norm, D, T, D, c.rmsEps);
        linear({{&layer.q, q}, {&layer.k, k}, {&layer.v, v}}, norm, T, pool);
        if (layer.qNorm != nullptr)
            kernels::rmsNorm(q, hd, layer.qNorm, q, hd, T * H, hd, c.rmsEps);
        if (layer.kNorm != nullptr)
            kernels::rmsNorm(k, hd, layer.kNorm, k, hd, T * G, hd, c.rmsEps);
        const int pairs = c.ropeDims / 2;
        for (std::int64_t t = 0; t < T; ++t) {
            const float* cos = m_cos.data() + t * pairs;
            const float* sin = m_sin.data() + t * pairs;
            kernels::ropeNeox(q + t * H * hd, int(H), int(hd), c.ropeDims, cos, sin);
            kernels::ropeNeox(k + t * G * hd, int(G), int(hd), c.ropeDims, cos, sin);
            const TokenInput& in = batch[std::size_t(t)];
            void* keySlot = cache.keySlot(li, in.sequence, in.slot);
            void* valueSlot = cache.valueSlot(li, in.sequence, in.slot);
            if (f16Cache) {
                auto* kd = static_cast<std::uint16_t*>(keySlot);
                auto* vd = static_cast<std::uint16_t*>(valueSlot);
                for (std::int64_t i = 0; i < G * hd; ++i) {
                    kd[i] = kernels::fp32ToFp16(k[t * G * hd + i]);
                    vd[i] = kernels::fp32ToFp16(v[t * G * hd + i]);
                }
            } else {
                std::memcpy(keySlot, k + t * G * hd, std::size_t(G * hd) * sizeof(float));
                std::memcpy(valueSlot, v + t * G * hd, std::size_t(G * hd) * sizeof(float));
            }
        }
        // Every (token, KV group) pair is independent once all of the batch's K/V are written;
        // the group's query heads go together so its K and V rows are read once.
        const std::int64_t group = H / G;
        pool.parallelFor(T * G, 1, [&](std::int64_t begin, std::int64_t end) {
            std::vector<float> scores(std::size_t(group * longest), 0.0f);
            for (std::int64_t item = begin; item < end; ++item) {
                const std::int64_t t = item / G;
                const int g = int(item % G);
                const TokenInput& in = batch[std::size_t(t)];
                const kernels::PagedKv kv{cache.keys(li),
                                          cache.values(li),
                                          cache.blockTable(in.sequence).data(),
                                          cache.options().blockSize,
                                          int(G),
                                          int(hd),
                                          cache.options().type};
                kernels::attendPaged(q + t * H * hd, int(H), kv, in.slot + 1, scale,
                                     attn + t * H * hd, scores.data(), int(g * group),
                                     int((g + 1) * group));
            }
        });
        linear(layer.o, attn, T, norm, pool);  // norm is free here: reuse it for the projection
        for (std::int64_t i = 0; i < T * D; ++i)
            x[i] += norm[i];

        // Feed-forward block.
        kernels::rmsNorm(x, D, layer.ffnNorm, norm, D, T, D, c.rmsEps);
        linear({{&layer.gate, gate}, {&layer.up, up}}, norm, T, pool);
        kernels::swiglu(gate, up, gate, T * F);
        linear(layer.down, gate, T, norm, pool);
        for (std::int64_t i = 0; i < T * D; ++i)
            x[i] += norm[i];
    }

    // Logits for the rows that want them.
    std::vector<std::int64_t> rows;
    for (std::int64_t t = 0; t < T; ++t) {
        if (batch[std::size_t(t)].wantLogits) rows.push_back(t);
    }
    if (rows.empty()) return {};
    float* selected = resized(m_rows, std::int64_t(rows.size()) * D);
    for (std::size_t r = 0; r < rows.size(); ++r) {
        kernels::rmsNorm(x + rows[r] * D, D, m_weights.outputNorm, selected + std::int64_t(r) * D,
                         D, 1, D, c.rmsEps);
    }
    const std::size_t offset = logits.size();
    logits.resize(offset + rows.size() * std::size_t(c.vocabSize));
    linear(m_weights.output, selected, std::int64_t(rows.size()), logits.data() + offset, pool);
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
    const GgufTensor* embedding = file.findTensor("token_embd.weight");
    if (embedding == nullptr)
        return Status::notFound(file.name() + ": missing tensor 'token_embd.weight'");
    if (embedding->shape.size() != 2 || embedding->shape[0] != c.hiddenSize) {
        return Status::corrupt(file.name() + ": tensor 'token_embd.weight' has shape " +
                               shapeText(embedding->shape) + ", expected " +
                               std::to_string(c.hiddenSize) + " x vocabulary");
    }
    c.vocabSize = embedding->shape[1];
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
        w.output = Linear{(*embedding)->type, (*embedding)->data.data(), c.hiddenSize, c.vocabSize,
                          nullptr};
    }
    const std::int64_t qSize = c.heads * c.headDim, kvSize = c.kvHeads * c.headDim;
    for (std::int64_t i = 0; i < c.layers; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        DecoderLayer layer;
        const auto assign = [](auto& target, auto result) -> Status {
            if (!result) return result.status();
            target = *result;
            return {};
        };
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
