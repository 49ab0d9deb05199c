#pragma once
// The vision tower of a multimodal model, loaded from its projector GGUF ("mmproj", as
// llama.cpp writes it: general.architecture = clip) and chosen by clip.projector_type. It turns
// a preprocessed image into embeddings the language model reads in place of token embeddings.
//
// A VisionModel is immutable once loaded (weights stay in the file's mapping, or in a packed
// copy made at load). encode() and the encodings' advance() may run on one thread at a time;
// the pool does the parallel work.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "inference/gguf/gguf_file.h"
#include "inference/thread_pool.h"
#include "inference/vision/image_patches.h"
#include "kernels/gemm.h"

namespace iris::inference {

enum class ProjectorType { Qwen25VlMerger, MiniMaxM3 };

// One image on its way through a tower, in stages that can run apart: the patch embedding, each
// block, the projector. The serving scheduler runs one stage between two forward passes of the
// language model, so that a screenshot delays the decoding sequences by one stage at a time,
// never by its whole encode. Holds the encode's scratch (see VisionModel::encode) until done;
// the image it was begun with must outlive it.
class VisionEncoding {
public:
    // `run(i, pool)` does stage i; `take()` hands over the embeddings once all have run.
    VisionEncoding(int stages, std::function<void(int, ThreadPool&)> run,
                   std::function<std::vector<float>()> take)
        : m_stages(stages), m_run(std::move(run)), m_take(std::move(take)) {}

    // Runs the next stage. Not once done().
    void advance(ThreadPool& pool) { m_run(m_next++, pool); }
    bool done() const { return m_next >= m_stages; }
    int stages() const { return m_stages; }
    // Once done: image.tokenCount() rows of projectionDim floats (see VisionModel::encode).
    std::vector<float> takeEmbeddings() { return m_take(); }

private:
    int m_stages;
    int m_next = 0;
    std::function<void(int, ThreadPool&)> m_run;
    std::function<std::vector<float>()> m_take;
};

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
    // The tower's smart-resize budget when the engine is not given one: llama.cpp's per projector
    // (Qwen2.5-VL 8 to 4096 merged tokens, MiniMax-M3 8 to 576).
    std::int64_t minPixels = 8 * 28 * 28;
    std::int64_t maxPixels = 4096 * 28 * 28;
    // The text around an image's embeddings in a raw prompt, tokenised as text (llama.cpp's mtmd).
    std::string imageBegin = "<|vision_start|>";
    std::string imageEnd = "<|vision_end|>";
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
    // All stages of beginEncode at once.
    Status encode(const ImagePatches& image, ThreadPool& pool,
                  std::vector<float>& embeddings) const;

    // Checks `image` as encode does and returns its encoding, to be advanced stage by stage
    // (scratch is allocated by the first stage).
    virtual Result<std::unique_ptr<VisionEncoding>> beginEncode(
        const ImagePatches& image) const = 0;

    // How encode forms its products (kernels/gemm.h): F32 until set. Not while encode runs.
    void setPrecision(kernels::GemmPrecision precision) { m_precision = precision; }
    kernels::GemmPrecision precision() const { return m_precision; }

private:
    kernels::GemmPrecision m_precision = kernels::GemmPrecision::F32;
};

// EngineOptions::visionPrecision. Bf16 rounds the operands of every product in the tower to
// bfloat16 and sums in f32: the precision these towers were trained and are served in (the
// released weights are bf16, and bf16 -> f16 -> bf16 is exact), several times faster than F32
// where AMX tiles or AVX512-BF16 dot products do it. Auto: Bf16 where kernels::gemmBf16Faster()
// measured it faster, F32 elsewhere.
enum class VisionPrecision { Auto, F32, Bf16 };

kernels::GemmPrecision resolveVisionPrecision(VisionPrecision precision);
std::string_view visionPrecisionName(VisionPrecision precision);  // "auto", "f32", "bf16"
std::optional<VisionPrecision> parseVisionPrecision(std::string_view name);

}  // namespace iris::inference
