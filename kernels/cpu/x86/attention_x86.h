#pragma once
// The x86 attention kernel, written once over a small vector abstraction and instantiated for
// AVX2 (8 floats) and AVX-512 (16 floats). In an unnamed namespace for the same reason as
// matmul_x86.h: each instruction set's copy must stay in its own translation unit.
//
// Each key/value row is widened to f32 in registers once and used by every query head of the
// group, so a GQA group of 7 heads reads its K and V once, not 7 times.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <immintrin.h>

#include "kernels/attention.h"

namespace iris::kernels::cpu {
namespace {

// One K or V row chunk of V::kWidth values starting at `i`, widened to f32 in a register.
template <class V>
typename V::Reg loadChunk(const void* base, std::int64_t element, int i, bool f16) {
    if (f16) return V::loadHalf(static_cast<const std::uint16_t*>(base) + element + i);
    return V::load(static_cast<const float*>(base) + element + i);
}

template <class V>
float loadScalar(const void* base, std::int64_t element, int i, bool f16) {
    if (f16) return _cvtsh_ss(static_cast<const std::uint16_t*>(base)[element + i]);
    return static_cast<const float*>(base)[element + i];
}

// Heads [headBegin, headEnd) of one KV group g: each K and V row is loaded once, widened in a
// register, and used by all of the group's query heads (at most kMaxGroup at a time).
template <class V>
void attendGroup(const float* q, const PagedKv& kv, std::int64_t length, float scale, float* out,
                 float* scores, int g, int headBegin, int headEnd) {
    constexpr int kMaxGroup = 8;
    const int d = kv.headDim;
    const bool f16 = kv.type == TensorType::F16;
    const int full = d / V::kWidth * V::kWidth;
    const auto element = [&](std::int64_t t) {
        const std::int64_t block = kv.blockTable[t / kv.blockSize];
        return ((block * kv.blockSize + t % kv.blockSize) * kv.kvHeads + g) * d;
    };
    for (int h0 = headBegin; h0 < headEnd; h0 += kMaxGroup) {
        const int n = std::min(kMaxGroup, headEnd - h0);
        float* s = scores + std::int64_t(h0 - headBegin) * length;
        for (std::int64_t t = 0; t < length; ++t) {
            const std::int64_t e = element(t);
            typename V::Reg acc[kMaxGroup];
            for (int j = 0; j < n; ++j)
                acc[j] = V::zero();
            for (int i = 0; i < full; i += V::kWidth) {
                const typename V::Reg k = loadChunk<V>(kv.keys, e, i, f16);
                for (int j = 0; j < n; ++j)
                    acc[j] = V::fmadd(V::load(q + std::int64_t(h0 + j) * d + i), k, acc[j]);
            }
            for (int j = 0; j < n; ++j) {
                float dot = V::reduce(acc[j]);
                for (int i = full; i < d; ++i)
                    dot += q[std::int64_t(h0 + j) * d + i] * loadScalar<V>(kv.keys, e, i, f16);
                s[std::int64_t(j) * length + t] = scale * dot;
            }
        }
        // Softmax per head; the normalisation is folded into the weights.
        for (int j = 0; j < n; ++j) {
            float* sj = s + std::int64_t(j) * length;
            const float max = *std::max_element(sj, sj + length);
            float sum = 0.0f;
            for (std::int64_t t = 0; t < length; ++t)
                sum += (sj[t] = std::exp(sj[t] - max));
            const float inv = 1.0f / sum;
            for (std::int64_t t = 0; t < length; ++t)
                sj[t] *= inv;
            std::fill(out + std::int64_t(h0 + j) * d, out + std::int64_t(h0 + j + 1) * d, 0.0f);
        }
        for (std::int64_t t = 0; t < length; ++t) {
            const std::int64_t e = element(t);
            for (int i = 0; i < full; i += V::kWidth) {
                const typename V::Reg v = loadChunk<V>(kv.values, e, i, f16);
                for (int j = 0; j < n; ++j) {
                    float* o = out + std::int64_t(h0 + j) * d + i;
                    V::store(
                        o, V::fmadd(V::broadcast(s[std::int64_t(j) * length + t]), v, V::load(o)));
                }
            }
            for (int i = full; i < d; ++i) {
                const float v = loadScalar<V>(kv.values, e, i, f16);
                for (int j = 0; j < n; ++j)
                    out[std::int64_t(h0 + j) * d + i] += s[std::int64_t(j) * length + t] * v;
            }
        }
    }
}

template <class V>
void attendX86(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
               float* out, float* scores, int headBegin, int headEnd) {
    const int group = heads / kv.kvHeads;
    // Split the head range at group boundaries.
    for (int h = headBegin; h < headEnd;) {
        const int g = h / group;
        const int end = std::min(headEnd, (g + 1) * group);
        attendGroup<V>(q, kv, length, scale, out, scores + std::int64_t(h - headBegin) * length, g,
                       h, end);
        h = end;
    }
}

}  // namespace
}  // namespace iris::kernels::cpu
