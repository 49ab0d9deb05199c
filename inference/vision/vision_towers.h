#pragma once
// The towers VisionModel::load chooses between (one file per architecture). Internal to
// inference/vision: callers use VisionModel::load.

#include <memory>

#include "inference/gguf/gguf_file.h"
#include "base/status.h"
#include "inference/vision/vision_model.h"

namespace iris::inference {

// clip.projector_type "qwen2.5vl_merger": Qwen2.5-VL (UI-TARS-1.5, OpenCUA). qwen25vl_vision.cpp.
Result<std::unique_ptr<VisionModel>> createQwen25VlVision(const GgufFile& file);

// clip.projector_type "minimax_m3": MiniMax-M3's CLIP-style tower with 3-D RoPE, per-patch
// projector and 2x2 merge MLP. minimax_m3_vision.cpp.
Result<std::unique_ptr<VisionModel>> createMiniMaxM3Vision(const GgufFile& file);

}  // namespace iris::inference
