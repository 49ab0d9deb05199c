#pragma once
// The vision tower of a multimodal model, loaded from its projector GGUF ("mmproj", as
// llama.cpp writes it: general.architecture = clip) and chosen by clip.projector_type. It turns
// a preprocessed image into embeddings the language model reads in place of token embeddings.
//
// A VisionModel is immutable once loaded (weights stay in the file's mapping, or in a packed
// copy made at load). encode() may be called from one thread at a time; the pool does the
// parallel work.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "inference/gguf/gguf_file.h"
#include "inference/status.h"
#include "inference/thread_pool.h"
#include "inference/vision/image_patches.h"

namespace iris::inference {

enum class ProjectorType { Qwen25VlMerger };

struct VisionConfig {
    ProjectorType projector = ProjectorType::Qwen25VlMerger;
    std::string projectorName;       // clip.projector_type as written in the file
    std::int64_t blocks = 0;         // clip.vision.block_count
    std::int64_t width = 0;          // clip.vision.embedding_length
    std::int64_t ffnSize = 0;        // clip.vision.feed_forward_length
    std::int64_t heads = 0;          // clip.vision.attention.head_count
    std::int64_t headDim = 0;        // width / heads
    std::int64_t projectionDim = 0;  // clip.vision.projection_dim: the language model's width
    int patchSize = 14;              // clip.vision.patch_size
    int mergeSize = 2;               // clip.vision.spatial_merge_size
    int windowSize = 112;            // clip.vision.window_size, pixels
    int fullAttentionPeriod = 0;  // clip.vision.n_wa_pattern: layer i is full when (i+1) % p == 0
    float normEps = 1e-6f;        // clip.vision.attention.layer_norm_epsilon
    std::array<float, 3> imageMean{0.48145466f, 0.4578275f, 0.40821073f};
    std::array<float, 3> imageStd{0.26862954f, 0.26130258f, 0.27577711f};
};

class VisionModel {
public:
    // Reads and checks the projector file (which must outlive the model). Unsupported for a
    // projector type Iris does not know, naming it; Corrupt/NotFound naming the key or tensor.
    static Result<std::unique_ptr<VisionModel>> load(const GgufFile& file);

    virtual ~VisionModel() = default;
    virtual const VisionConfig& config() const = 0;

    // Runs the tower and the projector on `image` (made with this model's patch, merge and
    // normalisation settings). `embeddings` receives image.tokenCount() rows of projectionDim
    // floats, merged tokens in row-major order of the (gridH/2) x (gridW/2) grid.
    // InvalidArgument when the image does not fit the model (patch size, grid not a multiple
    // of the merge size). Scratch, freed on return: about 5 x patchCount x width floats (140 MB
    // for a 1280x800 screenshot on Qwen2.5-VL) plus bounded per-thread attention rows.
    virtual Status encode(const ImagePatches& image, ThreadPool& pool,
                          std::vector<float>& embeddings) const = 0;
};

}  // namespace iris::inference
