#include "kernels/sparse_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu_features.h"
#include "kernels/fp16.h"

namespace iris::kernels {
namespace {

const float* indexKey(const PagedIndexKeys& keys, std::int64_t t) {
    const std::int64_t page = keys.blockTable[t / keys.pageSize];
    return keys.keys + (page * keys.pageSize + t % keys.pageSize) * keys.dim;
}

template <class T>
float load(const T* p, std::int64_t i) {
    if constexpr (sizeof(T) == 2) {
        return fp16ToFp32(p[i]);
    } else {
        return p[i];
    }
}

template <class T>
void attendBlocksTyped(const float* q, int heads, const PagedKv& kv, std::int64_t length,
                       float scale, const std::int32_t* blocks, int count, int selectionBlock,
                       float* out, float* scratch, int headBegin, int headEnd) {
    const int group = heads / kv.kvHeads;
    const int g = headBegin / group;
    const auto* keys = static_cast<const T*>(kv.keys);
    const auto* values = static_cast<const T*>(kv.values);
    const auto row = [&](std::int64_t t) {
        const std::int64_t page = kv.page(t);
        return ((page * kv.blockSize + t % kv.blockSize) * kv.kvHeads + g) * kv.headDim;
    };
    for (int h = headBegin; h < headEnd; ++h) {
        const float* qh = q + std::int64_t(h) * kv.headDim;
        float* scores = scratch + std::int64_t(h - headBegin) * count * selectionBlock;
        std::int64_t n = 0;
        float max = -std::numeric_limits<float>::infinity();
        for (int c = 0; c < count; ++c) {
            const std::int64_t begin = std::int64_t(blocks[c]) * selectionBlock;
            const std::int64_t end = std::min(length, begin + selectionBlock);
            for (std::int64_t t = begin; t < end; ++t) {
                const T* k = keys + row(t);
                float dot = 0.0f;
                for (int i = 0; i < kv.headDim; ++i)
                    dot += qh[i] * load(k, i);
                scores[n] = dot * scale;
                max = std::max(max, scores[n++]);
            }
        }
        float sum = 0.0f;
        for (std::int64_t i = 0; i < n; ++i) {
            scores[i] = std::exp(scores[i] - max);
            sum += scores[i];
        }
        float* oh = out + std::int64_t(h) * kv.headDim;
        std::fill(oh, oh + kv.headDim, 0.0f);
        n = 0;
        for (int c = 0; c < count; ++c) {
            const std::int64_t begin = std::int64_t(blocks[c]) * selectionBlock;
            const std::int64_t end = std::min(length, begin + selectionBlock);
            for (std::int64_t t = begin; t < end; ++t) {
                const T* v = values + row(t);
                const float p = scores[n++] / sum;
                for (int i = 0; i < kv.headDim; ++i)
                    oh[i] += p * load(v, i);
            }
        }
    }
}

// Online softmax over the blocks, block-major so that a block's K and V rows serve every
// query that selected it while they are in cache.
template <class T>
void attendMaskedTyped(const float* q, std::ptrdiff_t qStride, int n, const std::int64_t* lengths,
                       int heads, const PagedKv& kv, float scale, const std::uint8_t* mask,
                       std::int64_t maskStride, int selectionBlock, float* out,
                       std::ptrdiff_t outStride, float* scratch, int headBegin, int headEnd) {
    const int group = heads / kv.kvHeads, g = headBegin / group, nh = headEnd - headBegin;
    const int d = kv.headDim;
    const auto* keys = static_cast<const T*>(kv.keys);
    const auto* values = static_cast<const T*>(kv.values);
    const auto row = [&](std::int64_t t) {
        const std::int64_t page = kv.page(t);
        return ((page * kv.blockSize + t % kv.blockSize) * kv.kvHeads + g) * d;
    };
    float* state = scratch;  // per (query, head): running max, running sum, d accumulators
    float* scores = scratch + std::int64_t(n) * nh * (d + 2);
    for (std::int64_t i = 0; i < std::int64_t(n) * nh; ++i) {
        float* st = state + i * (d + 2);
        st[0] = -std::numeric_limits<float>::infinity();
        std::fill(st + 1, st + d + 2, 0.0f);
    }
    for (std::int64_t b = 0; b < maskStride; ++b) {
        for (int i = 0; i < n; ++i) {
            if (mask[i * maskStride + b] == 0) continue;
            const std::int64_t begin = b * selectionBlock;
            const std::int64_t end = std::min(lengths[i], begin + selectionBlock);
            if (end <= begin) continue;
            for (int h = headBegin; h < headEnd; ++h) {
                const float* qh = q + i * qStride + std::int64_t(h) * d;
                float* st = state + (std::int64_t(i) * nh + (h - headBegin)) * (d + 2);
                float blockMax = -std::numeric_limits<float>::infinity();
                for (std::int64_t t = begin; t < end; ++t) {
                    const T* k = keys + row(t);
                    float dot = 0.0f;
                    for (int x = 0; x < d; ++x)
                        dot += qh[x] * load(k, x);
                    scores[t - begin] = dot * scale;
                    blockMax = std::max(blockMax, scores[t - begin]);
                }
                const float newMax = std::max(st[0], blockMax);
                const float correction = std::exp(st[0] - newMax);
                st[0] = newMax;
                st[1] *= correction;
                float* acc = st + 2;
                for (int x = 0; x < d; ++x)
                    acc[x] *= correction;
                for (std::int64_t t = begin; t < end; ++t) {
                    const float p = std::exp(scores[t - begin] - newMax);
                    st[1] += p;
                    const T* v = values + row(t);
                    for (int x = 0; x < d; ++x)
                        acc[x] += p * load(v, x);
                }
            }
        }
    }
    for (int i = 0; i < n; ++i) {
        for (int h = headBegin; h < headEnd; ++h) {
            const float* st = state + (std::int64_t(i) * nh + (h - headBegin)) * (d + 2);
            const float inv = st[1] > 0.0f ? 1.0f / st[1] : 0.0f;
            float* o = out + i * outStride + std::int64_t(h) * d;
            for (int x = 0; x < d; ++x)
                o[x] = st[2 + x] * inv;
        }
    }
}

}  // namespace

namespace cpu {

void attendMaskedBlocksScalar(const float* q, std::ptrdiff_t qStride, int n,
                              const std::int64_t* lengths, int heads, const PagedKv& kv,
                              float scale, const std::uint8_t* mask, std::int64_t maskStride,
                              int selectionBlock, float* out, std::ptrdiff_t outStride,
                              float* scratch, int headBegin, int headEnd) {
    if (kv.type == TensorType::F16) {
        attendMaskedTyped<std::uint16_t>(q, qStride, n, lengths, heads, kv, scale, mask, maskStride,
                                         selectionBlock, out, outStride, scratch, headBegin,
                                         headEnd);
    } else {
        attendMaskedTyped<float>(q, qStride, n, lengths, heads, kv, scale, mask, maskStride,
                                 selectionBlock, out, outStride, scratch, headBegin, headEnd);
    }
}

void indexerBlockScoresScalar(const float* q, int groups, const PagedIndexKeys& keys,
                              std::int64_t length, int selectionBlock, float* scores) {
    const std::int64_t blocks = selectionBlocks(length, selectionBlock);
    std::fill(scores, scores + groups * blocks, -std::numeric_limits<float>::infinity());
    for (std::int64_t t = 0; t < length; ++t) {
        const float* k = indexKey(keys, t);
        const std::int64_t b = t / selectionBlock;
        for (int r = 0; r < groups; ++r) {
            const float* qr = q + std::int64_t(r) * keys.dim;
            float dot = 0.0f;
            for (int i = 0; i < keys.dim; ++i)
                dot += qr[i] * k[i];
            float& s = scores[r * blocks + b];
            s = std::max(s, dot);
        }
    }
}

void attendBlocksScalar(const float* q, int heads, const PagedKv& kv, std::int64_t length,
                        float scale, const std::int32_t* blocks, int count, int selectionBlock,
                        float* out, float* scratch, int headBegin, int headEnd) {
    if (kv.type == TensorType::F16) {
        attendBlocksTyped<std::uint16_t>(q, heads, kv, length, scale, blocks, count, selectionBlock,
                                         out, scratch, headBegin, headEnd);
    } else {
        attendBlocksTyped<float>(q, heads, kv, length, scale, blocks, count, selectionBlock, out,
                                 scratch, headBegin, headEnd);
    }
}

}  // namespace cpu

namespace {
constexpr cpu::IsaVariants<cpu::BlockScoresFn> kBlockScoresVariants = {
    .scalar = cpu::indexerBlockScoresScalar,
    .avx2 = IRIS_X86_VARIANT(cpu::indexerBlockScoresAvx2),
    .avx512 = IRIS_X86_VARIANT(cpu::indexerBlockScoresAvx512),
};
constexpr cpu::IsaVariants<cpu::AttendBlocksFn> kAttendBlocksVariants = {
    .scalar = cpu::attendBlocksScalar,
    .avx2 = IRIS_X86_VARIANT(cpu::attendBlocksAvx2),
    .avx512 = IRIS_X86_VARIANT(cpu::attendBlocksAvx512),
};
constexpr cpu::IsaVariants<cpu::MaskedBlocksFn> kMaskedBlocksVariants = {
    .scalar = cpu::attendMaskedBlocksScalar,
    .avx2 = IRIS_X86_VARIANT(cpu::attendMaskedBlocksAvx2),
    .avx512 = IRIS_X86_VARIANT(cpu::attendMaskedBlocksAvx512),
};
}  // namespace

void attendMaskedBlocks(const float* q, std::ptrdiff_t qStride, int n, const std::int64_t* lengths,
                        int heads, const PagedKv& kv, float scale, const std::uint8_t* mask,
                        std::int64_t maskStride, int selectionBlock, float* out,
                        std::ptrdiff_t outStride, float* scratch, int headBegin, int headEnd) {
    cpu::pickVariant(kMaskedBlocksVariants, activeIsa())(q, qStride, n, lengths, heads, kv, scale,
                                                         mask, maskStride, selectionBlock, out,
                                                         outStride, scratch, headBegin, headEnd);
}

void indexerBlockScores(const float* q, int groups, const PagedIndexKeys& keys, std::int64_t length,
                        int selectionBlock, float* scores) {
    cpu::pickVariant(kBlockScoresVariants, activeIsa())(q, groups, keys, length, selectionBlock,
                                                        scores);
}

void attendBlocks(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                  const std::int32_t* blocks, int count, int selectionBlock, float* out,
                  float* scratch, int headBegin, int headEnd) {
    cpu::pickVariant(kAttendBlocksVariants, activeIsa())(q, heads, kv, length, scale, blocks, count,
                                                         selectionBlock, out, scratch, headBegin,
                                                         headEnd);
}

int selectTopBlocks(const float* scores, std::int64_t blocks, int topK, int localBlocks,
                    std::int32_t* selected) {
    const std::int64_t firstLocal = std::max<std::int64_t>(0, blocks - localBlocks);
    int count = 0;
    for (std::int64_t b = firstLocal; b < blocks; ++b)
        selected[count++] = std::int32_t(b);
    // The others: a bounded insertion into the (topK - local) best, kept sorted by descending
    // score. topK is small (16 for the released model), so this beats a heap or a sort of all.
    const int free = topK - count;
    int taken = 0;
    std::int32_t* best = selected + count;
    for (std::int64_t b = 0; b < firstLocal && free > 0; ++b) {
        const float s = scores[b];
        if (!(s > -std::numeric_limits<float>::infinity())) continue;  // -inf or NaN
        if (taken == free && !(s > scores[best[taken - 1]])) continue;
        int at = taken < free ? taken++ : taken - 1;
        while (at > 0 && s > scores[best[at - 1]]) {
            best[at] = best[at - 1];
            --at;
        }
        best[at] = std::int32_t(b);
    }
    count += taken;
    std::sort(selected, selected + count);
    return count;
}

}  // namespace iris::kernels
