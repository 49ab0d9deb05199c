#pragma once
// One creator per architecture file; model.cpp's table maps general.architecture to them.

#include <memory>

#include "inference/gguf/gguf_file.h"
#include "inference/models/model.h"

namespace iris::inference {

// qwen2.cpp
Result<std::unique_ptr<Model>> createQwen2(const GgufFile& file, const ModelBackend& backend);
// qwen2vl.cpp
Result<std::unique_ptr<Model>> createQwen2Vl(const GgufFile& file, const ModelBackend& backend);
// qwen3.cpp
Result<std::unique_ptr<Model>> createQwen3(const GgufFile& file, const ModelBackend& backend);
// minimax_m3.cpp
Result<std::unique_ptr<Model>> createMiniMaxM3(const GgufFile& file, const ModelBackend& backend);

}  // namespace iris::inference
