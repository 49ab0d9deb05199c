#pragma once
// The device's half of sampling written out on the host (kernels/cuda/sampling.cuh does it on a
// GPU): a request's penalties on the logits, then its `keep` best tokens, sorted by logit
// descending and id ascending on ties. The tests compare the host's half (Sampler::
// sampleCandidates) and the scheduler's use of it against sampling from all logits.

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "inference/models/model.h"
#include "inference/sampler.h"

namespace iris::inference::testing {

inline CandidateRequest candidateRequest(const Sampler& sampler,
                                         const std::vector<std::int32_t>& history) {
    const SamplingParams& p = sampler.params();
    return {sampler.candidatesNeeded(), p.repetitionPenalty, p.presencePenalty,
            p.frequencyPenalty, sampler.penaltyCounts(history)};
}

// Appends the request's candidates from one row of logits to `out`.
inline void appendCandidates(std::vector<float> logits, const CandidateRequest& request,
                             Candidates& out) {
    for (const auto& [id, count] : request.penalties) {
        float& l = logits[std::size_t(id)];
        l = l > 0.0f ? l / request.repetition : l * request.repetition;
        l -= float(count) * request.frequency + request.presence;
    }
    std::vector<std::int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
        return logits[std::size_t(a)] > logits[std::size_t(b)];
    });
    for (std::size_t i = 0; i < std::size_t(request.keep); ++i) {
        out.ids.push_back(order[i]);
        out.logits.push_back(logits[std::size_t(order[i])]);
    }
}

}  // namespace iris::inference::testing
