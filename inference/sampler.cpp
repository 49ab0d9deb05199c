#include "inference/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace iris::inference {

Sampler::Sampler(const SamplingParams& params) : m_params(params), m_rng(params.seed) {}

void Sampler::applyPenalties(std::span<const std::int32_t> history) {
    const SamplingParams& p = m_params;
    if (p.repetitionPenalty == 1.0f && p.presencePenalty == 0.0f && p.frequencyPenalty == 0.0f)
        return;
    const std::size_t window = std::min(history.size(), std::size_t(std::max(0, p.penaltyWindow)));
    std::unordered_map<std::int32_t, int> counts;
    for (std::int32_t id : history.subspan(history.size() - window))
        ++counts[id];
    for (Candidate& c : m_candidates) {
        const auto it = counts.find(c.id);
        if (it == counts.end()) continue;
        // As llama.cpp and HF: divide positive logits, multiply negative ones.
        c.logit = c.logit > 0.0f ? c.logit / p.repetitionPenalty : c.logit * p.repetitionPenalty;
        c.logit -= float(it->second) * p.frequencyPenalty + p.presencePenalty;
    }
}

std::int32_t Sampler::sample(std::span<const float> logits, std::span<const std::int32_t> history) {
    const SamplingParams& p = m_params;
    m_candidates.resize(logits.size());
    for (std::size_t i = 0; i < logits.size(); ++i)
        m_candidates[i] = {std::int32_t(i), logits[i]};
    applyPenalties(history);
    const auto byLogit = [](const Candidate& a, const Candidate& b) {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    };
    if (p.temperature <= 0.0f)
        return std::min_element(m_candidates.begin(), m_candidates.end(), byLogit)->id;

    // top-k: keep the k most likely, sorted.
    std::size_t keep = m_candidates.size();
    if (p.topK > 0 && std::size_t(p.topK) < keep) keep = std::size_t(p.topK);
    std::partial_sort(m_candidates.begin(), m_candidates.begin() + std::ptrdiff_t(keep),
                      m_candidates.end(), byLogit);
    m_candidates.resize(keep);

    // Probabilities at temperature 1 for top-p and min-p, as llama.cpp's chain computes them.
    const float maxLogit = m_candidates.front().logit;
    m_probabilities.resize(keep);
    double sum = 0;
    for (std::size_t i = 0; i < keep; ++i)
        sum += (m_probabilities[i] = std::exp(double(m_candidates[i].logit - maxLogit)));
    if (p.topP < 1.0f) {
        double cumulative = 0;
        for (std::size_t i = 0; i < keep; ++i) {
            cumulative += m_probabilities[i] / sum;
            if (cumulative >= double(p.topP)) {
                keep = i + 1;
                break;
            }
        }
    }
    if (p.minP > 0.0f) {
        std::size_t i = 1;  // the most likely token always stays
        while (i < keep && m_probabilities[i] >= double(p.minP) * m_probabilities[0])
            ++i;
        keep = i;
    }
    m_candidates.resize(keep);

    // Temperature, then a draw.
    sum = 0;
    for (std::size_t i = 0; i < keep; ++i) {
        m_probabilities[i] =
            std::exp(double(m_candidates[i].logit - maxLogit) / double(p.temperature));
        sum += m_probabilities[i];
    }
    std::uniform_real_distribution<double> uniform(0.0, sum);
    double target = uniform(m_rng);
    for (std::size_t i = 0; i < keep; ++i) {
        target -= m_probabilities[i];
        if (target <= 0.0) return m_candidates[i].id;
    }
    return m_candidates[keep - 1].id;
}

}  // namespace iris::inference
