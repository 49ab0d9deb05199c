#pragma once
// RMSNorm as Qwen2/Qwen3/MiniMax-M3 use it (ggml_rms_norm followed by the weight multiply).

#include <cstddef>
#include <cstdint>

namespace iris::kernels {

// y[r, i] = x[r, i] / sqrt(mean_i(x[r, i]^2) + eps) * w[i]   for r < rows, i < cols
//   x: (rows, cols), row stride xStride elements;  w: (cols);  y: (rows, cols), row stride yStride.
// y may be x (in place) when the strides agree; otherwise the ranges must not overlap.
// Runs the variant for activeIsa() on the calling thread.
void rmsNorm(const float* x, std::ptrdiff_t xStride, const float* w, float* y,
             std::ptrdiff_t yStride, std::int64_t rows, std::int64_t cols, float eps);

}  // namespace iris::kernels
