#include <algorithm>
#include <cfloat>
#include <cmath>

#include "kernels/cuda/sampling.cuh"
#include "kernels/cuda/sparse_select.cuh"
#include "kernels/cuda/warp.cuh"

namespace iris::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarp;
constexpr int kMaxGroups = 16;
constexpr int kMaxDim = 256;

// One thread block per (selection block, sequence); a warp per position, lanes along the key.
__global__ void __launch_bounds__(kThreads)
    blockScoresKernel(const float* __restrict__ q, int groups, const float* __restrict__ keys,
                      const std::int32_t* __restrict__ tables, std::ptrdiff_t tableStride,
                      int pageSize, int dim, const std::int32_t* __restrict__ lengths,
                      int selectionBlock, int maxBlocks, float* __restrict__ scores) {
    __shared__ float warpMax[kWarps][kMaxGroups];
    const int block = blockIdx.x, seq = blockIdx.y;
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    const std::int64_t length = lengths[seq];
    const std::int64_t begin = std::int64_t(block) * selectionBlock;
    const std::int64_t end = min(begin + selectionBlock, length);
    float best[kMaxGroups];
    for (int r = 0; r < kMaxGroups; ++r)
        best[r] = -INFINITY;
    const std::int32_t* table = tables + seq * tableStride;
    const float* qs = q + std::int64_t(seq) * groups * dim;
    for (std::int64_t t = begin + warp; t < end; t += kWarps) {
        const float* key =
            keys + (std::int64_t(table[t / pageSize]) * pageSize + t % pageSize) * dim;
        float k[kMaxDim / kWarp];
#pragma unroll
        for (int i = 0; i < kMaxDim / kWarp; ++i)
            k[i] = lane + kWarp * i < dim ? key[lane + kWarp * i] : 0.0f;
#pragma unroll
        for (int r = 0; r < kMaxGroups; ++r) {
            if (r >= groups) break;
            float dot = 0.0f;
#pragma unroll
            for (int i = 0; i < kMaxDim / kWarp; ++i)
                if (lane + kWarp * i < dim) dot += qs[r * dim + lane + kWarp * i] * k[i];
            best[r] = fmaxf(best[r], warpSum(dot));
        }
    }
    if (lane == 0)
        for (int r = 0; r < groups; ++r)
            warpMax[warp][r] = best[r];
    __syncthreads();
    if (threadIdx.x < groups) {
        const int r = threadIdx.x;
        float m = -INFINITY;
        for (int w = 0; w < kWarps; ++w)
            m = fmaxf(m, warpMax[w][r]);
        scores[(std::int64_t(seq) * groups + r) * maxBlocks + block] = m;
    }
}

// The ranking topCandidates applies, arranged so that it makes selectTopBlocks' choice: forced
// blocks +inf (first, in block order), blocks that cannot be chosen (NaN, -inf, past the
// sequence) NaN (last).
__global__ void rankableScoresKernel(const float* __restrict__ scores, int groups,
                                     const std::int32_t* __restrict__ lengths, int selectionBlock,
                                     int maxBlocks, int localBlocks, float* __restrict__ work) {
    const int row = blockIdx.y;
    const std::int64_t length = lengths[row / groups];
    const std::int64_t blocks = (length + selectionBlock - 1) / selectionBlock;
    for (int b = blockIdx.x * blockDim.x + threadIdx.x; b < maxBlocks;
         b += gridDim.x * blockDim.x) {
        const float s = scores[std::int64_t(row) * maxBlocks + b];
        // A real +inf ranks just below the forced blocks' marker, so they are never displaced.
        float v = s == INFINITY ? FLT_MAX : s;
        if (b >= blocks || isnan(s) || s == -INFINITY) v = NAN;
        if (b < blocks && b >= blocks - localBlocks) v = INFINITY;
        work[std::int64_t(row) * maxBlocks + b] = v;
    }
}

// Keeps the candidates that can be chosen (NaN ranks last) and sorts them by block id; a thread
// per row, k <= 256.
__global__ void finishSelectionKernel(const std::int32_t* __restrict__ ids,
                                      const float* __restrict__ values, int rows, int k, int topK,
                                      std::int32_t* __restrict__ selected,
                                      std::int32_t* __restrict__ counts) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    std::int32_t* out = selected + std::int64_t(row) * topK;
    int n = 0;
    for (int j = 0; j < k; ++j) {
        const float v = values[std::int64_t(row) * k + j];
        const std::int32_t id = ids[std::int64_t(row) * k + j];
        if (isnan(v) || id < 0) continue;
        int i = n++;
        for (; i > 0 && out[i - 1] > id; --i)
            out[i] = out[i - 1];
        out[i] = id;
    }
    counts[row] = n;
}

}  // namespace

