#include "tests/inference/models/tiny_model.h"

#include <cmath>
#include <random>
#include <stdexcept>

#include "inference/gguf/gguf_writer.h"
#include "inference/tokenizer/byte_level.h"
#include "kernels/quant.h"

namespace iris::inference::testing {
namespace {

using kernels::TensorType;

class Maker {
public:
    Maker(const TinyModelSpec& spec) : m_spec(spec), m_rng(spec.seed) {}

    std::vector<float> random(std::int64_t n, float scale) {
        std::normal_distribution<float> normal(0.0f, scale);
        std::vector<float> v(std::size_t(n), 0.0f);
        for (float& x : v)
            x = normal(m_rng);
        return v;
    }

    void matrix(GgufWriter& w, const std::string& name, std::int64_t in, std::int64_t out) {
        const std::vector<float> values = random(in * out, m_spec.weightScale);
        const TensorType type = m_spec.weightType;
        std::vector<std::byte> bytes(std::size_t(kernels::rowBytes(type, in) * out));
        for (std::int64_t r = 0; r < out; ++r) {
            kernels::quantizeRow(type, values.data() + r * in,
                                 bytes.data() + r * kernels::rowBytes(type, in), in);
        }
        if (!w.addTensor(name, type, {in, out}, bytes).isOk())
            throw std::runtime_error("addTensor " + name);
    }

    void vector(GgufWriter& w, const std::string& name, std::int64_t n, float mean, float scale) {
        std::vector<float> values = random(n, scale);
        for (float& v : values)
            v += mean;
        if (!w.addTensor(name, {n}, values).isOk()) throw std::runtime_error("addTensor " + name);
    }

private:
    const TinyModelSpec& m_spec;
    std::mt19937 m_rng;
};

}  // namespace

TinyModelSpec tinyQwen2VlSpec() {
    TinyModelSpec spec;
    spec.arch = "qwen2vl";
    spec.vocab = 288;
    spec.withTokenizer = true;
    spec.withVisionTokens = true;
    spec.weightScale = 0.5f;
    spec.seed = 5;
    return spec;
}

std::vector<std::byte> makeTinyModel(const TinyModelSpec& s) {
    GgufWriter w;
    const std::string a = s.arch;
    w.set("general.architecture", a);
    w.set("general.name", std::string("tiny-") + a);
    w.set(a + ".block_count", std::uint32_t(s.layers));
    w.set(a + ".context_length", std::uint32_t(4096));
    w.set(a + ".embedding_length", std::uint32_t(s.hidden));
    w.set(a + ".feed_forward_length", std::uint32_t(s.ffn));
    w.set(a + ".attention.head_count", std::uint32_t(s.heads));
    w.set(a + ".attention.head_count_kv", std::uint32_t(s.kvHeads));
    w.set(a + ".rope.freq_base", s.ropeBase);
    w.set(a + ".attention.layer_norm_rms_epsilon", s.rmsEps);
    if (a == "qwen3") {
        w.set(a + ".attention.key_length", std::uint32_t(s.headDim));
        w.set(a + ".attention.value_length", std::uint32_t(s.headDim));
    }
    if (a == "qwen2vl") {
        w.set(a + ".rope.dimension_sections",
              GgufArray{std::vector<std::int32_t>{s.sections[0], s.sections[1], s.sections[2],
                                                  s.sections[3]}});
    }
    if (s.withTokenizer) {
        std::vector<std::string> tokens;
        std::vector<std::int32_t> types;
        for (int byte = 0; byte < 256; ++byte) {
            tokens.push_back(byte_level::encode(std::string(1, static_cast<char>(byte))));
            types.push_back(1);
        }
        for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
            tokens.emplace_back(special);
            types.push_back(s.endless ? 4 : 3);  // user-defined tokens never end a generation
        }
        if (s.withVisionTokens) {
            for (const char* special : {"<|vision_start|>", "<|vision_end|>", "<|image_pad|>"}) {
                tokens.emplace_back(special);
                types.push_back(3);
            }
        }
        while (std::int64_t(tokens.size()) < s.vocab) {
            tokens.push_back("[PAD" + std::to_string(tokens.size()) + "]");
            types.push_back(5);
        }
        w.set("tokenizer.ggml.model", std::string("gpt2"));
        w.set("tokenizer.ggml.pre", std::string("qwen2"));
        w.set("tokenizer.ggml.tokens", GgufArray{tokens});
        w.set("tokenizer.ggml.token_type", GgufArray{types});
        w.set("tokenizer.ggml.merges", GgufArray{std::vector<std::string>{}});
        if (!s.endless) w.set("tokenizer.ggml.eos_token_id", std::uint32_t(kTinyImEnd));
        w.set("tokenizer.ggml.padding_token_id", std::uint32_t(kTinyEndOfText));
    }
    Maker m(s);
    const std::int64_t q = s.heads * s.headDim, kv = s.kvHeads * s.headDim;
    m.matrix(w, "token_embd.weight", s.hidden, s.vocab);
    m.vector(w, "output_norm.weight", s.hidden, 1.0f, 0.1f);
    if (!s.tiedEmbeddings) m.matrix(w, "output.weight", s.hidden, s.vocab);
    for (std::int64_t i = 0; i < s.layers; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        m.vector(w, p + "attn_norm.weight", s.hidden, 1.0f, 0.1f);
        m.matrix(w, p + "attn_q.weight", s.hidden, q);
        m.matrix(w, p + "attn_k.weight", s.hidden, kv);
        m.matrix(w, p + "attn_v.weight", s.hidden, kv);
        if (a != "qwen3") {
            m.vector(w, p + "attn_q.bias", q, 0.0f, 0.1f);
            m.vector(w, p + "attn_k.bias", kv, 0.0f, 0.1f);
            m.vector(w, p + "attn_v.bias", kv, 0.0f, 0.1f);
        } else {
            m.vector(w, p + "attn_q_norm.weight", s.headDim, 1.0f, 0.1f);
            m.vector(w, p + "attn_k_norm.weight", s.headDim, 1.0f, 0.1f);
        }
        m.matrix(w, p + "attn_output.weight", q, s.hidden);
        m.vector(w, p + "ffn_norm.weight", s.hidden, 1.0f, 0.1f);
        m.matrix(w, p + "ffn_gate.weight", s.hidden, s.ffn);
        m.matrix(w, p + "ffn_up.weight", s.hidden, s.ffn);
        m.matrix(w, p + "ffn_down.weight", s.ffn, s.hidden);
    }
    return w.serialize();
}

