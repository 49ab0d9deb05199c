#pragma once
// The CPU backend: today's kernels (kernels/*.h) on host buffers with the engine's thread pool.
// Each operation is the exact call the decoder made before the backend existed, in the same
// order, so results are bit for bit what they were.

#include <memory>

#include "inference/backend/backend.h"

namespace iris::inference {

std::unique_ptr<DecoderBackend> makeCpuBackend();

}  // namespace iris::inference
