#pragma once
// The CUDA backend of the dense decoder (backend.h): weights uploaded once in their GGUF type,
// the KV pool in device memory (a mirror of KvCache's pool, same block ids), every operation a
// kernel of kernels/cuda/ on one stream, and one synchronisation per forward pass, when the
// logits come back. Scratch is allocated at load for ModelBackend::maxBatchTokens and grows only
// when a batch (or a prefill's context) is larger than any before, never per token.

#include <memory>

#include "inference/backend/backend.h"

namespace iris::inference {

// Unsupported when Iris was built without CUDA, the device cannot be used, or the model's shapes
// are outside what the kernels take (head size a multiple of 32 up to 256, at most 16 query
// heads per KV head, k of every product a multiple of 32); the message names which.
Result<std::unique_ptr<DecoderBackend>> makeCudaBackend(const ModelConfig& config,
                                                        const ModelBackend& where);

}  // namespace iris::inference
