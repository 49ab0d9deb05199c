#pragma once
// The compute backend under the dense decoder's parts (docs/gpu-backend.md section 3): the
// operations a Qwen2-family forward pass is written from, implemented once for the CPU
// (cpu_backend.h, today's kernels and thread pool) and once for CUDA (cuda_backend.h). The model
// (models/decoder.cpp) owns one backend and never touches a kernel or dereferences an activation:
//
//   - Activations are f32 row-major buffers, one row per batch token, in the backend's memory
//     (host for the CPU, device for CUDA). The model asks for them with scratch() and only passes
//     the pointers back.
//   - Weights are given to the backend once at load (adopt*): the CPU packs them in its faster
//     layout, CUDA uploads them in their GGUF type; afterwards `Linear::data` and the norm
//     vectors the model holds point into backend memory.
//   - The paged KV cache's bookkeeping (block tables, slots, copy on write) stays in KvCache; the
//     pool the data lives in is the backend's (the CPU uses KvCache's own, CUDA a device copy of
//     the same layout, see bindCache()).
//
// Errors of the operations themselves (a failed launch) are kept by the backend and returned by
// finish(), so that the model's code reads as the math it computes.
//
// MiniMax-M3 (models/minimax_m3_model.cpp) adds its sparse attention and mixture of experts as
// operations of the same interface; the vision towers still run on the CPU and hand their
// embeddings over with the batch.

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "inference/gguf/gguf_file.h"
#include "inference/kv_cache.h"
#include "inference/models/gated_ffn.h"
#include "inference/models/linear.h"
#include "inference/models/mixture_of_experts.h"
#include "inference/models/model.h"
#include "inference/thread_pool.h"

namespace iris::inference {

// The activation buffers a decoder layer uses; each is a separate allocation that keeps its
// capacity between forward passes.
enum class Activations { X, Norm, Q, K, V, Attention, Gate, Up, IndexQ, IndexK, Out, Count };

// MiniMax sparse attention's choice (docs/minimax-m3.md section 3): an index query per KV group
// scores the cached index keys, the scores are max-pooled over selection blocks of `blockSize`
// tokens, and the group's query heads attend to the topK best blocks, the last `localBlocks`
// (the query's own block included) always among them.
struct SparseAttention {
    int indexDim = 0;
    int topK = 0;
    int blockSize = 0;
    int localBlocks = 1;
};

// The selection blocks each batch token's KV groups attended to ([token][group], ascending).
using BlockChoices = std::vector<std::vector<std::vector<std::int32_t>>>;

class DecoderBackend {
public:
    virtual ~DecoderBackend() = default;

    // "cpu" or "cuda:N", for messages.
    virtual std::string name() const = 0;

    // ---- load time: weights become the backend's ----
    // Before the first adopt*: the bytes all weights take (CUDA checks them against the free
    // device memory once, so that a model that does not fit fails before uploading anything).
    virtual Status beginLoading(std::int64_t weightBytes) {
        (void)weightBytes;
        return {};
    }
    // Makes `w` multiply on this backend (packed copy on the CPU, device copy of data and bias
    // on CUDA); `w` is updated in place.
    virtual Status adoptLinear(Linear& w) = 0;
    // A vector of n floats (norm weights) the backend reads; `v` is repointed.
    virtual Status adoptVector(const float*& v, std::int64_t n) = 0;
    // The token embedding table ({width, rows} of any computable type).
    virtual Status adoptEmbedding(const GgufTensor& table, std::int64_t width) = 0;
    // A mixture-of-experts layer: its router, the router's bias and the three expert stacks.
    virtual Status adoptExperts(ExpertLayer& layer) = 0;
    // Called after every weight was adopted: CUDA sizes its scratch for the largest product.
    virtual Status finishLoading() { return {}; }

    // The cache the next forward passes write (CUDA allocates its device pool for the cache's
    // geometry on the first call with a new cache; OutOfRange naming needed and free bytes).
    virtual Status bindCache(KvCache& cache) = 0;

