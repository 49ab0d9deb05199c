#pragma once
// What the vision towers (one file per projector type) share: binding the mmproj's tensors
// (the models' TensorBinder with the towers' options), metadata helpers, the linear layer (the
// models' Linear, run through gemm for float weights) and the image check. Internal to
// inference/vision.

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "inference/gguf/gguf_file.h"
#include "inference/models/linear.h"
#include "inference/models/tensor_binder.h"
#include "inference/thread_pool.h"
#include "inference/vision/image_patches.h"
#include "inference/vision/vision_model.h"
#include "kernels/gemm.h"
#include "kernels/tensor_type.h"

namespace iris::inference::vision {

// y (m rows, stride yStride) = x (m rows of l.in, stride xStride) W^T + b, columns split over
// the pool. f32/f16/bf16 weights go through kernels::gemm with `precision`; quantised weights
// through kernels::matmul on 8-bit activations.
void applyLinear(const Linear& l, kernels::GemmPrecision precision, const float* x,
                 std::ptrdiff_t xStride, std::int64_t m, float* y, std::ptrdiff_t yStride,
                 ThreadPool& pool);

// The binder of a tower's tensors (the one TensorBinder): 1-D tensors of f32, f16 or bf16 read
// as f32 (copies kept in `copies`), quantised matrices only with rows of whole blocks.
TensorBinder towerBinder(const GgufFile& file, std::deque<std::vector<float>>& copies);

// The two time slices of the Conv3d patch kernel (v.patch_embd.weight and .weight.1,
// {p, p, 3, C} each, f32, f16 or bf16) as one (C, 3*2*p*p) f32 matrix whose columns follow
// ImagePatches' [channel][frame][py][px] layout: a still image's two equal frames then give
// conv(slice 0) + conv(slice 1), as llama.cpp computes.
Result<std::vector<float>> bindPatchKernel(const TensorBinder& bind, std::int64_t patch,
                                           std::int64_t width);

// Metadata, with errors naming the file and the key. A size is positive and at most 2^24.
Result<std::int64_t> positiveInteger(const GgufFile& file, const std::string& key);
Result<std::int64_t> optionalPositiveInteger(const GgufFile& file, const std::string& key,
                                             std::int64_t fallback);
// The clip.vision.* keys every tower has: block_count, embedding_length, feed_forward_length,
// attention.head_count and patch_size (required); spatial_merge_size,
// attention.layer_norm_epsilon, image_mean and image_std (optional: `c` keeps its value).
Status readCommonConfig(const GgufFile& file, VisionConfig& c);

// InvalidArgument when `image` was not made for `config` (patch and merge size, two frames,
// grid a multiple of the merge size, value count); OutOfRange above `maxPatches` patches.
Status checkImagePatches(const ImagePatches& image, const VisionConfig& config,
                         std::int64_t maxPatches);

// Bidirectional multi-head attention in which the rows of each span [begin, end) attend to that
// span only (Qwen2.5-VL's windows; one span of all rows for full attention). q and k are
// rows x (heads x headDim) with the softmax scale already in q, vt is V transposed
// ((heads x headDim) x rows), out is rows x (heads x headDim). Tasks of at most 256 queries of
// one head run on the pool; their scratch is bounded by 256 x the longest span.
void spanAttention(const float* q, const float* k, const float* vt, float* out, std::int64_t rows,
                   std::int64_t heads, std::int64_t headDim,
                   const std::vector<std::pair<std::int64_t, std::int64_t>>& spans,
                   kernels::GemmPrecision precision, ThreadPool& pool);

}  // namespace iris::inference::vision
