#pragma once
// Rotary position embedding, NEOX layout (Qwen2, Qwen3, Qwen2-VL's M-RoPE, MiniMax-M3): the
// first rotDims dimensions of each head form pairs (i, i + rotDims/2).

namespace iris::kernels {

// For each of `heads` vectors of headDim floats in x, i < rotDims / 2:
//   (x[i], x[i + rotDims/2]) <- (x[i] cos[i] - x[i + rotDims/2] sin[i],
//                                x[i] sin[i] + x[i + rotDims/2] cos[i])
// Dimensions >= rotDims are left alone (partial rotary).
void ropeNeox(float* x, int heads, int headDim, int rotDims, const float* cos, const float* sin);

}  // namespace iris::kernels
