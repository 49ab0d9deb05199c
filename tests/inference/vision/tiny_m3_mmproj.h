#pragma once
// Test support for MiniMax-M3 vision: a small random `minimax_m3` projector GGUF (docs/
// minimax-m3.md sections 2.2 and 6.3) whose weights are kept as the f32 values the file holds,
// and a tiny MiniMax-M3 language model (tests/inference/models/minimax_m3_reference.h) with a
// byte-level vocabulary that has M3's control tokens, so that the engine can load it.

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tensor_type.h"
#include "tests/inference/models/minimax_m3_reference.h"
#include "tests/inference/vision/tiny_mmproj.h"

namespace iris::inference::testing {

struct TinyM3MmprojOptions {
    std::int64_t width = 40;  // 2 heads of 20: 3-D RoPE of 3 x 6 dims, 2 pass through
    std::int64_t heads = 2;
    std::int64_t blocks = 2;
    std::int64_t ffn = 56;
    std::int64_t projection = 64;  // the language model's width
    std::int64_t patchSize = 14;
    kernels::TensorType matrixType = kernels::TensorType::F32;  // 2-D weights and patch kernel
    bool writeProjectionDim = true;  // clip.vision.projection_dim (else read from the merger)
    std::string omitTensor;
    std::string omitKey;
    std::string misshapeTensor;  // written with its last dimension one larger
    std::uint32_t seed = 3;
};

TinyMmproj makeTinyM3Mmproj(const TinyM3MmprojOptions& options);

// Token ids of the tiny M3 vocabulary: bytes 0..255, then these control tokens, then padding.
inline constexpr std::int32_t kM3Begin = 256, kM3Header = 257, kM3EndOfMessage = 258,
                              kM3Image = 259, kM3ImageStart = 260, kM3ImageEnd = 261;

// makeM3Model(spec) with the tokenizer above (spec.vocab must be at least 272).
std::vector<std::byte> makeM3ModelWithTokenizer(const M3Spec& spec);

}  // namespace iris::inference::testing
