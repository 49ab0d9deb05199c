#pragma once
// The MSA kernels' bodies for any x86 vector width: templates over a vector type V (Vec8 for
// AVX2, Vec16 for AVX-512: zero, broadcast, load, loadHalf, store, fmadd, ... as the two .cpp files
// define them). Included by sparse_attention_avx2.cpp and _avx512.cpp only, inside their unnamed
// namespace, so that each instruction set's instantiation stays in its own translation unit.
// The including file includes <algorithm>, <cmath>, <cstdint>, <limits>, horizontal_sum.h,
// fp16.h and sparse_attention.h first (this header sits inside its namespace).


// Calls fn(t, element) for every selected token t < length, in block order; element is the
// offset of its row for KV head g in the paged pool. Runs of min(selectionBlock, pageSize)
// tokens are contiguous, so the page lookup happens once per run.
template <class Fn>
void forSelectedTokens(const PagedKv& kv, int g, std::int64_t length, const std::int32_t* blocks,
                       int count, int selectionBlock, Fn&& fn) {
    const std::int64_t rowStride = std::int64_t(kv.kvHeads) * kv.headDim;
    for (int c = 0; c < count; ++c) {
        const std::int64_t begin = std::int64_t(blocks[c]) * selectionBlock;
        const std::int64_t end = std::min(length, begin + selectionBlock);
        for (std::int64_t t = begin; t < end;) {
            const std::int64_t page = kv.page(t);
            const std::int64_t runEnd = std::min(end, (t / kv.blockSize + 1) * kv.blockSize);
            std::int64_t e =
                ((page * kv.blockSize + t % kv.blockSize) * kv.kvHeads + g) * kv.headDim;
            for (; t < runEnd; ++t, e += rowStride)
                fn(e);
        }
    }
}

template <class V>
typename V::Reg loadRow(const void* base, std::int64_t element, int i, bool f16) {
    if (f16) return V::loadHalf(static_cast<const std::uint16_t*>(base) + element + i);
    return V::load(static_cast<const float*>(base) + element + i);
}

template <class V>
float loadOne(const void* base, std::int64_t element, int i, bool f16) {
    if (f16) return fp16ToFp32(static_cast<const std::uint16_t*>(base)[element + i]);
    return static_cast<const float*>(base)[element + i];
}

// Each index key row is read once for all groups (at most kMaxQueries at a time).
template <class V>
void blockScoresX86(const float* q, int groups, const PagedIndexKeys& keys, std::int64_t length,
                    int selectionBlock, float* scores) {
    constexpr int kMaxQueries = 8;
    const int d = keys.dim;
    const int full = d / V::kWidth * V::kWidth;
    const std::int64_t blocks = selectionBlocks(length, selectionBlock);
    std::fill(scores, scores + groups * blocks, -std::numeric_limits<float>::infinity());
    for (int r0 = 0; r0 < groups; r0 += kMaxQueries) {
        const int n = std::min(kMaxQueries, groups - r0);
        for (std::int64_t t = 0; t < length;) {
            const std::int64_t page = keys.blockTable[t / keys.pageSize];
            const std::int64_t b = t / selectionBlock;
            const std::int64_t runEnd = std::min(
                {length, (t / keys.pageSize + 1) * keys.pageSize, (b + 1) * selectionBlock});
            const float* k = keys.keys + (page * keys.pageSize + t % keys.pageSize) * d;
            float max[kMaxQueries];
            for (int j = 0; j < n; ++j)
                max[j] = scores[(r0 + j) * blocks + b];
            for (; t < runEnd; ++t, k += d) {
                typename V::Reg acc[kMaxQueries];
                for (int j = 0; j < n; ++j)
                    acc[j] = V::zero();
                for (int i = 0; i < full; i += V::kWidth) {
                    const typename V::Reg kv = V::load(k + i);
                    for (int j = 0; j < n; ++j)
                        acc[j] = V::fmadd(V::load(q + std::int64_t(r0 + j) * d + i), kv, acc[j]);
                }
                for (int j = 0; j < n; ++j) {
                    float dot = V::reduce(acc[j]);
                    for (int i = full; i < d; ++i)
                        dot += q[std::int64_t(r0 + j) * d + i] * k[i];
                    max[j] = std::max(max[j], dot);
                }
            }
            for (int j = 0; j < n; ++j)
                scores[(r0 + j) * blocks + b] = max[j];
        }
    }
}

