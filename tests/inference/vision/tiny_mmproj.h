#pragma once
// A small random Qwen2.5-VL projector GGUF (docs/qwen25vl.md section 6.2), written with
// GgufWriter, for the vision tower's tests (and any test that needs an mmproj). The weights are
// kept as the f32 values the file really holds (after rounding to the tensor type), so a
// reference can use them.

#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "inference/gguf/gguf_writer.h"
#include "kernels/tensor_type.h"

namespace iris::inference::testing {

struct TinyMmprojOptions {
    std::int64_t width = 64;
    std::int64_t heads = 2;
    std::int64_t blocks = 4;
    std::int64_t ffn = 96;
    std::int64_t projection = 48;  // clip.vision.projection_dim
    std::int64_t patchSize = 14;
    std::int64_t windowPattern = 2;                             // clip.vision.n_wa_pattern
    kernels::TensorType matrixType = kernels::TensorType::F32;  // 2-D weights and patch kernel
    std::string projectorType = "qwen2.5vl_merger";
    bool useSilu = true;  // clip.use_silu; false writes it false (llama.cpp then gates with GELU)
    std::string omitTensor;      // leave this tensor out
    std::string omitKey;         // leave this metadata key out
    std::string misshapeTensor;  // write this tensor with its last dimension one larger
    std::uint32_t seed = 1;
};

struct TinyMmproj {
    std::vector<std::byte> bytes;                       // the GGUF file
    std::map<std::string, std::vector<float>> weights;  // name -> values in ggml (flat) order
};

TinyMmproj makeTinyMmproj(const TinyMmprojOptions& options);

// Adds `name` to `writer`: values drawn uniformly from [center - range, center + range] by `rng`
// in ggml (flat) order, stored as `type`; `mmproj.weights` keeps the values the file then holds
// (after rounding to the type), which is what a reference must compute with.
void addRandomTensor(GgufWriter& writer, TinyMmproj& mmproj, std::mt19937& rng,
                     const std::string& name, std::vector<std::int64_t> shape,
                     kernels::TensorType type, float center, float range);

}  // namespace iris::inference::testing
