#pragma once
// The model interface every architecture implements, and the factory that picks one from a GGUF
// file's general.architecture. A model is immutable once loaded (weights stay in the file's
// mapping) and runs batches of tokens from any number of sequences against a paged KV cache.

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "inference/gguf/gguf_file.h"
#include "inference/kv_cache.h"
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
    // MiniMax sparse attention (MSA): layers >= indexerFirstLayer keep an f32 indexer key of
    // indexerDim values per token in the KV cache and attend to selected blocks of
    // selectionBlock tokens. indexerDim 0: every layer is dense.
    int indexerDim = 0;
    int indexerFirstLayer = 0;
    int selectionBlock = 0;
    std::string selectionBlockKey;  // the GGUF key selectionBlock was read from, for errors
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
    // When set, the token's input vector (hiddenSize floats) in place of its embedding row: an
    // image token's output of the vision tower. `token` is then not looked up.
    const float* embedding = nullptr;
};

// The device's half of sampling for one token with wantLogits (Sampler::candidatesNeeded):
// its penalties (each distinct token of the window and its count, Sampler::penaltyCounts) and
// how many of the best tokens to keep (1..kMaxDeviceCandidates).
struct CandidateRequest {
    int keep = 1;
    float repetition = 1.0f, presence = 0.0f, frequency = 0.0f;
    std::vector<std::pair<std::int32_t, int>> penalties;
};

// What forwardCandidates returns: per token with wantLogits, in batch order, `keep` ids and
// their penalised logits, best first (logit descending, id ascending on ties), concatenated.
struct Candidates {
    std::vector<std::int32_t> ids;
    std::vector<float> logits;
};

class Model {
public:
    virtual ~Model() = default;

    virtual const ModelConfig& config() const = 0;

    // The KV cache geometry this model needs (blocks and block size are the caller's choice).
    // For a sparse-attention model the block size must divide the selection block (or be a
    // multiple of it); KvCache::create refuses it otherwise, naming the GGUF key.
    KvCacheOptions kvCacheOptions(std::int64_t blocks, int blockSize,
                                  kernels::TensorType type) const;

    // Runs `batch` through the model: writes each token's K and V at its slot (which the last
    // cache.extend() of its sequence made room for) and appends vocabSize logits for every token
    // with wantLogits, in batch order, to `logits`. Tokens of one sequence appear in slot order.
    // InvalidArgument for a token id outside the vocabulary or a slot past the sequence's length.
    virtual Status forward(std::span<const TokenInput> batch, KvCache& cache, ThreadPool& pool,
                           std::vector<float>& logits) = 0;

    // As forward(), but each token with wantLogits gives the candidates `requests` (one per such
    // token, in batch order) ask for instead of its logits: sampling's first half on the device
    // that computed them, so that a decode step copies back a few candidates, not a vocabulary.
    // Unsupported where the logits are in host memory anyway (samplesOnDevice() false).
    virtual bool samplesOnDevice() const { return false; }
    virtual Status forwardCandidates(std::span<const TokenInput> batch, KvCache& cache,
                                     ThreadPool& pool, std::span<const CandidateRequest> requests,
                                     Candidates& candidates) {
        (void)batch, (void)cache, (void)pool, (void)requests, (void)candidates;
        return Status::unsupported("this model's logits are sampled on the host");
    }

    // Where the model's KV data lives when not in `cache`'s own pool (a GPU backend's device
    // copy): allocates it for `cache`'s geometry. forward() does it on first use of a cache; the
    // engine calls it at load so that running out of device memory is a load error.
    virtual Status bindCache(KvCache& cache) {
        (void)cache;
        return {};
    }

    // Runs every layer with dense attention even where the architecture attends sparsely
    // (MiniMax-M3's MSA layers still write their indexer keys), for comparisons. Returns whether
    // the model has sparse layers at all. The environment variable IRIS_DENSE_ATTENTION=1 sets
    // it when a model is created. Not to be called during forward().
    virtual bool setDenseAttention(bool dense) {
        (void)dense;
        return false;
    }
};

// Where a model runs (inference/backend/device.h decides it from --device).
struct ModelBackend {
    bool cuda = false;
    int device = 0;                     // CUDA device index
    std::int64_t maxBatchTokens = 512;  // scratch sized at load for batches this large
};

// Creates the model for `file` (which must outlive it). Unsupported for an architecture Iris does
// not know or one without a path on the chosen backend; Corrupt/NotFound naming the key or
// tensor for missing or inconsistent parts; OutOfRange when the weights do not fit the device.
Result<std::unique_ptr<Model>> createModel(const GgufFile& file,
                                           const ModelBackend& backend = {});

// Architectures createModel accepts.
std::vector<std::string> supportedArchitectures();

}  // namespace iris::inference
