#include <cmath>

#include <cuda_fp16.h>

#include "kernels/cuda/attention_decode.cuh"
#include "kernels/cuda/warp.cuh"

namespace iris::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarp;
constexpr int kMaxGroup = 16;     // query heads per KV head
constexpr int kMaxHeadDim = 256;  // 8 values per lane

__device__ float toFloat(float v) {
    return v;
}
__device__ float toFloat(__half v) {
    return __half2float(v);
}

// Where the partial results of chunk c of query head h of sequence s live.
struct Partials {
    float* out;  // [(s * heads + h) * chunks + c] * headDim floats, not normalised
    float* max;  // [(s * heads + h) * chunks + c]: the chunk's largest scaled score
    float* sum;  // same index: sum of exp(score - max); 0 for a chunk past the sequence's end
    int chunks;
};

// Which tokens a (sequence, KV head) attends to. Dense: positions [0, length). Selected
// (MiniMax sparse attention): the blocks listed for it, ascending, each of blockSize positions,
// walked as one virtual run of count * blockSize tokens; positions >= length are masked.
struct Selection {
    const std::int32_t* blocks = nullptr;  // [(s * kvHeads + g) * stride + i]; null: dense
    const std::int32_t* counts = nullptr;  // [s * kvHeads + g]
    int stride = 0;
    int blockSize = 0;
};

// One thread block per (chunk, KV head, sequence): the whole GQA group's query heads meet each
// K and V row once. Three phases over the chunk's tokens: scores (a warp per token, lanes along
// the head dimension), the softmax numerators per head (a warp per head), and the weighted
// values (a thread per output value, reading V rows along the head dimension).
template <class Kv>
__global__ void __launch_bounds__(kThreads)
    decodeChunkKernel(const float* __restrict__ q, int heads, const Kv* __restrict__ keys,
                      const Kv* __restrict__ values, const std::int32_t* __restrict__ tables,
                      std::ptrdiff_t tableStride, int blockSize, int kvHeads, int headDim,
                      const std::int32_t* __restrict__ lengths, float scale, Selection selection,
                      Partials partials) {
    extern __shared__ std::int64_t shared[];
    const int chunk = blockIdx.x, kvHead = blockIdx.y, seq = blockIdx.z;
    const int group = heads / kvHeads;
    std::int64_t* rowOffset = shared;  // element offset of token t's K/V row for this KV head
    float* qs = reinterpret_cast<float*>(rowOffset + kDecodeChunk);  // group x headDim, scaled
    float* scores = qs + group * headDim;                            // group x kDecodeChunk

    const std::int64_t begin = std::int64_t(chunk) * kDecodeChunk;
    const std::int64_t length = lengths[seq];
    const std::int32_t* chosen = nullptr;  // this (sequence, KV head)'s selected blocks
    std::int64_t tokens = length;          // dense: the prefix; selected: the virtual run
    if (selection.blocks != nullptr) {
        const std::int64_t list = std::int64_t(seq) * kvHeads + kvHead;
        chosen = selection.blocks + list * selection.stride;
        tokens = std::int64_t(selection.counts[list]) * selection.blockSize;
    }
    const int count = int(min(max(tokens - begin, std::int64_t(0)), std::int64_t(kDecodeChunk)));
    const std::int64_t first = std::int64_t(seq) * heads + std::int64_t(kvHead) * group;
    if (count == 0) {
        for (int h = threadIdx.x; h < group; h += kThreads) {
            partials.max[(first + h) * partials.chunks + chunk] = -INFINITY;
            partials.sum[(first + h) * partials.chunks + chunk] = 0.0f;
        }
        return;
    }
    for (int i = threadIdx.x; i < group * headDim; i += kThreads)
        qs[i] = q[first * headDim + i] * scale;
    __syncthreads();

    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    const int perLane = headDim / kWarp;
    const std::int32_t* table = tables + seq * tableStride;
    for (int t = warp; t < count; t += kWarps) {
        std::int64_t token = begin + t;
        if (chosen != nullptr) {
            const std::int64_t v = token;
            token = std::int64_t(chosen[v / selection.blockSize]) * selection.blockSize +
                    v % selection.blockSize;
        }
        if (token >= length) {  // past the query: only the last selected block has such places
            if (lane == 0) rowOffset[t] = -1;
            for (int h = 0; h < group && lane == 0; ++h)
                scores[h * kDecodeChunk + t] = -INFINITY;
            continue;
        }
        const std::int64_t slot =
            std::int64_t(table[token / blockSize]) * blockSize + token % blockSize;
        const std::int64_t offset = (slot * kvHeads + kvHead) * headDim;
        if (lane == 0) rowOffset[t] = offset;
        float k[kMaxHeadDim / kWarp];
#pragma unroll
        for (int i = 0; i < kMaxHeadDim / kWarp; ++i)
            k[i] = i < perLane ? toFloat(keys[offset + lane + kWarp * i]) : 0.0f;
        for (int h = 0; h < group; ++h) {
            float dot = 0.0f;
#pragma unroll
            for (int i = 0; i < kMaxHeadDim / kWarp; ++i)
                if (i < perLane) dot += qs[h * headDim + lane + kWarp * i] * k[i];
            dot = warpSum(dot);
            if (lane == 0) scores[h * kDecodeChunk + t] = dot;
        }
    }
    __syncthreads();

    for (int h = warp; h < group; h += kWarps) {
        float* row = scores + h * kDecodeChunk;
        float m = -INFINITY;
        for (int t = lane; t < count; t += kWarp)
            m = fmaxf(m, row[t]);
        m = warpMax(m);
        float sum = 0.0f;
        for (int t = lane; t < count; t += kWarp) {  // a chunk wholly masked keeps sum 0
            const float e = row[t] == -INFINITY ? 0.0f : expf(row[t] - m);
            row[t] = e;
            sum += e;
        }
        sum = warpSum(sum);
        if (lane == 0) {
            partials.max[(first + h) * partials.chunks + chunk] = m;
            partials.sum[(first + h) * partials.chunks + chunk] = sum;
        }
    }
    __syncthreads();

    for (int o = threadIdx.x; o < group * headDim; o += kThreads) {
        const int h = o / headDim, d = o % headDim;
        const float* weights = scores + h * kDecodeChunk;
        float acc = 0.0f;
        for (int t = 0; t < count; ++t)
            if (rowOffset[t] >= 0) acc += weights[t] * toFloat(values[rowOffset[t] + d]);
        partials.out[((first + h) * partials.chunks + chunk) * headDim + d] = acc;
    }
}

