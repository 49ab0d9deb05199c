#include <algorithm>
#include <cmath>

#include "kernels/cuda/sampling.cuh"
#include "kernels/cuda/warp.cuh"

namespace iris::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kSlice = 4096;  // logits per first-pass block, kept in shared memory

__global__ void penaltiesKernel(float* logits, const std::int32_t* __restrict__ ids,
                                const std::int32_t* __restrict__ counts, int count,
                                float repetition, float presence, float frequency) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    float& logit = logits[ids[i]];
    logit = logit > 0.0f ? logit / repetition : logit * repetition;
    logit -= float(counts[i]) * frequency + presence;
}

// The ranking of inference/sampler.cpp: a before b when its logit is larger, or equal with a
// smaller id. NaN logits rank last.
__device__ bool before(float a, std::int32_t aId, float b, std::int32_t bId) {
    if (isnan(b)) return !isnan(a) || aId < bId;
    if (isnan(a)) return false;
    return a > b || (a == b && aId < bId);
}

struct Best {
    float value;
    std::int32_t id;
    int slot;  // where it sits in the shared arrays, to retire it
};

__device__ Best better(Best a, Best b) {
    if (b.slot < 0) return a;
    if (a.slot < 0) return b;
    return before(a.value, a.id, b.value, b.id) ? a : b;
}

// The block's best of values[0..n) (ids alongside); every thread gets it. Retired slots hold
// slot markers of -1 through `alive`.
__device__ Best blockBest(const float* values, const std::int32_t* ids, const bool* alive, int n) {
    __shared__ Best warpBest[kThreads / kWarp];
    Best best{0.0f, 0, -1};
    for (int i = threadIdx.x; i < n; i += kThreads)
        if (alive[i]) best = better(best, Best{values[i], ids[i], i});
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
        Best other;
        other.value = __shfl_xor_sync(0xffffffffu, best.value, offset);
        other.id = __shfl_xor_sync(0xffffffffu, best.id, offset);
        other.slot = __shfl_xor_sync(0xffffffffu, best.slot, offset);
        best = better(best, other);
    }
    if (threadIdx.x % kWarp == 0) warpBest[threadIdx.x / kWarp] = best;
    __syncthreads();
    best = Best{0.0f, 0, -1};
    for (int w = 0; w < kThreads / kWarp; ++w)
        best = better(best, warpBest[w]);
    __syncthreads();  // warpBest is reused by the next call
    return best;
}

// Selects the k best of n shared entries in order, writing them to outIds/outValues.
__device__ void selectInOrder(float* values, std::int32_t* ids, bool* alive, int n, int k,
                              std::int32_t* outIds, float* outValues) {
    for (int j = 0; j < k && j < n; ++j) {
        const Best best = blockBest(values, ids, alive, n);
        if (threadIdx.x == 0) {  // nothing alive left: an empty place, skipped when merging
            outIds[j] = best.slot < 0 ? -1 : best.id;
            outValues[j] = best.slot < 0 ? NAN : best.value;
            if (best.slot >= 0) alive[best.slot] = false;
        }
        __syncthreads();
    }
}

// First pass: block (slice, row) keeps the k best of its kSlice logits.
__global__ void sliceTopKernel(const float* __restrict__ logits, std::int64_t vocab,
                               std::ptrdiff_t stride, int k, int slices, std::int32_t* partIds,
                               float* partValues) {
    __shared__ float values[kSlice];
    __shared__ std::int32_t ids[kSlice];
    __shared__ bool alive[kSlice];
    const int slice = blockIdx.x, row = blockIdx.y;
    const std::int64_t begin = std::int64_t(slice) * kSlice;
    const int n = int(std::min<std::int64_t>(kSlice, vocab - begin));
    for (int i = threadIdx.x; i < n; i += kThreads) {
        values[i] = logits[row * stride + begin + i];
        ids[i] = std::int32_t(begin + i);
        alive[i] = true;
    }
    __syncthreads();
    const std::int64_t out = (std::int64_t(row) * slices + slice) * k;
    selectInOrder(values, ids, alive, n, k, partIds + out, partValues + out);
    for (int j = n + threadIdx.x; j < k; j += kThreads) {  // a short last slice: empty places
        partIds[out + j] = -1;
        partValues[out + j] = NAN;
    }
}

