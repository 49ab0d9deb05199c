#pragma once
// The routing half of a mixture of experts on the GPU (the expert products are
// matmulDecodeGrouped, the activations elementwise.cuh): sigmoid routing with a selection bias as
// inference/models/mixture_of_experts.h defines it, and the weighted sum of the chosen experts'
// outputs into the residual stream.

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace iris::kernels::cuda {

inline constexpr int kMaxExperts = 1024;
inline constexpr int kMaxExpertsUsed = 16;

// For each row r of router logits (rows x experts, row stride `stride`): the `used` experts of
// largest sigmoid(logit) + bias[e] (bias may be null), in that order, ties to the lower id, at
// expertIds + r * used; their weights sigmoid(logit), divided by their sum (clamped below at
// 6.1035e-5) when `normalise`, times `scale`, at weights + r * used. NaN scores rank last (the
// CPU's insertion keeps a NaN only while fewer than `used` experts have been seen).
cudaError_t routeSigmoid(const float* logits, std::int64_t rows, int experts, std::ptrdiff_t stride,
                         const float* bias, int used, bool normalise, float scale,
                         std::int32_t* expertIds, float* weights, cudaStream_t stream);

// y[r, j] += sum_{i < used} weights[r * used + i] * outputs[(r * used + i) * outStride + j] for
// r < rows, j < width (y's row stride yStride): the chosen experts' outputs, weighed.
cudaError_t addWeightedExperts(float* y, std::ptrdiff_t yStride, const float* outputs,
                               std::ptrdiff_t outStride, const float* weights, std::int64_t rows,
                               int used, std::int64_t width, cudaStream_t stream);

}  // namespace iris::kernels::cuda
