#pragma once
// Test support for MiniMax-M3: tiny random `minimax-m3` GGUF files shaped as in
// docs/minimax-m3.md section 6 (F32 weights, made with GgufWriter), and a float64 reference of
// the whole forward pass written straight from the spec (sections 3.2-3.10), sharing no code with
// inference/models/. Its MSA scores every token, max-pools per block, forces the local block and
// sorts for the top-k, then runs a masked softmax.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "inference/gguf/gguf_file.h"

namespace iris::inference::testing {

struct M3Spec {
    std::int64_t vocab = 64;
    std::int64_t hidden = 64;
    std::int64_t layers = 3;
    std::int64_t leadingDense = 1;
    std::int64_t ffn = 128;
    std::int64_t expertFfn = 32;
    std::int64_t experts = 4;
    std::int64_t expertsUsed = 2;
    std::int64_t sharedExperts = 1;
    std::int64_t heads = 4;
    std::int64_t kvHeads = 2;
    std::int64_t headDim = 32;
    std::int64_t ropeDims = 16;
    std::int64_t indexHeads = 2;
    std::int64_t indexDim = 32;
    std::int64_t topK = 2;
    std::int64_t blockSize = 16;
    std::int64_t localBlocks = 1;
    std::int64_t gatingFunc = 2;
    float ropeBase = 5e6f;
    float rmsEps = 1e-6f;
    float routedScale = 2.0f;
    unsigned seed = 1;
    float weightScale = 0.1f;
    float indexScale = 0.4f;   // of the indexer projections: well separated block scores
    int biasedExpert = -1;     // >= 0: this expert's router bias is +10 (always chosen)
    bool writeIndexer = true;  // false: omit the attention.indexer.* keys
};

// The serialized GGUF file.
std::vector<std::byte> makeM3Model(const M3Spec& spec);

// The reference's decisions, per layer l, token t (and KV group g for blocks).
struct M3ReferenceTrace {
    std::vector<std::vector<std::vector<int>>> experts;     // [l][t] in choice order
    std::vector<std::vector<std::vector<double>>> weights;  // [l][t]
    std::vector<std::vector<std::vector<std::vector<std::int32_t>>>> blocks;  // [l][t][g] sorted
    int tiesResolved = 0;  // top-k boundaries within `tieTolerance` that took `tieBreaker`'s set
};

struct M3ReferenceOptions {
    bool dense = false;  // every layer dense
    // Block scores closer than this at the top-k boundary count as a tie. For a tie, the set
    // tieBreaker(l, t, g) returns (the engine's choice) is used if it is a valid top-k under
    // the tolerance; otherwise the reference keeps its own and adds the case to `badTies`.
    double tieTolerance = 0.0;
    std::function<std::vector<std::int32_t>(int, int, int)> tieBreaker;
};

// Float64 logits (vocab per token, row-major) of the file's model over tokens at positions
// 0..n-1 of one sequence.
std::vector<double> m3ReferenceLogits(const GgufFile& file, const std::vector<std::int32_t>& tokens,
                                      const M3ReferenceOptions& options, M3ReferenceTrace* trace,
                                      std::vector<std::string>* badTies = nullptr);

}  // namespace iris::inference::testing
