#include "inference/models/mixture_of_experts.h"

#include <algorithm>
#include <cmath>

#include "inference/models/model_parts.h"

namespace iris::inference {

void routeSigmoid(const float* logits, const float* bias, const ExpertRouting& routing,
                  int* experts, float* weights) {
    const int k = int(routing.used);
    // Bounded insertion of the k best biased scores (k is 4 of 128 in the released MiniMax-M3).
    std::vector<float> chosenScore(static_cast<std::size_t>(k));
    int taken = 0;
    for (int e = 0; e < int(routing.experts); ++e) {
        const float s = 1.0f / (1.0f + std::exp(-logits[e])) + (bias != nullptr ? bias[e] : 0.0f);
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
    const float norm = routing.normaliseWeights ? 1.0f / std::max(sum, 6.1035e-5f) : 1.0f;
    for (int i = 0; i < k; ++i)
        weights[i] *= norm * routing.scale;
}

void MixtureOfExperts::accumulate(const ExpertLayer& layer, const ExpertRouting& routing,
                                  GateActivation activation, const float* x, std::int64_t rows,
                                  float* y, int* experts, float* weights, LinearRunner& runner,
                                  ThreadPool& pool) {
    const std::int64_t hidden = layer.router.in, k = routing.used;
    float* logits = growScratch(m_logits, rows * routing.experts);
    runner.run(layer.router, x, rows, logits, pool);
    for (std::int64_t r = 0; r < rows; ++r)
        routeSigmoid(logits + r * routing.experts, layer.routerBias, routing, experts + r * k,
                     weights + r * k);

    // Expert by expert, on the rows routed to it: only chosen experts are computed.
    for (std::int64_t e = 0; e < routing.experts; ++e) {
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
        const Linear gate = layer.gate.expert(e), up = layer.up.expert(e),
                     down = layer.down.expert(e);
        float* out = growScratch(m_out, count * hidden);
        m_ffn.run(gate, up, down, activation, in, count, out, runner, pool);
        for (std::int64_t m = 0; m < count; ++m) {
            const std::int64_t slot = m_members[std::size_t(m)];
            const float w = weights[slot];
            float* target = y + (slot / k) * hidden;
            for (std::int64_t i = 0; i < hidden; ++i)
                target[i] += w * out[m * hidden + i];
        }
    }
}

}  // namespace iris::inference
