#pragma once
// MiniMax-M3 text model (docs/minimax-m3.md sections 1-3): pre-norm decoder with per-head q/k
// RMSNorm, partial NEOX rotary and GQA; the first leading_dense_block_count layers have dense
// attention and a dense swigluoai FFN, the others MiniMax Sparse Attention (MSA) and a sigmoid-
// routed mixture of experts plus one shared expert.
//
// Split over two files: minimax_m3.cpp (hyper-parameters, tensors, the factory) and
// minimax_m3_model.cpp (the forward pass, as operations of a DecoderBackend: the CPU's or
// CUDA's, inference/backend/backend.h). This header is their shared inside plus the test hooks.

#include <cstdint>
#include <memory>
#include <vector>

#include "inference/gguf/gguf_file.h"
#include "inference/models/linear.h"
#include "inference/models/mixture_of_experts.h"
#include "inference/models/model.h"

namespace iris::inference {

// What forward() decided for each token of the last batch, for tests. Per layer l (outer index,
// all layers), per batch token t:
struct MiniMaxM3Trace {
    // MoE layers: the chosen experts in choice order (descending biased score) and their final
    // weights (normalised, scaled). Empty for dense layers.
    std::vector<std::vector<std::vector<int>>> experts;
    std::vector<std::vector<std::vector<float>>> expertWeights;
    // Sparse layers while MSA runs: per KV group, the selection blocks attended to (ascending).
    std::vector<std::vector<std::vector<std::vector<std::int32_t>>>> blocks;
    // Sparse layers: what attention took and gave per token, f32 after norms and rotary: query
    // heads (heads x headDim), index queries (kvHeads x indexDim), the token's own K and V
    // (kvHeads x headDim) and index key, and the attention output (heads x headDim).
    struct Attention {
        std::vector<float> q, indexQ, k, v, indexKey, out;
    };
    std::vector<std::vector<Attention>> attention;  // [layer][token]; empty for dense layers
};

// Makes forward() of a MiniMax-M3 model fill *trace (reset at each call); nullptr stops it.
// Returns false (and does nothing) for other models.
bool traceMiniMaxM3(Model& model, MiniMaxM3Trace* trace);

namespace m3 {

struct Layer {
    const float* attnNorm = nullptr;
    Linear q, k, v, o;
    const float* qNorm = nullptr;  // headDim, shared by all heads
    const float* kNorm = nullptr;
    const float* ffnNorm = nullptr;
    bool sparse = false;  // MSA attention and MoE FFN (layers >= leading dense count)
    // Dense layers: the FFN. Sparse layers: the shared expert.
    Linear gate, up, down;
    // Sparse layers only. The router's bias (exp_probs_b) is used to choose, not to weigh.
    ExpertLayer experts;
    Linear indexQ, indexK;  // hidden -> indexHeads * indexDim, hidden -> indexDim
    const float* indexQNorm = nullptr;
    const float* indexKNorm = nullptr;
};

struct Hyper {
    std::int64_t leadingDense = 0;
    std::int64_t denseFfn = 0;
    std::int64_t expertFfn = 0;  // also the shared expert's width (times sharedExperts)
    std::int64_t sharedExperts = 0;
    ExpertRouting routing;  // sigmoid with selection bias (section 3.9)
    int indexHeads = 0;     // == kvHeads
    int indexDim = 0;
    int topK = 0;
    int blockSize = 0;  // selection block, tokens
    int localBlocks = 1;
};

struct Weights {
    const GgufTensor* tokenEmbedding = nullptr;
    const float* outputNorm = nullptr;
    Linear output;
    std::vector<Layer> layers;
};

// The model (minimax_m3_model.cpp) on the backend `where` names; its weights are adopted by
// that backend (packed on the CPU, uploaded on CUDA).
Result<std::unique_ptr<Model>> makeModel(ModelConfig config, Hyper hyper, Weights weights,
                                         const ModelBackend& where);

}  // namespace m3
}  // namespace iris::inference
