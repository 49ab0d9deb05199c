#include "tests/inference/models/minimax_m3_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>

#include "inference/gguf/gguf_writer.h"

namespace iris::inference::testing {
namespace {

// ---- writer -----------------------------------------------------------------------------------

class Writer {
public:
    Writer(GgufWriter& w, unsigned seed) : m_w(w), m_rng(seed) {}

    void random(const std::string& name, std::vector<std::int64_t> shape, float scale,
                float offset = 0.0f) {
        std::int64_t n = 1;
        for (std::int64_t d : shape)
            n *= d;
        std::vector<float> values(static_cast<std::size_t>(n));
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (float& v : values)
            v = offset + scale * normal(m_rng);
        add(name, std::move(shape), values);
    }
    void add(const std::string& name, std::vector<std::int64_t> shape,
             const std::vector<float>& values) {
        if (!m_w.addTensor(name, std::move(shape), values).isOk())
            throw std::runtime_error("addTensor " + name);
    }
    std::mt19937& rng() { return m_rng; }

private:
    GgufWriter& m_w;
    std::mt19937 m_rng;
};

}  // namespace

std::vector<std::byte> makeM3Model(const M3Spec& s) {
    GgufWriter w;
    const std::string a = "minimax-m3.";
    w.set("general.architecture", std::string("minimax-m3"));
    w.set("general.name", std::string("tiny-minimax-m3"));
    w.set(a + "context_length", std::uint32_t(8192));
    w.set(a + "embedding_length", std::uint32_t(s.hidden));
    w.set(a + "block_count", std::uint32_t(s.layers));
    w.set(a + "leading_dense_block_count", std::uint32_t(s.leadingDense));
    w.set(a + "feed_forward_length", std::uint32_t(s.ffn));
    w.set(a + "expert_feed_forward_length", std::uint32_t(s.expertFfn));
    w.set(a + "expert_count", std::uint32_t(s.experts));
    w.set(a + "expert_used_count", std::uint32_t(s.expertsUsed));
    w.set(a + "expert_shared_count", std::uint32_t(s.sharedExperts));
    w.set(a + "expert_gating_func", std::uint32_t(s.gatingFunc));
    w.set(a + "expert_weights_norm", true);
    w.set(a + "expert_weights_scale", s.routedScale);
    w.set(a + "attention.head_count", std::uint32_t(s.heads));
    w.set(a + "attention.head_count_kv", std::uint32_t(s.kvHeads));
    w.set(a + "attention.key_length", std::uint32_t(s.headDim));
    w.set(a + "attention.value_length", std::uint32_t(s.headDim));
    w.set(a + "attention.layer_norm_rms_epsilon", s.rmsEps);
    w.set(a + "rope.dimension_count", std::uint32_t(s.ropeDims));
    w.set(a + "rope.freq_base", s.ropeBase);
    if (s.writeIndexer) {
        w.set(a + "attention.indexer.head_count", std::uint32_t(s.indexHeads));
        w.set(a + "attention.indexer.key_length", std::uint32_t(s.indexDim));
        w.set(a + "attention.indexer.top_k", std::uint32_t(s.topK));
        w.set(a + "attention.indexer.block_size", std::uint32_t(s.blockSize));
        w.set(a + "attention.indexer.local_blocks", std::uint32_t(s.localBlocks));
    }
    Writer t(w, s.seed);
    const std::int64_t E = s.hidden, q = s.heads * s.headDim, kv = s.kvHeads * s.headDim;
    const float ws = s.weightScale;
    t.random("token_embd.weight", {E, s.vocab}, 1.0f);
    t.random("output_norm.weight", {E}, 0.1f, 1.0f);
    t.random("output.weight", {E, s.vocab}, ws);
    for (std::int64_t l = 0; l < s.layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        t.random(p + "attn_norm.weight", {E}, 0.1f, 1.0f);
        t.random(p + "attn_q.weight", {E, q}, ws);
        t.random(p + "attn_k.weight", {E, kv}, ws);
        t.random(p + "attn_v.weight", {E, kv}, ws);
        t.random(p + "attn_q_norm.weight", {s.headDim}, 0.1f, 1.0f);
        t.random(p + "attn_k_norm.weight", {s.headDim}, 0.1f, 1.0f);
        t.random(p + "attn_output.weight", {q, E}, ws);
        t.random(p + "ffn_norm.weight", {E}, 0.1f, 1.0f);
        if (l < s.leadingDense) {
            t.random(p + "ffn_gate.weight", {E, s.ffn}, ws);
            t.random(p + "ffn_up.weight", {E, s.ffn}, ws);
            t.random(p + "ffn_down.weight", {s.ffn, E}, ws);
            continue;
        }
        t.random(p + "ffn_gate_inp.weight", {E, s.experts}, 0.3f);
        std::vector<float> bias(std::size_t(s.experts));
        std::uniform_real_distribution<float> uniform(-0.1f, 0.1f);
        for (float& b : bias)
            b = uniform(t.rng());
        if (s.biasedExpert >= 0) bias[std::size_t(s.biasedExpert)] = 10.0f;
        t.add(p + "exp_probs_b.bias", {s.experts}, bias);
        // Larger expert weights so that swigluoai's clamps at +-7 are reached by some values.
        t.random(p + "ffn_gate_exps.weight", {E, s.expertFfn, s.experts}, 1.2f);
        t.random(p + "ffn_up_exps.weight", {E, s.expertFfn, s.experts}, 1.2f);
        t.random(p + "ffn_down_exps.weight", {s.expertFfn, E, s.experts}, ws);
        const std::int64_t shared = s.expertFfn * s.sharedExperts;
        t.random(p + "ffn_gate_shexp.weight", {E, shared}, ws);
        t.random(p + "ffn_up_shexp.weight", {E, shared}, ws);
        t.random(p + "ffn_down_shexp.weight", {shared, E}, ws);
        t.random(p + "indexer.q_proj.weight", {E, s.indexHeads * s.indexDim}, s.indexScale);
        t.random(p + "indexer.k_proj.weight", {E, s.indexDim}, s.indexScale);
        t.random(p + "indexer.q_norm.weight", {s.indexDim}, 0.1f, 1.0f);
        t.random(p + "indexer.k_norm.weight", {s.indexDim}, 0.1f, 1.0f);
    }
    return w.serialize();
}

// ---- reference --------------------------------------------------------------------------------

namespace {

using Vec = std::vector<double>;

struct Ref {
    const GgufFile& file;
    std::string a = "minimax-m3.";