std::vector<std::array<std::int32_t, 4>> textPositions(std::size_t n, std::int32_t start) {
    std::vector<std::array<std::int32_t, 4>> positions(n);
    for (std::size_t i = 0; i < n; ++i)
        positions[i].fill(start + std::int32_t(i));
    return positions;
}

// ---- float64 reference ------------------------------------------------------------------------

namespace {

using Matrix = std::vector<double>;  // row-major

struct Reference {
    const GgufFile& file;
    std::string arch;

    std::int64_t integer(const std::string& key) const {
        return *file.getInteger(arch + "." + key);
    }

    // Tensor as doubles, with its ggml shape (ne0 = row length).
    Matrix tensor(const std::string& name, std::int64_t& rows, std::int64_t& cols) const {
        const GgufTensor* t = file.findTensor(name);
        if (t == nullptr) throw std::runtime_error("reference: missing " + name);
        cols = t->shape[0];
        rows = t->elements() / cols;
        std::vector<float> row(std::size_t(cols), 0.0f);
        Matrix m(std::size_t(rows * cols));
        const std::int64_t rowBytes = kernels::rowBytes(t->type, cols);
        for (std::int64_t r = 0; r < rows; ++r) {
            kernels::dequantizeRow(t->type, t->data.data() + r * rowBytes, row.data(), cols);
            for (std::int64_t c = 0; c < cols; ++c)
                m[std::size_t(r * cols + c)] = row[std::size_t(c)];
        }
        return m;
    }
    Matrix tensor(const std::string& name) const {
        std::int64_t r, c;
        return tensor(name, r, c);
    }
    bool has(const std::string& name) const { return file.findTensor(name) != nullptr; }
};

// y = W x (+ b): W is (out x in) as stored (rows of length in).
std::vector<double> apply(const Matrix& w, std::int64_t in, const std::vector<double>& x,
                          const Matrix* bias) {
    const std::int64_t out = std::int64_t(w.size()) / in;
    std::vector<double> y(std::size_t(out), 0.0);
    for (std::int64_t o = 0; o < out; ++o) {
        double s = 0;
        for (std::int64_t i = 0; i < in; ++i)
            s += w[std::size_t(o * in + i)] * x[std::size_t(i)];
        y[std::size_t(o)] = s + (bias ? (*bias)[std::size_t(o)] : 0.0);
    }
    return y;
}

std::vector<double> rmsNorm(const std::vector<double>& x, const Matrix& w, double eps,
                            std::size_t offset = 0, std::size_t n = 0) {
    if (n == 0) n = x.size();
    std::vector<double> y(x);
    double ss = 0;
    for (std::size_t i = 0; i < n; ++i)
        ss += x[offset + i] * x[offset + i];
    const double scale = 1.0 / std::sqrt(ss / double(n) + eps);
    for (std::size_t i = 0; i < n; ++i)
        y[offset + i] = x[offset + i] * scale * w[i];
    return y;
}

// NEOX rotation of one head in place: pair i = (i, i + d/2), angle from the position component
// that owns pair i (M-RoPE sections) or position t.
void rotate(double* v, std::int64_t d, const std::array<std::int32_t, 4>& pos,
            const std::array<int, 4>* sections, double base) {
    const std::int64_t half = d / 2;
    for (std::int64_t i = 0; i < half; ++i) {
        int component = 0;
        if (sections != nullptr) {
            int bound = 0;
            for (component = 0; component < 4; ++component) {
                bound += (*sections)[std::size_t(component)];
                if (i < bound) break;
            }
        }
        const double theta =
            double(pos[std::size_t(component)]) * std::pow(base, -2.0 * double(i) / double(d));
        const double a = v[i], b = v[i + half];
        v[i] = a * std::cos(theta) - b * std::sin(theta);
        v[i + half] = a * std::sin(theta) + b * std::cos(theta);
    }
}

}  // namespace

