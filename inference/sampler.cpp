#include "inference/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace iris::inference {

Sampler::Sampler(const SamplingParams& params) : m_params(params), m_rng(params.seed) {}

bool Sampler::penalises() const {
    const SamplingParams& p = m_params;
    return p.repetitionPenalty != 1.0f || p.presencePenalty != 0.0f || p.frequencyPenalty != 0.0f;
}

std::vector<std::pair<std::int32_t, int>> Sampler::penaltyCounts(
    std::span<const std::int32_t> history) const {
    std::vector<std::pair<std::int32_t, int>> counts;
    if (!penalises()) return counts;
    const std::size_t window =
        std::min(history.size(), std::size_t(std::max(0, m_params.penaltyWindow)));
    std::unordered_map<std::int32_t, int> seen;
    for (std::int32_t id : history.subspan(history.size() - window))
        ++seen[id];
    counts.assign(seen.begin(), seen.end());
    std::sort(counts.begin(), counts.end());
    return counts;
}

void Sampler::applyPenalties(std::span<const std::int32_t> history) {
    const SamplingParams& p = m_params;
    for (const auto& [id, count] : penaltyCounts(history)) {
        if (id < 0 || std::size_t(id) >= m_candidates.size()) continue;
        // As llama.cpp and HF: divide positive logits, multiply negative ones.
        float& logit = m_candidates[std::size_t(id)].logit;
        logit = logit > 0.0f ? logit / p.repetitionPenalty : logit * p.repetitionPenalty;
        logit -= float(count) * p.frequencyPenalty + p.presencePenalty;
    }
}

namespace {

bool byLogit(float aLogit, std::int32_t aId, float bLogit, std::int32_t bId) {
    return aLogit > bLogit || (aLogit == bLogit && aId < bId);
}

}  // namespace

int Sampler::candidatesNeeded() const {
    if (m_params.temperature <= 0.0f) return 1;
    if (m_params.topK > 0 && m_params.topK <= kMaxDeviceCandidates) return m_params.topK;
    return 0;
}

std::int32_t Sampler::sample(std::span<const float> logits, std::span<const std::int32_t> history) {
    const SamplingParams& p = m_params;
    m_candidates.resize(logits.size());
    for (std::size_t i = 0; i < logits.size(); ++i)
        m_candidates[i] = {std::int32_t(i), logits[i]};
    applyPenalties(history);
    const auto order = [](const Candidate& a, const Candidate& b) {
        return byLogit(a.logit, a.id, b.logit, b.id);
    };
    if (p.temperature <= 0.0f)
        return std::min_element(m_candidates.begin(), m_candidates.end(), order)->id;

    // top-k: keep the k most likely, sorted.
    std::size_t keep = m_candidates.size();
    if (p.topK > 0 && std::size_t(p.topK) < keep) keep = std::size_t(p.topK);
    std::partial_sort(m_candidates.begin(), m_candidates.begin() + std::ptrdiff_t(keep),
                      m_candidates.end(), order);
    return finishChain(keep);
}

std::int32_t Sampler::sampleCandidates(std::span<const std::int32_t> ids,
                                       std::span<const float> logits) {
    const std::size_t n = std::min(ids.size(), logits.size());
    m_candidates.resize(n);
    for (std::size_t i = 0; i < n; ++i)
        m_candidates[i] = {ids[i], logits[i]};
    if (n == 0) return 0;
    if (m_params.temperature <= 0.0f) return m_candidates.front().id;
    return finishChain(std::min(n, std::size_t(m_params.topK)));
}

std::int32_t Sampler::finishChain(std::size_t keep) {
    const SamplingParams& p = m_params;
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
