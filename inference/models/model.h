#pragma once
// The model interface every architecture implements, and the factory that picks one from a GGUF
// file's general.architecture. A model is immutable once loaded (weights stay in the file's
// mapping) and runs batches of tokens from any number of sequences against a paged KV cache.

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "inference/gguf/gguf_file.h"
#include "inference/kv_cache.h"
#include "inference/status.h"
#include "inference/thread_pool.h"

namespace iris::inference {

struct ModelConfig {
    std::string architecture;  // general.architecture
    std::string name;          // general.name, if any
    std::int64_t vocabSize = 0;
    std::int64_t hiddenSize = 0;
    std::int64_t layers = 0;
    std::int64_t heads = 0;
    std::int64_t kvHeads = 0;
    std::int64_t headDim = 0;
    std::int64_t ffnSize = 0;
    std::int64_t contextLength = 0;  // trained context
    float rmsEps = 1e-6f;
    float ropeBase = 10000.0f;
    int ropeDims = 0;                   // rotated dimensions per head (partial rotary < headDim)
    std::array<int, 4> ropeSections{};  // M-RoPE: frequency pairs per position component
    bool multimodalRope = false;        // positions carry (t, h, w, e)
};

// One token of a batch. `slot` is its index in the sequence's KV cache (the token attends to
// slots [0, slot]); `position` is what RoPE sees: (t, h, w, e) for M-RoPE models, position[0]
// for the others. For text the two agree; after an image they differ.
struct TokenInput {
    std::int32_t token = 0;
    SequenceId sequence = 0;
    std::int64_t slot = 0;
    std::array<std::int32_t, 4> position{};
    bool wantLogits = false;
};

class Model {
public:
    virtual ~Model() = default;

    virtual const ModelConfig& config() const = 0;

    // The KV cache geometry this model needs (blocks and block size are the caller's choice).
    KvCacheOptions kvCacheOptions(std::int64_t blocks, int blockSize,
                                  kernels::TensorType type) const;

    // Runs `batch` through the model: writes each token's K and V at its slot (which the last
    // cache.extend() of its sequence made room for) and appends vocabSize logits for every token
    // with wantLogits, in batch order, to `logits`. Tokens of one sequence appear in slot order.
    // InvalidArgument for a token id outside the vocabulary or a slot past the sequence's length.
    virtual Status forward(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                           std::vector<float>& logits) = 0;
};

// Creates the model for `file` (which must outlive it). Unsupported for an architecture Iris does
// not know; Corrupt/NotFound naming the key or tensor for missing or inconsistent parts.
Result<std::unique_ptr<Model>> createModel(const GgufFile& file);

// Architectures createModel accepts.
std::vector<std::string> supportedArchitectures();

}  // namespace iris::inference