// Second pass: one block per row merges the slices' candidates, in chunks that fit in shared
// memory (each chunk's k best join the running k best).
__global__ void mergeTopKernel(const std::int32_t* __restrict__ partIds,
                               const float* __restrict__ partValues, int candidates, int k,
                               std::int32_t* outIds, float* outValues) {
    __shared__ float values[kSlice];
    __shared__ std::int32_t ids[kSlice];
    __shared__ bool alive[kSlice];
    const int row = blockIdx.x;
    const std::int32_t* rowIds = partIds + std::int64_t(row) * candidates;
    const float* rowValues = partValues + std::int64_t(row) * candidates;
    int held = 0;  // the running best, kept in outIds/outValues of this row
    for (int begin = 0; begin < candidates; begin += kSlice - kMaxCandidates) {
        const int fresh = min(kSlice - kMaxCandidates, candidates - begin);
        for (int i = threadIdx.x; i < held; i += kThreads) {
            values[i] = outValues[std::int64_t(row) * k + i];
            ids[i] = outIds[std::int64_t(row) * k + i];
        }
        for (int i = threadIdx.x; i < fresh; i += kThreads) {
            values[held + i] = rowValues[begin + i];
            ids[held + i] = rowIds[begin + i];
        }
        for (int i = threadIdx.x; i < held + fresh; i += kThreads)
            alive[i] = ids[i] >= 0;
        __syncthreads();
        selectInOrder(values, ids, alive, held + fresh, k, outIds + std::int64_t(row) * k,
                      outValues + std::int64_t(row) * k);
        held = min(k, held + fresh);
        __syncthreads();
    }
}

int slicesFor(std::int64_t vocab) {
    return int((vocab + kSlice - 1) / kSlice);
}

}  // namespace

cudaError_t applyPenalties(float* logits, const std::int32_t* ids, const std::int32_t* counts,
                           int count, float repetition, float presence, float frequency,
                           cudaStream_t stream) {
    if (count < 0 || !(repetition > 0.0f)) return cudaErrorInvalidValue;
    if (count == 0) return cudaSuccess;
    if (logits == nullptr || ids == nullptr || counts == nullptr) return cudaErrorInvalidValue;
    penaltiesKernel<<<(count + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
        logits, ids, counts, count, repetition, presence, frequency);
    return cudaGetLastError();
}

std::int64_t topCandidatesScratchBytes(int rows, std::int64_t vocab, int k) {
    return std::int64_t(rows) * slicesFor(vocab) * k *
           std::int64_t(sizeof(float) + sizeof(std::int32_t));
}

cudaError_t topCandidates(const float* logits, int rows, std::int64_t vocab, std::ptrdiff_t stride,
                          int k, std::int32_t* ids, float* values, void* scratch,
                          cudaStream_t stream) {
    if (rows < 0 || vocab <= 0 || k < 1 || k > kMaxCandidates || k > vocab || stride < vocab ||
        rows > 65535)
        return cudaErrorInvalidValue;
    if (rows == 0) return cudaSuccess;
    if (logits == nullptr || ids == nullptr || values == nullptr || scratch == nullptr)
        return cudaErrorInvalidValue;
    const int slices = slicesFor(vocab);
    auto* partValues = static_cast<float*>(scratch);
    auto* partIds = reinterpret_cast<std::int32_t*>(partValues + std::int64_t(rows) * slices * k);
    sliceTopKernel<<<dim3(unsigned(slices), unsigned(rows)), kThreads, 0, stream>>>(
        logits, vocab, stride, k, slices, partIds, partValues);
    if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
    mergeTopKernel<<<unsigned(rows), kThreads, 0, stream>>>(partIds, partValues, slices * k, k, ids,
                                                            values);
    return cudaGetLastError();
}

}  // namespace iris::kernels::cuda