    std::int64_t integer(const std::string& k) const {
        Result<std::int64_t> v = file.getInteger(a + k);
        if (!v) throw std::runtime_error(v.status().message());
        return *v;
    }
    double real(const std::string& k) const {
        Result<double> v = file.getFloat(a + k);
        if (!v) throw std::runtime_error(v.status().message());
        return *v;
    }
    Vec tensor(const std::string& name) const {
        const GgufTensor* t = file.findTensor(name);
        if (t == nullptr) throw std::runtime_error("no tensor " + name);
        const auto* f = reinterpret_cast<const float*>(t->data.data());
        return Vec(f, f + t->elements());
    }
};

// y = W x, W rows of `in` values starting at row `first`.
Vec apply(const Vec& w, const Vec& x, std::int64_t out, std::int64_t first = 0) {
    const std::int64_t in = std::int64_t(x.size());
    Vec y(std::size_t(out), 0.0);
    for (std::int64_t o = 0; o < out; ++o) {
        double s = 0;
        const double* row = w.data() + (first + o) * in;
        for (std::int64_t i = 0; i < in; ++i)
            s += row[i] * x[std::size_t(i)];
        y[std::size_t(o)] = s;
    }
    return y;
}

// RMSNorm of each `width` slice of x with the same weight.
void rmsNorm(Vec& x, const Vec& w, double eps, std::size_t width) {
    for (std::size_t begin = 0; begin < x.size(); begin += width) {
        double ss = 0;
        for (std::size_t i = 0; i < width; ++i)
            ss += x[begin + i] * x[begin + i];
        const double inv = 1.0 / std::sqrt(ss / double(width) + eps);
        for (std::size_t i = 0; i < width; ++i)
            x[begin + i] *= inv * w[i];
    }
}

// NEOX rotation of the first `dims` values of each `width` slice; pairs (i, i + dims/2).
void rope(Vec& x, std::size_t width, std::int64_t dims, double base, double position) {
    const std::int64_t half = dims / 2;
    for (std::size_t begin = 0; begin < x.size(); begin += width) {
        for (std::int64_t i = 0; i < half; ++i) {
            const double theta = position * std::pow(base, -2.0 * double(i) / double(dims));
            double& x0 = x[begin + std::size_t(i)];
            double& x1 = x[begin + std::size_t(i + half)];
            const double a = x0, b = x1;
            x0 = a * std::cos(theta) - b * std::sin(theta);
            x1 = a * std::sin(theta) + b * std::cos(theta);
        }
    }
}

double swigluOai(double g, double u) {
    g = std::min(g, 7.0);
    u = std::clamp(u, -7.0, 7.0);
    return g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0);
}

// down(swigluoai(gate x, up x)) for matrices at expert offset `e` (rows e*width.. of the stacks).
Vec ffn(const Vec& gate, const Vec& up, const Vec& down, const Vec& x, std::int64_t width,
        std::int64_t hidden, std::int64_t e = 0) {
    const Vec g = apply(gate, x, width, e * width), u = apply(up, x, width, e * width);
    Vec act(static_cast<std::size_t>(width));
    for (std::size_t i = 0; i < act.size(); ++i)
        act[i] = swigluOai(g[i], u[i]);
    return apply(down, act, hidden, e * hidden);
}

}  // namespace

