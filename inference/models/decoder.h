#pragma once
// The dense pre-norm decoder shared by the Qwen2 family: token embedding, N layers of
// RMSNorm -> GQA self-attention (optional q/k/v biases, optional per-head q/k RMSNorm, NEOX or
// multimodal RoPE) -> residual -> RMSNorm -> SwiGLU FFN -> residual, then RMSNorm and the output
// projection (tied to the embedding when the file has no output.weight). Each architecture file
// (qwen2.cpp, qwen3.cpp, qwen2vl.cpp) reads its hyper-parameters and names its tensors; this
// file runs them as operations of a DecoderBackend (inference/backend/backend.h: the CPU's
// kernels or CUDA's), never calling a kernel itself.

#include <memory>
#include <string>
#include <vector>

#include "inference/gguf/gguf_file.h"
#include "inference/models/linear.h"
#include "inference/models/model.h"

namespace iris::inference {

struct DecoderLayer {
    const float* attnNorm = nullptr;
    Linear q, k, v, o;
    const float* qNorm = nullptr;  // per-head RMSNorm weights (headDim), Qwen3
    const float* kNorm = nullptr;
    const float* ffnNorm = nullptr;
    Linear gate, up, down;
};

struct DecoderWeights {
    const GgufTensor* tokenEmbedding = nullptr;  // (vocab, hidden) rows of any computable type
    const float* outputNorm = nullptr;
    Linear output;
    std::vector<DecoderLayer> layers;
};

// What an architecture file asks for when it binds its tensors.
struct DecoderTensorNames {
    bool qkvBias = false;  // blk.N.attn_{q,k,v}.bias required
    bool qkNorm = false;   // blk.N.attn_{q,k}_norm.weight required
};

// Reads the hyper-parameters every Qwen2-family file has under "<arch>.": block_count,
// embedding_length, feed_forward_length, attention.head_count(_kv), attention.key_length (default
// hidden / heads), context_length, attention.layer_norm_rms_epsilon, rope.freq_base, and the
// vocabulary size (from token_embd.weight).
Result<ModelConfig> readDecoderConfig(const GgufFile& file, const std::string& arch);

// Binds and shape-checks the tensors; errors name the file and the tensor.
Result<DecoderWeights> bindDecoderWeights(const GgufFile& file, const ModelConfig& config,
                                          const DecoderTensorNames& names);

// The model itself, on the backend `where` names (inference/backend/backend.h): on the CPU,
// weight matrices with a faster packed layout are packed here (a copy made once; the file's
// mapping stays for the others); on CUDA every weight is uploaded once in its GGUF type.
Result<std::unique_ptr<Model>> makeDecoderModel(ModelConfig config, DecoderWeights weights,
                                                const ModelBackend& where);

}  // namespace iris::inference