// One block per (sequence, query head), a thread per output value: the chunks' outputs
// rescaled to the largest maximum and divided by the total sum.
__global__ void combineChunksKernel(Partials partials, int headDim, float* __restrict__ out) {
    const std::int64_t head = blockIdx.x;  // s * heads + h
    const float* max = partials.max + head * partials.chunks;
    const float* sum = partials.sum + head * partials.chunks;
    float largest = -INFINITY;
    for (int c = 0; c < partials.chunks; ++c)
        if (sum[c] > 0.0f) largest = fmaxf(largest, max[c]);
    for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
        float total = 0.0f, acc = 0.0f;
        for (int c = 0; c < partials.chunks; ++c) {
            if (sum[c] == 0.0f) continue;
            const float w = expf(max[c] - largest);
            total += w * sum[c];
            acc += w * partials.out[(head * partials.chunks + c) * headDim + d];
        }
        out[head * headDim + d] = total > 0.0f ? acc / total : 0.0f;
    }
}

std::int64_t chunksFor(std::int64_t maxLength) {
    return maxLength <= 0 ? 1 : (maxLength + kDecodeChunk - 1) / kDecodeChunk;
}

template <class Kv>
cudaError_t launch(const float* q, int seqs, int heads, const PagedKv& kv,
                   std::ptrdiff_t tableStride, const std::int32_t* lengths, float scale,
                   Selection selection, float* out, Partials partials, cudaStream_t stream) {
    const int group = heads / kv.kvHeads;
    const std::size_t sharedBytes =
        kDecodeChunk * sizeof(std::int64_t) +
        std::size_t(group) * (kv.headDim + kDecodeChunk) * sizeof(float);
    const dim3 grid(unsigned(partials.chunks), unsigned(kv.kvHeads), unsigned(seqs));
    decodeChunkKernel<Kv><<<grid, kThreads, sharedBytes, stream>>>(
        q, heads, static_cast<const Kv*>(kv.keys), static_cast<const Kv*>(kv.values), kv.blockTable,
        tableStride, kv.blockSize, kv.kvHeads, kv.headDim, lengths, scale, selection, partials);
    if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
    combineChunksKernel<<<unsigned(seqs) * unsigned(heads), min(kv.headDim, 256), 0, stream>>>(
        partials, kv.headDim, out);
    return cudaGetLastError();
}

}  // namespace