std::vector<double> referenceLogits(const GgufFile& file, const std::vector<std::int32_t>& tokens,
                                    const std::vector<std::array<std::int32_t, 4>>& positions) {
    return referenceLogits(file, tokens, positions,
                           std::vector<const float*>(tokens.size(), nullptr));
}

std::vector<double> referenceLogits(const GgufFile& file, const std::vector<std::int32_t>& tokens,
                                    const std::vector<std::array<std::int32_t, 4>>& positions,
                                    const std::vector<const float*>& embeddings) {
    const Reference ref{file, *file.getString("general.architecture")};
    const std::int64_t L = ref.integer("block_count"), D = ref.integer("embedding_length"),
                       H = ref.integer("attention.head_count"),
                       G = ref.integer("attention.head_count_kv");
    const std::int64_t hd =
        file.find(ref.arch + ".attention.key_length") ? ref.integer("attention.key_length") : D / H;
    const double eps = *file.getFloat(ref.arch + ".attention.layer_norm_rms_epsilon");
    const double base = *file.getFloat(ref.arch + ".rope.freq_base");
    std::array<int, 4> sections{};
    const bool mrope = ref.arch == "qwen2vl";
    if (mrope) {
        const auto& v = std::get<std::vector<std::int32_t>>(
            (*file.getArray(ref.arch + ".rope.dimension_sections"))->elements);
        for (std::size_t i = 0; i < 4; ++i)
            sections[i] = v[i];
    }
    std::int64_t vocab, dummy;
    const Matrix embedding = ref.tensor("token_embd.weight", vocab, dummy);
    const std::size_t T = tokens.size();

    std::vector<std::vector<double>> x(T);
    for (std::size_t t = 0; t < T; ++t) {
        if (embeddings[t] != nullptr) {
            x[t].assign(embeddings[t], embeddings[t] + D);
            continue;
        }
        x[t].assign(embedding.begin() + tokens[t] * D, embedding.begin() + (tokens[t] + 1) * D);
    }
    for (std::int64_t l = 0; l < L; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        const Matrix attnNorm = ref.tensor(p + "attn_norm.weight"),
                     wq = ref.tensor(p + "attn_q.weight"), wk = ref.tensor(p + "attn_k.weight"),
                     wv = ref.tensor(p + "attn_v.weight"),
                     wo = ref.tensor(p + "attn_output.weight"),
                     ffnNorm = ref.tensor(p + "ffn_norm.weight"),
                     wg = ref.tensor(p + "ffn_gate.weight"), wu = ref.tensor(p + "ffn_up.weight"),
                     wd = ref.tensor(p + "ffn_down.weight");
        const bool bias = ref.has(p + "attn_q.bias");
        Matrix bq, bk, bv, qn, kn;
        if (bias) {
            bq = ref.tensor(p + "attn_q.bias");
            bk = ref.tensor(p + "attn_k.bias");
            bv = ref.tensor(p + "attn_v.bias");
        }
        const bool qkNorm = ref.has(p + "attn_q_norm.weight");
        if (qkNorm) {
            qn = ref.tensor(p + "attn_q_norm.weight");
            kn = ref.tensor(p + "attn_k_norm.weight");
        }

        std::vector<std::vector<double>> q(T), k(T), v(T);
        for (std::size_t t = 0; t < T; ++t) {
            const std::vector<double> a = rmsNorm(x[t], attnNorm, eps);
            q[t] = apply(wq, D, a, bias ? &bq : nullptr);
            k[t] = apply(wk, D, a, bias ? &bk : nullptr);
            v[t] = apply(wv, D, a, bias ? &bv : nullptr);
            for (std::int64_t h = 0; h < H; ++h) {
                if (qkNorm) q[t] = rmsNorm(q[t], qn, eps, std::size_t(h * hd), std::size_t(hd));
                rotate(q[t].data() + h * hd, hd, positions[t], mrope ? &sections : nullptr, base);
            }
            for (std::int64_t g = 0; g < G; ++g) {
                if (qkNorm) k[t] = rmsNorm(k[t], kn, eps, std::size_t(g * hd), std::size_t(hd));
                rotate(k[t].data() + g * hd, hd, positions[t], mrope ? &sections : nullptr, base);
            }
        }
        for (std::size_t t = 0; t < T; ++t) {
            std::vector<double> o(std::size_t(H * hd), 0.0);
            for (std::int64_t h = 0; h < H; ++h) {
                const std::int64_t g = h / (H / G);
                std::vector<double> w(t + 1);
                double max = -1e300;
                for (std::size_t s = 0; s <= t; ++s) {
                    double dot = 0;
                    for (std::int64_t i = 0; i < hd; ++i)
                        dot += q[t][std::size_t(h * hd + i)] * k[s][std::size_t(g * hd + i)];
                    w[s] = dot / std::sqrt(double(hd));
                    max = std::max(max, w[s]);
                }
                double sum = 0;
                for (double& e : w)
                    sum += (e = std::exp(e - max));
                for (std::size_t s = 0; s <= t; ++s) {
                    for (std::int64_t i = 0; i < hd; ++i)
                        o[std::size_t(h * hd + i)] += w[s] / sum * v[s][std::size_t(g * hd + i)];
                }
            }
            const std::vector<double> projected = apply(wo, H * hd, o, nullptr);
            for (std::int64_t i = 0; i < D; ++i)
                x[t][std::size_t(i)] += projected[std::size_t(i)];
            const std::vector<double> f = rmsNorm(x[t], ffnNorm, eps);
            const std::vector<double> gate = apply(wg, D, f, nullptr),
                                      up = apply(wu, D, f, nullptr);
            std::vector<double> hidden(gate.size());
            for (std::size_t i = 0; i < gate.size(); ++i)
                hidden[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
            const std::vector<double> down = apply(wd, std::int64_t(gate.size()), hidden, nullptr);
            for (std::int64_t i = 0; i < D; ++i)
                x[t][std::size_t(i)] += down[std::size_t(i)];
        }
    }
    const Matrix outputNorm = ref.tensor("output_norm.weight");
    const Matrix output = ref.has("output.weight") ? ref.tensor("output.weight") : embedding;
    std::vector<double> logits;
    for (std::size_t t = 0; t < T; ++t) {
        const std::vector<double> row = apply(output, D, rmsNorm(x[t], outputNorm, eps), nullptr);
        logits.insert(logits.end(), row.begin(), row.end());
    }
    return logits;
}

}  // namespace iris::inference::testing
