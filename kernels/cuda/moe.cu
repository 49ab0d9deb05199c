#include <algorithm>
#include <cmath>

#include "kernels/cuda/moe.cuh"
#include "kernels/cuda/warp.cuh"

namespace iris::kernels::cuda {
namespace {

constexpr int kPerLane = kMaxExperts / kWarp;

// a ranks before b: larger score, or equal with the lower id; NaN last.
__device__ bool ranksBefore(float a, int aId, float b, int bId) {
    if (isnan(b)) return !isnan(a) || aId < bId;
    if (isnan(a)) return false;
    return a > b || (a == b && aId < bId);
}

// One warp per row: each lane holds the scores of experts lane, lane + 32, ...; `used` rounds of
// a warp-wide best pick the experts in order, a lane's taken experts marked in a bit mask.
__global__ void routeSigmoidKernel(const float* __restrict__ logits, std::int64_t rows, int experts,
                                   std::ptrdiff_t stride, const float* __restrict__ bias, int used,
                                   bool normalise, float scale,
                                   std::int32_t* __restrict__ expertIds,
                                   float* __restrict__ weights) {
    const std::int64_t row = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
    if (row >= rows) return;
    const int lane = threadIdx.x % kWarp;
    const float* l = logits + row * stride;
    float score[kPerLane];
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
        const int e = lane + kWarp * i;
        score[i] =
            e < experts ? 1.0f / (1.0f + expf(-l[e])) + (bias != nullptr ? bias[e] : 0.0f) : NAN;
    }
    std::uint32_t taken = 0;
    float chosenSigmoid[kMaxExpertsUsed];
    float sum = 0.0f;
    for (int pick = 0; pick < used; ++pick) {
        float best = NAN;
        int bestId = experts;  // no expert: ranks after every real one
        for (int i = 0; i < kPerLane; ++i) {
            const int e = lane + kWarp * i;
            if (e < experts && !(taken >> i & 1u) && ranksBefore(score[i], e, best, bestId)) {
                best = score[i];
                bestId = e;
            }
        }
        for (int offset = kWarp / 2; offset > 0; offset /= 2) {
            const float otherScore = __shfl_xor_sync(0xffffffffu, best, offset);
            const int otherId = __shfl_xor_sync(0xffffffffu, bestId, offset);
            if (ranksBefore(otherScore, otherId, best, bestId)) {
                best = otherScore;
                bestId = otherId;
            }
        }
        if (bestId % kWarp == lane) taken |= 1u << (bestId / kWarp);
        const float sigmoid = 1.0f / (1.0f + expf(-l[bestId]));
        chosenSigmoid[pick] = sigmoid;
        sum += sigmoid;
        if (lane == 0) expertIds[row * used + pick] = bestId;
    }
    const float norm = normalise ? 1.0f / fmaxf(sum, 6.1035e-5f) : 1.0f;
    if (lane == 0)
        for (int pick = 0; pick < used; ++pick)
            weights[row * used + pick] = chosenSigmoid[pick] * norm * scale;
}

__global__ void addWeightedKernel(float* y, std::ptrdiff_t yStride, const float* __restrict__ out,
                                  std::ptrdiff_t outStride, const float* __restrict__ weights,
                                  std::int64_t rows, int used, std::int64_t width) {
    for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * width;
         i += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t r = i / width, j = i % width;
        float acc = 0.0f;
        for (int e = 0; e < used; ++e)
            acc += weights[r * used + e] * out[(r * used + e) * outStride + j];
        y[r * yStride + j] += acc;
    }
}

}  // namespace

cudaError_t routeSigmoid(const float* logits, std::int64_t rows, int experts, std::ptrdiff_t stride,
                         const float* bias, int used, bool normalise, float scale,
                         std::int32_t* expertIds, float* weights, cudaStream_t stream) {
    if (rows < 0 || experts < 1 || experts > kMaxExperts || used < 1 || used > kMaxExpertsUsed ||
        used > experts || stride < experts)
        return cudaErrorInvalidValue;
    if (rows == 0) return cudaSuccess;
    if (logits == nullptr || expertIds == nullptr || weights == nullptr)
        return cudaErrorInvalidValue;
    constexpr int kThreads = 128;  // four rows per block
    const std::int64_t blocks = (rows * kWarp + kThreads - 1) / kThreads;
    if (blocks > INT32_MAX) return cudaErrorInvalidValue;
    routeSigmoidKernel<<<unsigned(blocks), kThreads, 0, stream>>>(
        logits, rows, experts, stride, bias, used, normalise, scale, expertIds, weights);
    return cudaGetLastError();
}

cudaError_t addWeightedExperts(float* y, std::ptrdiff_t yStride, const float* outputs,
                               std::ptrdiff_t outStride, const float* weights, std::int64_t rows,
                               int used, std::int64_t width, cudaStream_t stream) {
    if (rows < 0 || used < 1 || width < 0) return cudaErrorInvalidValue;
    if (rows == 0 || width == 0) return cudaSuccess;
    if (y == nullptr || outputs == nullptr || weights == nullptr || (rows > 1 && yStride < width) ||
        outStride < width)
        return cudaErrorInvalidValue;
    constexpr int kThreads = 256;
    const auto grid =
        unsigned(std::clamp<std::int64_t>((rows * width + kThreads - 1) / kThreads, 1, 65535));
    addWeightedKernel<<<grid, kThreads, 0, stream>>>(y, yStride, outputs, outStride, weights, rows,
                                                     used, width);
    return cudaGetLastError();
}

}  // namespace iris::kernels::cuda
