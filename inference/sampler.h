#pragma once
// Choosing the next token from logits: penalties, then top-k, top-p, min-p, temperature and a
// seeded draw (llama.cpp's default order); temperature <= 0 means greedy.

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace iris::inference {

struct SamplingParams {
    float temperature = 0.8f;        // <= 0: greedy (argmax)
    int topK = 40;                   // <= 0: off
    float topP = 0.95f;              // >= 1: off
    float minP = 0.05f;              // <= 0: off; relative to the most likely token
    float repetitionPenalty = 1.0f;  // 1: off; > 1 discourages tokens seen in the window
    float presencePenalty = 0.0f;    // subtracted once from every token seen in the window
    float frequencyPenalty = 0.0f;   // subtracted per occurrence in the window
    int penaltyWindow = 64;          // how many recent tokens the penalties look at
    std::uint64_t seed = 0;
};

// The most candidates a device keeps per row for the host to finish the draw from.
inline constexpr int kMaxDeviceCandidates = 256;

// Not thread-safe (it owns the random state); one per generation stream.
class Sampler {
public:
    explicit Sampler(const SamplingParams& params);

    // The next token given `logits` (vocabulary size) and the tokens so far (for penalties).
    std::int32_t sample(std::span<const float> logits, std::span<const std::int32_t> history);

    // Sampling split between a device and the host, so that a decode step copies back a few
    // candidates instead of a vocabulary of logits. The device applies the penalties
    // (penaltyCounts: each distinct token of the window and how often it occurs there) and
    // keeps the candidatesNeeded() best tokens, sorted by logit descending and id ascending on
    // ties; sampleCandidates() finishes the draw from them with the same chain and random
    // state as sample(), so both give the same token from the same logits. 0 when the chain
    // needs every logit (top-k off or above kMaxDeviceCandidates).
    int candidatesNeeded() const;
    std::vector<std::pair<std::int32_t, int>> penaltyCounts(
        std::span<const std::int32_t> history) const;
    std::int32_t sampleCandidates(std::span<const std::int32_t> ids, std::span<const float> logits);

    const SamplingParams& params() const { return m_params; }

private:
    struct Candidate {
        std::int32_t id;
        float logit;
    };

    bool penalises() const;
    void applyPenalties(std::span<const std::int32_t> history);
    // top-k (the candidates already sorted, `keep` of them), top-p, min-p, temperature, draw.
    std::int32_t finishChain(std::size_t keep);

    SamplingParams m_params;
    std::mt19937_64 m_rng;
    std::vector<Candidate> m_candidates;
    std::vector<double> m_probabilities;
};

}  // namespace iris::inference