std::vector<double> m3ReferenceLogits(const GgufFile& file, const std::vector<std::int32_t>& tokens,
                                      const M3ReferenceOptions& options, M3ReferenceTrace* trace,
                                      std::vector<std::string>* badTies) {
    const Ref r{file};
    const std::int64_t L = r.integer("block_count"), E = r.integer("embedding_length"),
                       H = r.integer("attention.head_count"),
                       G = r.integer("attention.head_count_kv"),
                       hd = r.integer("attention.key_length"),
                       rot = r.integer("rope.dimension_count"),
                       lead = r.integer("leading_dense_block_count"),
                       F = r.integer("feed_forward_length");
    const double eps = r.real("attention.layer_norm_rms_epsilon"), base = r.real("rope.freq_base");
    const std::int64_t n = std::int64_t(tokens.size());
    const Vec embedding = r.tensor("token_embd.weight");
    const std::int64_t vocab = std::int64_t(embedding.size()) / E;
    std::vector<Vec> h(static_cast<std::size_t>(n));
    for (std::int64_t t = 0; t < n; ++t)
        h[std::size_t(t)] = Vec(embedding.begin() + tokens[std::size_t(t)] * E,
                                embedding.begin() + (tokens[std::size_t(t)] + 1) * E);
    if (trace != nullptr) {
        trace->experts.assign(std::size_t(L), {});
        trace->weights.assign(std::size_t(L), {});
        trace->blocks.assign(std::size_t(L), {});
        trace->tiesResolved = 0;
    }
    const std::int64_t group = H / G;
    for (std::int64_t l = 0; l < L; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        const bool sparseLayer = l >= lead;
        const bool msa = sparseLayer && !options.dense;
        const Vec attnNorm = r.tensor(p + "attn_norm.weight"), wq = r.tensor(p + "attn_q.weight"),
                  wk = r.tensor(p + "attn_k.weight"), wv = r.tensor(p + "attn_v.weight"),
                  wo = r.tensor(p + "attn_output.weight"),
                  qNorm = r.tensor(p + "attn_q_norm.weight"),
                  kNorm = r.tensor(p + "attn_k_norm.weight"),
                  ffnNorm = r.tensor(p + "ffn_norm.weight");
        std::vector<Vec> q(static_cast<std::size_t>(n)), k(static_cast<std::size_t>(n)),
            v(static_cast<std::size_t>(n)), iq(static_cast<std::size_t>(n)),
            ik(static_cast<std::size_t>(n));
        std::int64_t Di = 0;
        Vec wiq, wik, iqNorm, ikNorm;
        if (sparseLayer) {
            Di = r.integer("attention.indexer.key_length");
            wiq = r.tensor(p + "indexer.q_proj.weight");
            wik = r.tensor(p + "indexer.k_proj.weight");
            iqNorm = r.tensor(p + "indexer.q_norm.weight");
            ikNorm = r.tensor(p + "indexer.k_norm.weight");
        }
        for (std::int64_t t = 0; t < n; ++t) {
            Vec x = h[std::size_t(t)];
            rmsNorm(x, attnNorm, eps, static_cast<std::size_t>(E));
            Vec& qt = q[std::size_t(t)];
            Vec& kt = k[std::size_t(t)];
            qt = apply(wq, x, H * hd);
            kt = apply(wk, x, G * hd);
            v[std::size_t(t)] = apply(wv, x, G * hd);
            rmsNorm(qt, qNorm, eps, static_cast<std::size_t>(hd));
            rmsNorm(kt, kNorm, eps, static_cast<std::size_t>(hd));
            rope(qt, std::size_t(hd), rot, base, double(t));
            rope(kt, std::size_t(hd), rot, base, double(t));
            if (sparseLayer) {
                iq[std::size_t(t)] = apply(wiq, x, G * Di);
                ik[std::size_t(t)] = apply(wik, x, Di);
                rmsNorm(iq[std::size_t(t)], iqNorm, eps, static_cast<std::size_t>(Di));
                rmsNorm(ik[std::size_t(t)], ikNorm, eps, static_cast<std::size_t>(Di));
                rope(iq[std::size_t(t)], std::size_t(Di), rot, base, double(t));
                rope(ik[std::size_t(t)], std::size_t(Di), rot, base, double(t));
            }
        }
        std::int64_t S = 0, topK = 0, local = 0;
        if (msa) {
            S = r.integer("attention.indexer.block_size");
            topK = r.integer("attention.indexer.top_k");
            local = r.integer("attention.indexer.local_blocks");
        }
        if (trace != nullptr && msa)
            trace->blocks[std::size_t(l)].assign(
                std::size_t(n),
                std::vector<std::vector<std::int32_t>>(static_cast<std::size_t>(G)));
        // Attention, then the residual.
        std::vector<Vec> hAttn(static_cast<std::size_t>(n));
        for (std::int64_t t = 0; t < n; ++t) {
            Vec att(std::size_t(H * hd), 0.0);
            for (std::int64_t g = 0; g < G; ++g) {
                // Which keys j <= t this group may see.
                std::vector<char> visible(std::size_t(t + 1), 1);
                if (msa) {
                    const std::int64_t blocks = t / S + 1;
                    Vec blockScore(std::size_t(blocks), -std::numeric_limits<double>::infinity());
                    for (std::int64_t j = 0; j <= t; ++j) {
                        double s = 0;
                        for (std::int64_t i = 0; i < Di; ++i)
                            s += iq[std::size_t(t)][std::size_t(g * Di + i)] *
                                 ik[std::size_t(j)][std::size_t(i)];
                        double& b = blockScore[std::size_t(j / S)];
                        b = std::max(b, s);
                    }
                    const auto forced = [&](std::int64_t b) { return b >= blocks - local; };
                    std::vector<std::int32_t> order(static_cast<std::size_t>(blocks));
                    std::iota(order.begin(), order.end(), 0);
                    std::stable_sort(
                        order.begin(), order.end(), [&](std::int32_t x, std::int32_t y) {
                            if (forced(x) != forced(y)) return forced(x);
                            return blockScore[std::size_t(x)] > blockScore[std::size_t(y)];
                        });
                    const std::int64_t K = std::min(topK, blocks);
                    std::vector<std::int32_t> chosen(order.begin(), order.begin() + K);
                    if (K < blocks && !forced(order[std::size_t(K - 1)]) &&
                        blockScore[std::size_t(order[std::size_t(K - 1)])] -
                                blockScore[std::size_t(order[std::size_t(K)])] <
                            options.tieTolerance &&
                        options.tieBreaker) {
                        std::vector<std::int32_t> other =
                            options.tieBreaker(int(l), int(t), int(g));
                        // Valid: K distinct blocks, the forced ones included, and no excluded
                        // block better than an included one by more than the tolerance.
                        bool valid = std::int64_t(other.size()) == K;
                        std::vector<char> in(std::size_t(blocks), 0);
                        for (std::int32_t b : other) {
                            if (b < 0 || b >= blocks || in[std::size_t(b)]) valid = false;
                            if (valid) in[std::size_t(b)] = 1;
                        }
                        double worstIn = std::numeric_limits<double>::infinity(),
                               bestOut = -std::numeric_limits<double>::infinity();
                        for (std::int64_t b = 0; valid && b < blocks; ++b) {
                            if (forced(b)) {
                                valid = in[std::size_t(b)] != 0;
                            } else if (in[std::size_t(b)]) {
                                worstIn = std::min(worstIn, blockScore[std::size_t(b)]);
                            } else {
                                bestOut = std::max(bestOut, blockScore[std::size_t(b)]);
                            }
                        }
                        if (valid && bestOut - worstIn < options.tieTolerance) {
                            chosen = other;
                            if (trace != nullptr) ++trace->tiesResolved;
                        } else if (badTies != nullptr) {
                            badTies->push_back("layer " + std::to_string(l) + " token " +
                                               std::to_string(t) + " group " + std::to_string(g));
                        }
                    }
                    std::sort(chosen.begin(), chosen.end());
                    std::fill(visible.begin(), visible.end(), 0);
                    for (std::int32_t b : chosen)
                        for (std::int64_t j = b * S; j < std::min(t + 1, (b + 1) * S); ++j)
                            visible[std::size_t(j)] = 1;
                    if (trace != nullptr)
                        trace->blocks[std::size_t(l)][std::size_t(t)][std::size_t(g)] = chosen;
                }
                for (std::int64_t hh = g * group; hh < (g + 1) * group; ++hh) {
                    Vec scores(std::size_t(t + 1), -std::numeric_limits<double>::infinity());
                    double max = -std::numeric_limits<double>::infinity();
                    for (std::int64_t j = 0; j <= t; ++j) {
                        if (!visible[std::size_t(j)]) continue;
                        double s = 0;
                        for (std::int64_t i = 0; i < hd; ++i)
                            s += q[std::size_t(t)][std::size_t(hh * hd + i)] *
                                 k[std::size_t(j)][std::size_t(g * hd + i)];
                        scores[std::size_t(j)] = s / std::sqrt(double(hd));
                        max = std::max(max, scores[std::size_t(j)]);
                    }
                    double sum = 0;
                    for (double& s : scores)
                        sum += (s = std::exp(s - max));
                    for (std::int64_t j = 0; j <= t; ++j)
                        for (std::int64_t i = 0; i < hd; ++i)
                            att[std::size_t(hh * hd + i)] +=
                                scores[std::size_t(j)] / sum *
                                v[std::size_t(j)][std::size_t(g * hd + i)];
                }
            }
            hAttn[std::size_t(t)] = apply(wo, att, E);
        }
        for (std::int64_t t = 0; t < n; ++t)
            for (std::int64_t i = 0; i < E; ++i)
                h[std::size_t(t)][std::size_t(i)] += hAttn[std::size_t(t)][std::size_t(i)];

        // Feed-forward.
        if (!sparseLayer) {
            const Vec gate = r.tensor(p + "ffn_gate.weight"), up = r.tensor(p + "ffn_up.weight"),
                      down = r.tensor(p + "ffn_down.weight");
            for (std::int64_t t = 0; t < n; ++t) {
                Vec x = h[std::size_t(t)];
                rmsNorm(x, ffnNorm, eps, static_cast<std::size_t>(E));
                const Vec y = ffn(gate, up, down, x, F, E);
                for (std::int64_t i = 0; i < E; ++i)
                    h[std::size_t(t)][std::size_t(i)] += y[std::size_t(i)];
            }
            continue;
        }
        const std::int64_t X = r.integer("expert_count"), used = r.integer("expert_used_count"),
                           Fe = r.integer("expert_feed_forward_length"),
                           shared = r.integer("expert_shared_count");
        const double scale = r.real("expert_weights_scale");
        const Vec router = r.tensor(p + "ffn_gate_inp.weight"),
                  bias = r.tensor(p + "exp_probs_b.bias"),
                  gateE = r.tensor(p + "ffn_gate_exps.weight"),
                  upE = r.tensor(p + "ffn_up_exps.weight"),
                  downE = r.tensor(p + "ffn_down_exps.weight");
        Vec gateS, upS, downS;
        if (shared > 0) {
            gateS = r.tensor(p + "ffn_gate_shexp.weight");
            upS = r.tensor(p + "ffn_up_shexp.weight");
            downS = r.tensor(p + "ffn_down_shexp.weight");
        }
        if (trace != nullptr) {
            trace->experts[std::size_t(l)].resize(static_cast<std::size_t>(n));
            trace->weights[std::size_t(l)].resize(static_cast<std::size_t>(n));
        }
        for (std::int64_t t = 0; t < n; ++t) {
            Vec x = h[std::size_t(t)];
            rmsNorm(x, ffnNorm, eps, static_cast<std::size_t>(E));
            const Vec z = apply(router, x, X);
            Vec sig(static_cast<std::size_t>(X)), biased(static_cast<std::size_t>(X));
            for (std::size_t e = 0; e < sig.size(); ++e) {
                sig[e] = 1.0 / (1.0 + std::exp(-z[e]));
                biased[e] = sig[e] + bias[e];
            }
            std::vector<int> order(static_cast<std::size_t>(X));
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
                return biased[std::size_t(a)] > biased[std::size_t(b)];
            });
            order.resize(static_cast<std::size_t>(used));
            double sum = 0;
            for (int e : order)
                sum += sig[std::size_t(e)];
            Vec y =
                shared > 0 ? ffn(gateS, upS, downS, x, Fe * shared, E) : Vec(std::size_t(E), 0.0);
            Vec weights;
            for (int e : order) {
                const double wgt = sig[std::size_t(e)] / sum * scale;
                weights.push_back(wgt);
                const Vec ye = ffn(gateE, upE, downE, x, Fe, E, e);
                for (std::int64_t i = 0; i < E; ++i)
                    y[std::size_t(i)] += wgt * ye[std::size_t(i)];
            }
            if (trace != nullptr) {
                trace->experts[std::size_t(l)][std::size_t(t)] = order;
                trace->weights[std::size_t(l)][std::size_t(t)] = weights;
            }
            for (std::int64_t i = 0; i < E; ++i)
                h[std::size_t(t)][std::size_t(i)] += y[std::size_t(i)];
        }
    }
    const Vec outNorm = r.tensor("output_norm.weight"), output = r.tensor("output.weight");
    std::vector<double> logits;
    logits.reserve(std::size_t(n * vocab));
    for (std::int64_t t = 0; t < n; ++t) {
        Vec x = h[std::size_t(t)];
        rmsNorm(x, outNorm, eps, static_cast<std::size_t>(E));
        const Vec y = apply(output, x, vocab);
        logits.insert(logits.end(), y.begin(), y.end());
    }
    return logits;
}

}  // namespace iris::inference::testing