// As attention_x86.h's kernel, over the selected tokens: each K and V row is widened once and
// used by up to kMaxHeads query heads of the group.
template <class V>
void attendBlocksX86(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                     const std::int32_t* blocks, int count, int selectionBlock, float* out,
                     float* scratch, int headBegin, int headEnd) {
    constexpr int kMaxHeads = 8;
    const int d = kv.headDim;
    const int g = headBegin / (heads / kv.kvHeads);
    const bool f16 = kv.type == TensorType::F16;
    const int full = d / V::kWidth * V::kWidth;
    const std::int64_t stride = std::int64_t(count) * selectionBlock;
    for (int h0 = headBegin; h0 < headEnd; h0 += kMaxHeads) {
        const int n = std::min(kMaxHeads, headEnd - h0);
        float* s = scratch + std::int64_t(h0 - headBegin) * stride;
        std::int64_t used = 0;
        forSelectedTokens(kv, g, length, blocks, count, selectionBlock, [&](std::int64_t e) {
            typename V::Reg acc[kMaxHeads];
            for (int j = 0; j < n; ++j)
                acc[j] = V::zero();
            for (int i = 0; i < full; i += V::kWidth) {
                const typename V::Reg k = loadRow<V>(kv.keys, e, i, f16);
                for (int j = 0; j < n; ++j)
                    acc[j] = V::fmadd(V::load(q + std::int64_t(h0 + j) * d + i), k, acc[j]);
            }
            for (int j = 0; j < n; ++j) {
                float dot = V::reduce(acc[j]);
                for (int i = full; i < d; ++i)
                    dot += q[std::int64_t(h0 + j) * d + i] * loadOne<V>(kv.keys, e, i, f16);
                s[j * stride + used] = scale * dot;
            }
            ++used;
        });
        for (int j = 0; j < n; ++j) {
            float* sj = s + j * stride;
            const float max = used > 0 ? *std::max_element(sj, sj + used) : 0.0f;
            float sum = 0.0f;
            for (std::int64_t t = 0; t < used; ++t)
                sum += (sj[t] = std::exp(sj[t] - max));
            const float inv = 1.0f / sum;
            for (std::int64_t t = 0; t < used; ++t)
                sj[t] *= inv;
            std::fill(out + std::int64_t(h0 + j) * d, out + std::int64_t(h0 + j + 1) * d, 0.0f);
        }
        std::int64_t t = 0;
        forSelectedTokens(kv, g, length, blocks, count, selectionBlock, [&](std::int64_t e) {
            for (int i = 0; i < full; i += V::kWidth) {
                const typename V::Reg v = loadRow<V>(kv.values, e, i, f16);
                for (int j = 0; j < n; ++j) {
                    float* o = out + std::int64_t(h0 + j) * d + i;
                    V::store(o, V::fmadd(V::broadcast(s[j * stride + t]), v, V::load(o)));
                }
            }
            for (int i = full; i < d; ++i) {
                const float v = loadOne<V>(kv.values, e, i, f16);
                for (int j = 0; j < n; ++j)
                    out[std::int64_t(h0 + j) * d + i] += s[j * stride + t] * v;
            }
            ++t;
        });
    }
}

// As the scalar reference: blocks in order, each selected block's rows used by every query that
// chose it while they are in cache; online softmax per (query, head), accumulators in `scratch`.
template <class V>
void attendMaskedX86(const float* q, std::ptrdiff_t qStride, int n, const std::int64_t* lengths,
                     int heads, const PagedKv& kv, float scale, const std::uint8_t* mask,
                     std::int64_t maskStride, int selectionBlock, float* out,
                     std::ptrdiff_t outStride, float* scratch, int headBegin, int headEnd) {
    const int group = heads / kv.kvHeads, g = headBegin / group, nh = headEnd - headBegin;
    const int d = kv.headDim;
    const bool f16 = kv.type == TensorType::F16;
    const int full = d / V::kWidth * V::kWidth;
    const auto element = [&](std::int64_t t) {
        const std::int64_t page = kv.page(t);
        return ((page * kv.blockSize + t % kv.blockSize) * kv.kvHeads + g) * d;
    };
    float* state = scratch;
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
                float* acc = st + 2;
                float blockMax = -std::numeric_limits<float>::infinity();
                for (std::int64_t t = begin; t < end; ++t) {
                    const std::int64_t e = element(t);
                    typename V::Reg sum = V::zero();
                    for (int x = 0; x < full; x += V::kWidth)
                        sum = V::fmadd(V::load(qh + x), loadRow<V>(kv.keys, e, x, f16), sum);
                    float dot = V::reduce(sum);
                    for (int x = full; x < d; ++x)
                        dot += qh[x] * loadOne<V>(kv.keys, e, x, f16);
                    scores[t - begin] = dot * scale;
                    blockMax = std::max(blockMax, scores[t - begin]);
                }
                const float newMax = std::max(st[0], blockMax);
                const float correction = std::exp(st[0] - newMax);
                st[0] = newMax;
                st[1] *= correction;
                const typename V::Reg c = V::broadcast(correction);
                for (int x = 0; x < full; x += V::kWidth)
                    V::store(acc + x, V::fmadd(c, V::load(acc + x), V::zero()));
                for (int x = full; x < d; ++x)
                    acc[x] *= correction;
                for (std::int64_t t = begin; t < end; ++t) {
                    const float p = std::exp(scores[t - begin] - newMax);
                    st[1] += p;
                    const std::int64_t e = element(t);
                    const typename V::Reg pv = V::broadcast(p);
                    for (int x = 0; x < full; x += V::kWidth)
                        V::store(acc + x,
                                 V::fmadd(pv, loadRow<V>(kv.values, e, x, f16), V::load(acc + x)));
                    for (int x = full; x < d; ++x)
                        acc[x] += p * loadOne<V>(kv.values, e, x, f16);
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
