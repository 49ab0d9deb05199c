#pragma once
// The x86 attention kernel, written once over a small vector abstraction and instantiated for
// AVX2 (8 floats) and AVX-512 (16 floats). In an unnamed namespace for the same reason as
// matmul_x86.h: each instruction set's copy must stay in its own translation unit.
//
// Each key/value row is widened to f32 once per call and used by every row of the call (the
// query heads of a GQA group, and in a prefill chunk several tokens of one sequence).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <immintrin.h>

#include "kernels/attention.h"
#include "kernels/cpu/attention.h"

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

// e^x for x <= 0 (x - max in a softmax), to about 1 ulp: x = n ln 2 + r with |r| <= ln 2 / 2,
// e^r by the degree-6 minimax polynomial of Cephes' expf, times 2^n. Below -87.3 (where e^x is
// no longer a normal float) the result is that of -87.3; callers zero those lanes anyway.
template <class V>
typename V::Reg expNonPositive(typename V::Reg x) {
    x = V::max(x, V::broadcast(-87.3f));
    const typename V::Reg n = V::round(V::mul(x, V::broadcast(1.44269504088896341f)));
    typename V::Reg r = V::fmadd(n, V::broadcast(-0.693359375f), x);
    r = V::fmadd(n, V::broadcast(2.12194440e-4f), r);
    typename V::Reg p = V::broadcast(1.9875691500e-4f);
    for (const float c :
         {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
        p = V::fmadd(p, r, V::broadcast(c));
    const typename V::Reg e =
        V::add(V::fmadd(V::mul(p, r), r, r), V::broadcast(1.0f));  // 1 + r + p r^2
    return V::timesPowerOfTwo(e, n);
}

// Softmax per lane of the scores s (longest keys x W lanes) over each lane's own keys (a key past
// a lane's length counts as -inf, so it adds exactly 0): scale, max, exponentials and sum in key
// order; the normalisation is folded into the weights.
template <class V>
void softmaxLanes(float* s, std::int64_t longest, const AttentionRow* rows, int count,
                  float scale) {
    constexpr int W = V::kWidth;
    float lengths[W];
    for (int r = 0; r < W; ++r)
        lengths[r] = r < count ? float(rows[r].length) : 0.0f;  // exact below 2^24 keys
    const typename V::Reg lens = V::load(lengths),
                          minusInf = V::broadcast(-std::numeric_limits<float>::infinity());
    typename V::Reg max = minusInf, sum = V::zero();
    for (std::int64_t t = 0; t < longest; ++t) {
        const typename V::Reg scaled = V::mul(V::load(s + t * W), V::broadcast(scale));
        max = V::max(max, V::ifLess(V::broadcast(float(t)), lens, scaled, minusInf));
        V::store(s + t * W, scaled);
    }
    for (std::int64_t t = 0; t < longest; ++t) {
        const typename V::Reg e =
            V::ifLess(V::broadcast(float(t)), lens,
                      expNonPositive<V>(V::sub(V::load(s + t * W), max)), V::zero());
        sum = V::add(sum, e);
        V::store(s + t * W, e);
    }
    const typename V::Reg inv = V::div(V::broadcast(1.0f), sum);
    for (std::int64_t t = 0; t < longest; ++t)
        V::store(s + t * W, V::mul(V::load(s + t * W), inv));
}

// Up to V::kWidth rows of KV head g, a lane per row. The queries are transposed (dimension-major)
// so that each key's score for every row is one vector: a widened K row's values are broadcast
// and multiplied into the transposed queries, dimension by dimension, with no horizontal sums.
// Each lane adds in dimension order and then in key order on its own, so a row's bits do not
// depend on the other lanes. scratch: see attendRowsScratch.
template <class V>
void attendLanes(const AttentionRow* rows, int count, const PagedKv& kv, int g, float scale,
                 float* scratch) {
    constexpr int W = V::kWidth;
    const int d = kv.headDim;
    const bool f16 = kv.type == TensorType::F16;
    const int full = d / W * W;
    const auto element = [&](std::int64_t t) {
        const std::int64_t block = kv.blockTable[t / kv.blockSize];
        return ((block * kv.blockSize + t % kv.blockSize) * kv.kvHeads + g) * d;
    };
    // Widens row t of K or V into `to` (d floats).
    const auto widen = [&](const void* base, std::int64_t t, float* to) {
        const std::int64_t e = element(t);
        for (int i = 0; i < full; i += W)
            V::store(to + i, loadChunk<V>(base, e, i, f16));
        for (int i = full; i < d; ++i)
            to[i] = loadScalar<V>(base, e, i, f16);
    };
    std::int64_t longest = 0;
    for (int r = 0; r < count; ++r)
        longest = std::max(longest, rows[r].length);
    float* qt = scratch;                                  // d x W
    float* widened = qt + std::int64_t(d) * kAttendTile;  // up to W rows of d
    float* s = widened + std::int64_t(d) * kAttendTile;   // longest x W
    for (int i = 0; i < d; ++i)
        for (int r = 0; r < W; ++r)
            qt[i * W + r] = r < count ? rows[r].q[i] : 0.0f;
    // Scores of kKeys keys at a time: independent chains for the FMA units, each key's lanes
    // still summing in dimension order (the tail, one key at a time, sums the same way).
    constexpr int kKeys = 4;
    std::int64_t key = 0;
    for (; key + kKeys <= longest; key += kKeys) {
        typename V::Reg acc[kKeys];
        for (int k = 0; k < kKeys; ++k) {
            widen(kv.keys, key + k, widened + std::int64_t(k) * d);
            acc[k] = V::zero();
        }
        for (int i = 0; i < d; ++i) {
            const typename V::Reg column = V::load(qt + i * W);
            for (int k = 0; k < kKeys; ++k)
                acc[k] = V::fmadd(V::broadcast(widened[std::int64_t(k) * d + i]), column, acc[k]);
        }
        for (int k = 0; k < kKeys; ++k)
            V::store(s + (key + k) * W, acc[k]);
    }
    for (; key < longest; ++key) {
        widen(kv.keys, key, widened);
        typename V::Reg acc = V::zero();
        for (int i = 0; i < d; ++i)
            acc = V::fmadd(V::broadcast(widened[i]), V::load(qt + i * W), acc);
        V::store(s + key * W, acc);
    }
    softmaxLanes<V>(s, longest, rows, count, scale);
    for (int r = 0; r < count; ++r)
        std::fill(rows[r].out, rows[r].out + d, 0.0f);
    // out[r] += p[t][r] V[t], in key order, W keys widened at a time.
    for (std::int64_t t0 = 0; t0 < longest; t0 += W) {
        const int keys = int(std::min<std::int64_t>(W, longest - t0));
        for (int k = 0; k < keys; ++k)
            widen(kv.values, t0 + k, widened + std::int64_t(k) * d);
        for (int r = 0; r < count; ++r) {
            const int mine = int(std::clamp<std::int64_t>(rows[r].length - t0, 0, keys));
            float* out = rows[r].out;
            // Four chains over the keys (k mod 4), added at the end of the tile: the order is
            // fixed by the key indices alone.
            const auto weight = [&](int k) { return V::broadcast(s[(t0 + k) * W + r]); };
            for (int i = 0; i < full; i += W) {
                const auto value = [&](int k) {
                    return V::load(widened + std::int64_t(k) * d + i);
                };
                typename V::Reg a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
                int k = 0;
                for (; k + 4 <= mine; k += 4) {
                    a0 = V::fmadd(weight(k), value(k), a0);
                    a1 = V::fmadd(weight(k + 1), value(k + 1), a1);
                    a2 = V::fmadd(weight(k + 2), value(k + 2), a2);
                    a3 = V::fmadd(weight(k + 3), value(k + 3), a3);
                }
                if (k < mine) a0 = V::fmadd(weight(k), value(k), a0);
                if (k + 1 < mine) a1 = V::fmadd(weight(k + 1), value(k + 1), a1);
                if (k + 2 < mine) a2 = V::fmadd(weight(k + 2), value(k + 2), a2);
                V::store(out + i, V::add(V::load(out + i), V::add(V::add(a0, a1), V::add(a2, a3))));
            }
            for (int i = full; i < d; ++i)
                for (int k = 0; k < mine; ++k)
                    out[i] += s[(t0 + k) * W + r] * widened[std::int64_t(k) * d + i];
        }
    }
}

// Up to kAttendTile rows, V::kWidth at a time.
template <class V>
void attendRowsX86(const AttentionRow* rows, int count, const PagedKv& kv, int g, float scale,
                   float* scratch) {
    for (int r = 0; r < count; r += V::kWidth)
        attendLanes<V>(rows + r, std::min(V::kWidth, count - r), kv, g, scale, scratch);
}

}  // namespace
}  // namespace iris::kernels::cpu
