#pragma once
// The device half of sampling, so that a decode step copies back a few candidates instead of a
// vocabulary of logits: repetition/presence/frequency penalties on the logits, then the k most
// likely tokens of each row in the order inference/sampler.cpp ranks them (logit descending, id
// ascending on ties). The host finishes the chain (top-p, min-p, temperature and the seeded draw)
// on those k candidates with the same code as the CPU engine, so both engines draw the same
// token from the same logits; greedy decoding is k = 1.

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace iris::kernels::cuda {

inline constexpr int kMaxCandidates = 256;

// For each i < count: logit = logit / repetition if > 0 else logit * repetition, then
// logit -= counts[i] * frequency + presence, at logits[ids[i]] (ids distinct, within the row:
// the host counts the penalty window's tokens once per step).
cudaError_t applyPenalties(float* logits, const std::int32_t* ids, const std::int32_t* counts,
                           int count, float repetition, float presence, float frequency,
                           cudaStream_t stream);

// Device scratch topCandidates needs for `rows` rows of `vocab` logits and k candidates.
std::int64_t topCandidatesScratchBytes(int rows, std::int64_t vocab, int k);

// The k (1 <= k <= kMaxCandidates, k <= vocab) largest logits of each row r (logits + r *
// stride) with their ids, sorted, at ids/values + r * k. Returns cudaErrorInvalidValue for bad
// sizes or null pointers, else the launches' error. Asynchronous.
cudaError_t topCandidates(const float* logits, int rows, std::int64_t vocab, std::ptrdiff_t stride,
                          int k, std::int32_t* ids, float* values, void* scratch,
                          cudaStream_t stream);

}  // namespace iris::kernels::cuda