std::int64_t attendDecodeScratchBytes(int seqs, int heads, int headDim, std::int64_t maxLength) {
    const std::int64_t parts = std::int64_t(seqs) * heads * chunksFor(maxLength);
    return parts * (headDim + 2) * std::int64_t(sizeof(float));
}

namespace {

// What attendDecode and attendSelectedBlocks share: checks, scratch layout, the launches.
// `tokens`: the most tokens one (sequence, KV head) walks.
cudaError_t attend(const float* q, int seqs, int heads, const PagedKv& kv,
                   std::ptrdiff_t tableStride, const std::int32_t* lengths, std::int64_t tokens,
                   float scale, Selection selection, float* out, void* scratch,
                   cudaStream_t stream) {
    if (seqs < 0 || heads <= 0 || kv.kvHeads <= 0 || heads % kv.kvHeads != 0 ||
        heads / kv.kvHeads > kMaxGroup || kv.headDim <= 0 || kv.headDim % kWarp != 0 ||
        kv.headDim > kMaxHeadDim || kv.blockSize <= 0 || tokens < 0 || tableStride < 0 ||
        (kv.type != TensorType::F16 && kv.type != TensorType::F32))
        return cudaErrorInvalidValue;
    if (seqs == 0) return cudaSuccess;
    if (seqs > 65535 || kv.kvHeads > 65535) return cudaErrorInvalidValue;  // grid z and y
    if (q == nullptr || out == nullptr || scratch == nullptr || lengths == nullptr ||
        (tokens > 0 && (kv.keys == nullptr || kv.values == nullptr || kv.blockTable == nullptr)))
        return cudaErrorInvalidValue;
    const std::int64_t chunks = chunksFor(tokens);
    float* base = static_cast<float*>(scratch);
    const std::int64_t parts = std::int64_t(seqs) * heads * chunks;
    const Partials partials{base, base + parts * kv.headDim, base + parts * (kv.headDim + 1),
                            int(chunks)};
    if (kv.type == TensorType::F16)
        return launch<__half>(q, seqs, heads, kv, tableStride, lengths, scale, selection, out,
                              partials, stream);
    return launch<float>(q, seqs, heads, kv, tableStride, lengths, scale, selection, out, partials,
                         stream);
}

}  // namespace

cudaError_t attendDecode(const float* q, int seqs, int heads, const PagedKv& kv,
                         std::ptrdiff_t tableStride, const std::int32_t* lengths,
                         std::int64_t maxLength, float scale, float* out, void* scratch,
                         cudaStream_t stream) {
    return attend(q, seqs, heads, kv, tableStride, lengths, maxLength, scale, Selection{}, out,
                  scratch, stream);
}

cudaError_t attendPrefill(const float* q, int tokens, int heads, const PagedKv& kv,
                          const std::int32_t* lengths, std::int64_t maxLength, float scale,
                          float* out, void* scratch, cudaStream_t stream) {
    // A table stride of 0: every query token reads the sequence's one block table.
    return attend(q, tokens, heads, kv, 0, lengths, maxLength, scale, Selection{}, out, scratch,
                  stream);
}

std::int64_t attendSelectedScratchBytes(int seqs, int heads, int headDim, int maxBlocks,
                                        int selectionBlock) {
    return attendDecodeScratchBytes(seqs, heads, headDim, std::int64_t(maxBlocks) * selectionBlock);
}

cudaError_t attendSelectedBlocks(const float* q, int seqs, int heads, const PagedKv& kv,
                                 std::ptrdiff_t tableStride, const std::int32_t* lengths,
                                 const std::int32_t* blocks, const std::int32_t* counts,
                                 int maxBlocks, int selectionBlock, float scale, float* out,
                                 void* scratch, cudaStream_t stream) {
    if (maxBlocks < 1 || selectionBlock < 1 ||
        (seqs > 0 && (blocks == nullptr || counts == nullptr)))
        return cudaErrorInvalidValue;
    const Selection selection{blocks, counts, maxBlocks, selectionBlock};
    return attend(q, seqs, heads, kv, tableStride, lengths,
                  std::int64_t(maxBlocks) * selectionBlock, scale, selection, out, scratch, stream);
}

}  // namespace iris::kernels::cuda
