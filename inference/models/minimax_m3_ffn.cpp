// MiniMax-M3 feed-forward blocks: the dense swigluoai FFN of the leading layers, and the
// sigmoid-routed mixture of experts with its shared expert (docs/minimax-m3.md 3.7-3.9), on the
// shared GatedFfn and LinearRunner.
#include <algorithm>
#include <cmath>

#include "inference/models/minimax_m3.h"
#include "inference/models/model_parts.h"

namespace iris::inference::m3 {

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
                        LinearRunner& runner, ThreadPool& pool) {
    m_ffn.run(layer.gate, layer.up, layer.down, GateActivation::SwiGluOai, x, rows, y, runner,
              pool);
}

void FeedForward::moe(const Layer& layer, const Hyper& hyper, const float* x, std::int64_t rows,
                      float* y, int* experts, float* weights, LinearRunner& runner,
                      ThreadPool& pool) {
    const std::int64_t hidden = layer.router.in, k = hyper.expertsUsed;
    // The shared expert (weight 1), when the file has one, starts the sum.
    if (layer.gate.data != nullptr) {
        dense(layer, x, rows, y, runner, pool);
    } else {
        std::fill(y, y + rows * hidden, 0.0f);
    }

    float* logits = growScratch(m_logits, rows * hyper.experts);
    runner.run(layer.router, x, rows, logits, pool);
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
        float* in = growScratch(m_rows, count * hidden);
        for (std::int64_t m = 0; m < count; ++m) {
            const float* row = x + (m_members[std::size_t(m)] / k) * hidden;
            std::copy(row, row + hidden, in + m * hidden);
        }
        const Linear gateW = layer.gateExps.expert(e), upW = layer.upExps.expert(e),
                     downW = layer.downExps.expert(e);
        float* out = growScratch(m_out, count * hidden);
        m_ffn.run(gateW, upW, downW, GateActivation::SwiGluOai, in, count, out, runner, pool);
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
