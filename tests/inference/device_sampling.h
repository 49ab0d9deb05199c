#pragma once
// The device's half of sampling written out on the host (kernels/cuda/sampling.cuh does it on a
// GPU): a request's penalties on the logits, then its `keep` best tokens, sorted by logit
// descending and id ascending on ties. The tests compare the host's half (Sampler::
// sampleCandidates) and the engine's and scheduler's use of it against sampling from all
// logits.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "inference/models/model.h"

namespace iris::inference::testing {

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

// A model that samples "on its device": the device's half written out on the host from the
// wrapped model's logits, so that the engine's and the scheduler's paths for GPU models run on
// every machine. Counts its forwardCandidates calls in `calls`.
class SimulatedDeviceModel final : public Model {
public:
    SimulatedDeviceModel(std::unique_ptr<Model> inner, std::atomic<int>& calls)
        : m_inner(std::move(inner)), m_calls(calls) {}
    const ModelConfig& config() const override { return m_inner->config(); }
    Status forward(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                   std::vector<float>& logits) override {
        return m_inner->forward(batch, cache, pool, logits);
    }
    bool samplesOnDevice() const override { return true; }
    Status forwardCandidates(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                             std::span<const CandidateRequest> requests,
                             Candidates& candidates) override {
        std::vector<float> logits;
        IRIS_RETURN_IF_ERROR(m_inner->forward(batch, cache, pool, logits));
        const auto vocabulary = std::size_t(config().vocabSize);
        if (logits.size() != requests.size() * vocabulary)
            return Status::invalidArgument("requests do not match the tokens that want logits");
        for (std::size_t r = 0; r < requests.size(); ++r) {
            const auto row = logits.begin() + std::ptrdiff_t(r * vocabulary);
            appendCandidates({row, row + std::ptrdiff_t(vocabulary)}, requests[r], candidates);
        }
        ++m_calls;
        return {};
    }

private:
    std::unique_ptr<Model> m_inner;
    std::atomic<int>& m_calls;
};

}  // namespace iris::inference::testing
