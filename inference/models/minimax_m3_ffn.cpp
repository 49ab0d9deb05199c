// MiniMax-M3 projections and feed-forward blocks: swigluoai, the dense FFN of the leading layers,
// and the sigmoid-routed mixture of experts with its shared expert (docs/minimax-m3.md 3.7-3.9).
#include <algorithm>
#include <cmath>

#include "inference/models/minimax_m3.h"
#include "kernels/matmul.h"

namespace iris::inference::m3 {

float* scratch(std::vector<float>& buffer, std::int64_t size) {
    if (std::int64_t(buffer.size()) < size) buffer.resize(static_cast<std::size_t>(size));
    return buffer.data();
}

Linear ExpertStack::expert(std::int64_t e) const {
    const std::int64_t bytes = kernels::rowBytes(type, in) * out;
    return Linear{type, data + e * bytes, in, out, nullptr};
}

void Projector::pack(Linear& w) {
    const std::int64_t bytes = kernels::packedBytes(w.type, w.out, w.in);
    if (bytes == 0 || w.out % 16 != 0) return;
    auto& buffer = m_packed.emplace_back(
        std::make_unique_for_overwrite<std::byte[]>(static_cast<std::size_t>(bytes)));
    kernels::packWeights(w.type, w.data, w.out, w.in, buffer.get());
    w.packed = buffer.get();
}

void Projector::run(std::initializer_list<Target> targets, const float* x, std::int64_t rows,
                    ThreadPool& pool) {
    if (rows == 0) return;
    const std::int64_t in = targets.begin()->weights->in;
    const std::byte* ready[3] = {};
    std::int64_t columns = 0;
    for (const Target& target : targets) {
        columns += target.weights->out;
        const kernels::TensorType type = target.weights->type;
        const auto format = std::size_t(kernels::activationFormat(type));
        if (ready[format] != nullptr) continue;
        const std::int64_t rowBytes = kernels::preparedRowBytes(type, in);
        std::vector<std::byte>& buffer = m_prepared[format];
        if (std::int64_t(buffer.size()) < rowBytes * rows)
            buffer.resize(std::size_t(rowBytes * rows));
        std::byte* base = buffer.data();
        pool.parallelFor(rows, 1, [&](std::int64_t begin, std::int64_t end) {
            kernels::prepareActivations(type, x + begin * in, in, end - begin, in,
                                        base + begin * rowBytes);
        });
        ready[format] = base;
    }
    // All targets' output rows form one range split between the threads, in grains of 16 so
    // that packed groups stay whole.
    pool.parallelFor(columns, 16, [&](std::int64_t begin, std::int64_t end) {
        std::int64_t first = 0;
        for (const Target& target : targets) {
            const Linear& w = *target.weights;
            const std::int64_t from = std::max<std::int64_t>(begin - first, 0);
            const std::int64_t to = std::min(end - first, w.out);
            first += w.out;
            if (from >= to) continue;
            const std::byte* xq = ready[std::size_t(kernels::activationFormat(w.type))];
            if (w.packed != nullptr && from % 16 == 0) {
                kernels::matmulPacked(w.type, w.packed, w.in, xq, rows, target.y, w.out, from, to);
            } else {
                kernels::matmul(w.type, w.data, w.in, xq, rows, target.y, w.out, from, to);
            }
        }
    });
}

void swigluOai(const float* gate, const float* up, float* out, std::int64_t n) {
    constexpr float kAlpha = 1.702f, kLimit = 7.0f;
    for (std::int64_t i = 0; i < n; ++i) {
        const float g = std::min(gate[i], kLimit);
        const float u = std::clamp(up[i], -kLimit, kLimit);
        out[i] = g / (1.0f + std::exp(-kAlpha * g)) * (u + 1.0f);
    }
}

void routeToken(const float* logits, const float* bias, const Hyper& hyper, int* experts,
                float* weights) {
    const int k = int(hyper.expertsUsed);
    // Bounded insertion of the k best biased scores (k is 4 in the released model, of 128).
    std::vector<float> chosenScore(static_cast<std::size_t>(k));
    int taken = 0;
    for (int e = 0; e < int(hyper.experts); ++e) {
        const float s = 1.0f / (1.0f + std::exp(-logits[e])) + bias[e];
        if (taken == k && !(s > chosenScore[std::size_t(k - 1)])) continue;
        int at = taken < k ? taken++ : k - 1;
        while (at > 0 && s > chosenScore[std::size_t(at - 1)]) {
            chosenScore[std::size_t(at)] = chosenScore[std::size_t(at - 1)];
            experts[at] = experts[at - 1];
            --at;
        }
        chosenScore[std::size_t(at)] = s;
        experts[at] = e;
    }
    float sum = 0.0f;
    for (int i = 0; i < k; ++i) {
        weights[i] = 1.0f / (1.0f + std::exp(-logits[experts[i]]));
        sum += weights[i];
    }
    const float norm = hyper.normaliseWeights ? 1.0f / std::max(sum, 6.1035e-5f) : 1.0f;
    for (int i = 0; i < k; ++i)
        weights[i] *= norm * hyper.routedScale;
}

void FeedForward::dense(const Layer& layer, const float* x, std::int64_t rows, float* y,
                        Projector& projector, ThreadPool& pool) {
    const std::int64_t width = layer.gate.out;
    float* gate = scratch(m_gate, rows * width);
    float* up = scratch(m_up, rows * width);
    projector.run({{&layer.gate, gate}, {&layer.up, up}}, x, rows, pool);
    swigluOai(gate, up, gate, rows * width);
    projector.run(layer.down, gate, rows, y, pool);
}

void FeedForward::moe(const Layer& layer, const Hyper& hyper, const float* x, std::int64_t rows,
                      float* y, int* experts, float* weights, Projector& projector,
                      ThreadPool& pool) {
    const std::int64_t hidden = layer.router.in, k = hyper.expertsUsed;
    // The shared expert (weight 1), when the file has one, starts the sum.
    if (layer.gate.data != nullptr) {
        dense(layer, x, rows, y, projector, pool);
    } else {
        std::fill(y, y + rows * hidden, 0.0f);
    }

    float* logits = scratch(m_logits, rows * hyper.experts);
    projector.run(layer.router, x, rows, logits, pool);
    for (std::int64_t r = 0; r < rows; ++r)
        routeToken(logits + r * hyper.experts, layer.routerBias, hyper, experts + r * k,
                   weights + r * k);

    // Expert by expert, on the rows routed to it: only chosen experts are computed.
    for (std::int64_t e = 0; e < hyper.experts; ++e) {
        m_members.clear();
        for (std::int64_t i = 0; i < rows * k; ++i)
            if (experts[i] == e) m_members.push_back(i);
        if (m_members.empty()) continue;
        const auto count = std::int64_t(m_members.size());
        float* in = scratch(m_rows, count * hidden);
        for (std::int64_t m = 0; m < count; ++m) {
            const float* row = x + (m_members[std::size_t(m)] / k) * hidden;
            std::copy(row, row + hidden, in + m * hidden);
        }
        const Linear gateW = layer.gateExps.expert(e), upW = layer.upExps.expert(e),
                     downW = layer.downExps.expert(e);
        float* gate = scratch(m_gate, count * gateW.out);
        float* up = scratch(m_up, count * gateW.out);
        projector.run({{&gateW, gate}, {&upW, up}}, in, count, pool);
        swigluOai(gate, up, gate, count * gateW.out);
        float* out = scratch(m_out, count * hidden);
        projector.run(downW, gate, count, out, pool);
        for (std::int64_t m = 0; m < count; ++m) {
            const std::int64_t slot = m_members[std::size_t(m)];
            const float w = weights[slot];
            float* target = y + (slot / k) * hidden;
            for (std::int64_t i = 0; i < hidden; ++i)
                target[i] += w * out[m * hidden + i];
        }
    }
}

}  // namespace iris::inference::m3
