#pragma once
// CUDA element-wise steps of a forward pass, with the contracts of their CPU counterparts
// (kernels/rope.h, kernels/activation.h) on device pointers, on `stream`: rotary embedding, the
// gated and plain activations, residual additions and the embedding lookup. Each returns
// cudaErrorInvalidValue for a negative size or a null pointer where work is to be done, else the
// launch's error; all are asynchronous.

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/tensor_type.h"

namespace iris::kernels::cuda {

// ropeNeox (kernels/rope.h) for `tokens` tokens of `heads` vectors of headDim floats each,
// token t at x + t * tokenStride, with its own angles: cos/sin + t * (rotDims / 2). M-RoPE needs
// nothing else: its sections only change which position each angle comes from.
cudaError_t ropeNeox(float* x, std::int64_t tokens, std::ptrdiff_t tokenStride, int heads,
                     int headDim, int rotDims, const float* cos, const float* sin,
                     cudaStream_t stream);

enum class Activation {
    SwiGlu,     // out = silu(gate) * up
    SwiGluOai,  // MiniMax-M3: g = min(gate, 7), u = clamp(up, -7, 7), out = g sigmoid(1.702 g) (u +
                // 1)
    GeGlu,      // out = gelu(gate) * up, gelu's tanh approximation
    Silu,       // out = silu(x); up unused
    Gelu,       // out = gelu(x), tanh approximation; up unused
    GeluErf     // out = 0.5 x (1 + erf(x / sqrt 2)); up unused
};

// out[i] for i < n as `kind` says, x being the gate for the gated kinds. out may be x or up.
cudaError_t activate(Activation kind, const float* x, const float* up, float* out, std::int64_t n,
                     cudaStream_t stream);

// y[i] += x[i] for i < n (the residual connections).
cudaError_t addInPlace(float* y, const float* x, std::int64_t n, cudaStream_t stream);

// Row ids[r] of `table` (rows of width values of `type`, any type matmulDecode reads) as f32 at
// out + r * outStride, for r < count; width a multiple of 32 for the quantised types. An id
// outside [0, rows) gets a row of zeros, never a read outside the table (the engine checks ids
// against the vocabulary before they reach the device).
cudaError_t embeddingRows(TensorType type, const void* table, std::int64_t rows, std::int64_t width,
                          const std::int32_t* ids, std::int64_t count, float* out,
                          std::ptrdiff_t outStride, cudaStream_t stream);

}  // namespace iris::kernels::cuda
