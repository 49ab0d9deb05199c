#pragma once
// The host half of a device backend's forward pass: what each batch token reads on the device
// (its pool row for K/V, its attention length, its sequence's block table), worked out from
// KvCache's bookkeeping once per step and uploaded in one copy (cuda_backend.cpp). Kept apart
// from the CUDA code so that it is tested on every machine (tests/inference/models/
// step_plan_test.cpp): an off-by-one here would be invisible without a GPU otherwise.

#include <cstdint>
#include <span>
#include <vector>

#include "inference/kv_cache.h"
#include "inference/models/model.h"

namespace iris::inference {

// Consecutive batch tokens of one sequence: they share a block table.
struct StepRun {
    std::int64_t first = 0, tokens = 0;
    std::int64_t maxLength = 0;  // the longest attention range among them
};

struct StepPlan {
    std::vector<std::int32_t> ids;     // token ids (image tokens keep theirs; embed replaces them)
    std::vector<std::int64_t> kvRows;  // pool row (block * blockSize + offset) of each token's slot
    std::vector<std::int32_t> lengths;  // slot + 1: the positions each token attends to
    std::vector<StepRun> runs;
    // runs.size() rows of tableStride entries: run r's sequence's block table, padded with 0
    // (never read: past every length of the run).
    std::vector<std::int32_t> tables;
    std::int64_t tableStride = 0;
    std::int64_t maxLength = 0;
    bool decode = false;                  // every run is one token: one decode-attention launch
    std::vector<std::int64_t> imageRows;  // batch rows with an injected embedding, in order
};

// The plan for `batch` (checked by checkBatch before: every slot reserved).
StepPlan planStep(std::span<const TokenInput> batch, const KvCache& cache);

}  // namespace iris::inference
