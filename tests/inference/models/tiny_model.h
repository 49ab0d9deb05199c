#pragma once
// Test support: tiny random Qwen2-family GGUF files made with GgufWriter, and a plain float64
// reference implementation of the same forward pass, written from the architecture description
// (docs: qwen25vl.md section 3), sharing no code with inference/models/.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "inference/gguf/gguf_file.h"
#include "kernels/tensor_type.h"

namespace iris::inference::testing {

struct TinyModelSpec {
    std::string arch = "qwen2";  // qwen2, qwen3 or qwen2vl
    std::int64_t vocab = 96;
    std::int64_t hidden = 64;
    std::int64_t layers = 2;
    std::int64_t heads = 4;
    std::int64_t kvHeads = 2;
    std::int64_t headDim = 16;  // written as key_length for qwen3
    std::int64_t ffn = 96;
    kernels::TensorType weightType = kernels::TensorType::F32;  // of the 2-D weights
    bool tiedEmbeddings = true;
    std::array<int, 4> sections{2, 3, 3, 0};  // qwen2vl: pairs per (t, h, w, e)
    float ropeBase = 10000.0f;
    float rmsEps = 1e-6f;
    unsigned seed = 1;
    float weightScale = 0.2f;
    // A byte-level vocabulary: ids 0..255 are the bytes, then <|endoftext|>, <|im_start|>,
    // <|im_end|> (control tokens; <|im_end|> is eos), then "[PAD<id>]" up to `vocab`.
    bool withTokenizer = false;
    // With the tokenizer: <|vision_start|>, <|vision_end|>, <|image_pad|> follow <|im_end|>.
    bool withVisionTokens = false;
    // With the tokenizer: no end-of-generation token (no eos id, the special tokens user-defined
    // rather than control), so that greedy generation always runs to maxTokens: a generation that
    // keeps a scheduler busy until it is cancelled.
    bool endless = false;
};

inline constexpr std::int32_t kTinyEndOfText = 256, kTinyImStart = 257, kTinyImEnd = 258;
inline constexpr std::int32_t kTinyVisionStart = 259, kTinyVisionEnd = 260, kTinyImagePad = 261;

// The serialized GGUF file. Weights are random normal * weightScale, quantised to weightType.
std::vector<std::byte> makeTinyModel(const TinyModelSpec& spec);

// The Qwen2-VL-shaped model the image tests share: byte vocabulary of 288 with the tokenizer and
// the vision tokens, weights scaled by 0.5, seed 5 (pair it with makeTinyMmproj).
TinyModelSpec tinyQwen2VlSpec();

// Float64 forward pass of the file's model over `tokens` with the given positions
// (positions[i] = (t, h, w, e)); returns vocab logits for every token, row-major.
std::vector<double> referenceLogits(const GgufFile& file, const std::vector<std::int32_t>& tokens,
                                    const std::vector<std::array<std::int32_t, 4>>& positions);
// The same with input vectors: where embeddings[i] is not null, token i's input is its `hidden`
// floats (an image token) instead of its embedding row.
std::vector<double> referenceLogits(const GgufFile& file, const std::vector<std::int32_t>& tokens,
                                    const std::vector<std::array<std::int32_t, 4>>& positions,
                                    const std::vector<const float*>& embeddings);

// Positions 0..n-1 in every component.
std::vector<std::array<std::int32_t, 4>> textPositions(std::size_t n, std::int32_t start = 0);

}  // namespace iris::inference::testing
