#pragma once
// The x86 attention kernel, written once over a small vector abstraction and instantiated for
// AVX2 (8 floats) and AVX-512 (16 floats). In an unnamed namespace for the same reason as
// matmul_x86.h: each instruction set's copy must stay in its own translation unit.
//
// For each key/value row the K (and later V) values are widened to f32 once and used by every
// query head of the group, so a GQA group of 7 heads reads its K and V once, not 7 times.

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/attention.h"

namespace iris::kernels::cpu {
namespace {

template <class V>
void widenRow(const void* base, std::int64_t element, int n, bool f16, float* out) {
    int i = 0;
    if (f16) {
        const auto* h = static_cast<const std::uint16_t*>(base) + element;
        for (; i + V::kWidth <= n; i += V::kWidth) V::store(out + i, V::loadHalf(h + i));
        for (; i < n; ++i) out[i] = _cvtsh_ss(h[i]);
    } else {
        const auto* f = static_cast<const float*>(base) + element;
        std::copy(f, f + n, out);
    }
}

template <class V>
float dot(const float* a, const float* b, int n) {
    typename V::Reg acc = V::zero();
    int i = 0;
    for (; i + V::kWidth <= n; i += V::kWidth) acc = V::fmadd(V::load(a + i), V::load(b + i), acc);
    float sum = V::reduce(acc);
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

template <class V>
void axpy(float alpha, const float* x, float* y, int n) {  // y += alpha * x
    const typename V::Reg a = V::broadcast(alpha);
    int i = 0;
    for (; i + V::kWidth <= n; i += V::kWidth) V::store(y + i, V::fmadd(a, V::load(x + i), V::load(y + i)));
    for (; i < n; ++i) y[i] += alpha * x[i];
}

template <class V>
void attendX86(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale, float* out,
               float* scores, int headBegin, int headEnd) {
    const int group = heads / kv.kvHeads;
    const int d = kv.headDim;
    const bool f16 = kv.type == TensorType::F16;
    const int count = headEnd - headBegin;
    std::vector<float> row(std::size_t(d), 0.0f);
    const auto element = [&](std::int64_t t, int g) {
        const std::int64_t block = kv.blockTable[t / kv.blockSize];
        return ((block * kv.blockSize + t % kv.blockSize) * kv.kvHeads + g) * d;
    };
    // Scores: heads of one group share the widened K row.
    for (std::int64_t t = 0; t < length; ++t) {
        int lastGroup = -1;
        for (int h = headBegin; h < headEnd; ++h) {
            const int g = h / group;
            if (g != lastGroup) {
                widenRow<V>(kv.keys, element(t, g), d, f16, row.data());
                lastGroup = g;
            }
            scores[std::int64_t(h - headBegin) * length + t] = scale * dot<V>(q + std::int64_t(h) * d, row.data(), d);
        }
    }
    // Softmax per head (normalisation folded into the V sum).
    std::vector<float> norm(std::size_t(count), 0.0f);
    for (int i = 0; i < count; ++i) {
        float* s = scores + std::int64_t(i) * length;
        const float max = *std::max_element(s, s + length);
        float sum = 0.0f;
        for (std::int64_t t = 0; t < length; ++t) sum += (s[t] = std::exp(s[t] - max));
        norm[std::size_t(i)] = 1.0f / sum;
        std::fill(out + std::int64_t(headBegin + i) * d, out + std::int64_t(headBegin + i + 1) * d, 0.0f);
    }
    for (std::int64_t t = 0; t < length; ++t) {
        int lastGroup = -1;
        for (int h = headBegin; h < headEnd; ++h) {
            const int g = h / group;
            if (g != lastGroup) {
                widenRow<V>(kv.values, element(t, g), d, f16, row.data());
                lastGroup = g;
            }
            const int i = h - headBegin;
            axpy<V>(scores[std::int64_t(i) * length + t] * norm[std::size_t(i)], row.data(), out + std::int64_t(h) * d, d);
        }
    }
}

}  // namespace
}  // namespace iris::kernels::cpu