cudaError_t indexerBlockScores(const float* q, int seqs, int groups, const PagedIndexKeys& keys,
                               std::ptrdiff_t tableStride, const std::int32_t* lengths,
                               int selectionBlock, int maxBlocks, float* scores,
                               cudaStream_t stream) {
    if (seqs < 0 || groups < 1 || groups > kMaxGroups || keys.dim <= 0 || keys.dim % kWarp != 0 ||
        keys.dim > kMaxDim || keys.pageSize <= 0 || selectionBlock <= 0 || maxBlocks < 0 ||
        tableStride < 0 ||
        seqs > 65535)
        return cudaErrorInvalidValue;
    if (seqs == 0 || maxBlocks == 0) return cudaSuccess;
    if (q == nullptr || keys.keys == nullptr || keys.blockTable == nullptr || lengths == nullptr ||
        scores == nullptr)
        return cudaErrorInvalidValue;
    blockScoresKernel<<<dim3(unsigned(maxBlocks), unsigned(seqs)), kThreads, 0, stream>>>(
        q, groups, keys.keys, keys.blockTable, tableStride, keys.pageSize, keys.dim, lengths,
        selectionBlock, maxBlocks, scores);
    return cudaGetLastError();
}

namespace {

// The parts of selectTopBlocks' scratch, in order.
struct SelectionScratch {
    float* work;        // rows x maxBlocks rankable scores
    std::int32_t* ids;  // rows x k candidates
    float* values;      // rows x k
    void* candidates;   // topCandidates' own scratch
};

SelectionScratch carve(void* scratch, int rows, int maxBlocks, int k) {
    auto* base = static_cast<float*>(scratch);
    SelectionScratch parts;
    parts.work = base;
    parts.ids = reinterpret_cast<std::int32_t*>(base + std::int64_t(rows) * maxBlocks);
    parts.values = reinterpret_cast<float*>(parts.ids + std::int64_t(rows) * k);
    parts.candidates = parts.values + std::int64_t(rows) * k;
    return parts;
}

}  // namespace

std::int64_t selectTopBlocksScratchBytes(int rows, int maxBlocks, int topK) {
    const int k = std::min(topK, maxBlocks);
    return (std::int64_t(rows) * maxBlocks + 2 * std::int64_t(rows) * k) * 4 +
           topCandidatesScratchBytes(rows, maxBlocks, k);
}

cudaError_t selectTopBlocks(const float* scores, int seqs, int groups, const std::int32_t* lengths,
                            int selectionBlock, int maxBlocks, int topK, int localBlocks,
                            std::int32_t* selected, std::int32_t* counts, void* scratch,
                            cudaStream_t stream) {
    const std::int64_t rows = std::int64_t(seqs) * groups;
    if (seqs < 0 || groups < 1 || selectionBlock <= 0 || maxBlocks < 1 || localBlocks < 1 ||
        topK < localBlocks || topK > kMaxCandidates || rows > 65535)
        return cudaErrorInvalidValue;
    if (rows == 0) return cudaSuccess;
    if (scores == nullptr || lengths == nullptr || selected == nullptr || counts == nullptr ||
        scratch == nullptr)
        return cudaErrorInvalidValue;
    const int k = std::min(topK, maxBlocks);
    const SelectionScratch parts = carve(scratch, int(rows), maxBlocks, k);
    const unsigned across = unsigned(std::min((maxBlocks + kThreads - 1) / kThreads, 1024));
    rankableScoresKernel<<<dim3(across, unsigned(rows)), kThreads, 0, stream>>>(
        scores, groups, lengths, selectionBlock, maxBlocks, localBlocks, parts.work);
    if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
    if (const cudaError_t err = topCandidates(parts.work, int(rows), maxBlocks, maxBlocks, k,
                                              parts.ids, parts.values, parts.candidates, stream);
        err != cudaSuccess)
        return err;
    finishSelectionKernel<<<unsigned((rows + 127) / 128), 128, 0, stream>>>(
        parts.ids, parts.values, int(rows), k, topK, selected, counts);
    return cudaGetLastError();
}

}  // namespace iris::kernels::cuda