    // ---- one forward pass: begin, the operations in order, finish ----
    // The batch is checked (checkBatch) before; the backend prepares what the operations read
    // per token (rotary angles, KV slots, block tables) for `batch`, which must stay alive until
    // finish().
    virtual Status begin(std::span<const TokenInput> batch, KvCache& cache,
                         const ModelConfig& config, ThreadPool& pool) = 0;
    // Buffer `which` with room for `count` floats (contents undefined).
    virtual float* scratch(Activations which, std::int64_t count) = 0;
    // x (tokens x width): each token's embedding row, or its injected embedding (image tokens).
    virtual void embed(float* x) = 0;
    // y = RMSNorm(x) * w over `rows` rows of `width` (contiguous); y may be x.
    virtual void rmsNorm(const float* x, const float* w, float* y, std::int64_t rows,
                         std::int64_t width, float eps) = 0;
    // y = x W^T + b for every target, all reading x (rows x in).
    virtual void linear(std::initializer_list<LinearRunner::Target> targets, const float* x,
                        std::int64_t rows) = 0;
    // NEOX rotary embedding (M-RoPE angles included) on x (tokens x heads x headDim).
    virtual void rope(float* x, int heads, int headDim) = 0;
    // Stores the batch's K and V (tokens x kvHeads * headDim) in their slots of `layer`, and
    // its MSA index keys (tokens x indexerDim) when indexKeys is not null.
    virtual void writeKv(int layer, const float* k, const float* v, const float* indexKeys) = 0;
    // Causal paged attention of q (tokens x heads x headDim) over `layer`; out like q.
    virtual void attend(int layer, const float* q, int heads, float* out) = 0;
    // MiniMax sparse attention of q over `layer`: the index queries (tokens x kvHeads x
    // msa.indexDim) choose each token's blocks among the index keys writeKv stored, then the
    // heads attend to those only; out like q. `chosen` (host, may be null) receives the choice.
    virtual void attendSparse(int layer, const float* q, const float* indexQ, int heads,
                              const SparseAttention& msa, float* out, BlockChoices* chosen) = 0;
    // gate = act(gate, up) element-wise over n values.
    virtual void gatedActivation(GateActivation kind, float* gate, const float* up,
                                 std::int64_t n) = 0;
    // x += y over n values.
    virtual void addResidual(float* x, const float* y, std::int64_t n) = 0;
    // x = 0 over n values.
    virtual void zero(float* x, std::int64_t n) = 0;
    // y (rows x hidden) += the routed experts' gated FFNs of x (rows x hidden), weighed by the
    // routing. experts/weights (host, rows x routing.used, may be null) receive the routing.
    virtual void mixtureOfExperts(const ExpertLayer& layer, const ExpertRouting& routing,
                                  GateActivation activation, const float* x, std::int64_t rows,
                                  float* y, int* experts, float* weights) = 0;
    // Copies n floats of an activation to the host (traces and tests; CUDA waits for them).
    virtual void download(const float* from, std::int64_t n, float* to) = 0;
    // Appends the vocabulary logits of every token with wantLogits (final RMSNorm `norm`, then
    // `output`) to the host vector `logits`; returns the first error of the pass.
    virtual Status finish(const float* x, const float* norm, float eps, const Linear& output,
                          std::vector<float>& logits) = 0;
    // As finish(), but each token with wantLogits gives the candidates its request asks for
    // (Model::forwardCandidates). Only a device backend does; the CPU keeps to finish().
    virtual bool samplesOnDevice() const { return false; }
    virtual Status finishCandidates(const float* x, const float* norm, float eps,
                                    const Linear& output,
                                    std::span<const CandidateRequest> requests,
                                    Candidates& candidates) {
        (void)x, (void)norm, (void)eps, (void)output, (void)requests, (void)candidates;
        return Status::unsupported(name() + ": sampling runs on the host");
    }
};

// The backend `where` names for a model of `config`: the CPU's, or CUDA's (Unsupported naming
// the reason when it cannot run this model; backend/cuda_backend.h).
Result<std::unique_ptr<DecoderBackend>> makeBackend(const ModelConfig& config,
                                                    const ModelBackend& where);

}  // namespace iris::inference
