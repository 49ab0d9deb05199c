#pragma once
// The x86 attention kernel, written once over a small vector abstraction and instantiated for
// AVX2 (8 floats) and AVX-512 (16 floats). In an unnamed namespace for the same reason as
// matmul_x86.h: each instruction set's copy must stay in its own translation unit.
//
// Each key/value row is widened to f32 once per call and used by every row of the call (the
// query heads of a GQA group, and in a prefill chunk several tokens of one sequence).
// Each vector type names kVectors, the vectors of lanes (rows) it takes side by side at most,
// and kValueDims, the output dimensions one pass over the values keeps in registers with two
// vectors of rows (2 x kValueDims accumulators; with four, half as many dimensions).

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

// A tile's query rows as lanes: each lane's key count (0 past the rows), and the fewest keys
// any row has. Keys below `shortest` count for every lane, so only the keys from there on need
// a lane-by-lane mask (the last few tokens of a prefill chunk's tile).
template <class V, int N>
struct LaneLengths {
    LaneLengths(const AttentionRow* rows, int count) {
        float lengths[N * V::kWidth];
        shortest = count > 0 ? rows[0].length : 0;
        for (int r = 0; r < N * V::kWidth; ++r) {
            lengths[r] = r < count ? float(rows[r].length) : 0.0f;  // exact below 2^24 keys
            if (r < count) shortest = std::min(shortest, rows[r].length);
        }
        for (int v = 0; v < N; ++v)
            of[v] = V::load(lengths + v * V::kWidth);
    }
    // x where key t is among the lane's keys, else -inf.
    typename V::Reg maskAbove(std::int64_t t, int v, typename V::Reg x) const {
        return V::ifLess(V::broadcast(float(t)), of[v], x,
                         V::broadcast(-std::numeric_limits<float>::infinity()));
    }
    typename V::Reg of[N];
    std::int64_t shortest;
};

// e^(s - max) per lane in place over the first `longest` keys (the scaled scores of vector v
// of the lanes, a row of `stride` floats per key, masked keys 0 so that they add exactly 0),
// summed in key order. Returns 1 / sum per lane; the caller scales the weighted sum by it.
template <class V, int N>
typename V::Reg softmaxLanes(float* s, std::ptrdiff_t stride, std::int64_t longest,
                             const LaneLengths<V, N>& lanes, int v, typename V::Reg max) {
    typename V::Reg sum = V::zero();
    const std::int64_t open = std::min(lanes.shortest, longest);
    std::int64_t t = 0;
    for (; t < open; ++t) {
        const typename V::Reg e = expNonPositive<V>(V::sub(V::load(s + t * stride), max));
        sum = V::add(sum, e);
        V::store(s + t * stride, e);
    }
    for (; t < longest; ++t) {
        const typename V::Reg e =
            V::ifLess(V::broadcast(float(t)), lanes.of[v],
                      expNonPositive<V>(V::sub(V::load(s + t * stride), max)), V::zero());
        sum = V::add(sum, e);
        V::store(s + t * stride, e);
    }
    return V::div(V::broadcast(1.0f), sum);
}

// Walks the K or V rows of KV head g from token t on: the first element of each row, looking
// the block table up once per block rather than dividing by the block size for every row.
class RowCursor {
public:
    RowCursor(const PagedKv& kv, int g, std::int64_t t)
        : m_kv(kv), m_g(g), m_t(t), m_inBlock(int(t % kv.blockSize)), m_element(first()) {}
    std::int64_t element() const { return m_element; }
    void next() {
        ++m_t;
        if (++m_inBlock < m_kv.blockSize) {
            m_element += std::int64_t(m_kv.kvHeads) * m_kv.headDim;
        } else {
            m_inBlock = 0;
            m_element = first();
        }
    }

private:
    std::int64_t first() const {
        return ((m_kv.page(m_t) * m_kv.blockSize + m_inBlock) * m_kv.kvHeads + m_g) * m_kv.headDim;
    }
    const PagedKv& m_kv;
    int m_g;
    std::int64_t m_t;
    int m_inBlock;
    std::int64_t m_element;
};

// Rows [t0, t0 + n) of K or V (`base`) for KV head g, widened to f32 into `to` (n x d floats).
template <class V>
void widenRows(const PagedKv& kv, int g, const void* base, std::int64_t t0, int n, float* to) {
    constexpr int W = V::kWidth;
    const int d = kv.headDim, full = d / W * W;
    const bool f16 = kv.type == TensorType::F16;
    RowCursor row(kv, g, t0);
    for (int k = 0; k < n; ++k, row.next()) {
        const std::int64_t e = row.element();
        float* out = to + std::int64_t(k) * d;
        for (int i = 0; i < full; i += W)
            V::store(out + i, loadChunk<V>(base, e, i, f16));
        for (int i = full; i < d; ++i)
            out[i] = loadScalar<V>(base, e, i, f16);
    }
}

// s[t] = scale * (the N x W lanes' q . K[t]) for the first `longest` keys, and in max the
// largest of each lane's own: each widened K value broadcast and multiplied into the N query
// vectors of its dimension (qt, dimension-major), 4 keys at a time (the block's tail one at a
// time, summing the same way: in dimension order).
template <class V, int N>
void scoreKeys(const float* qt, const PagedKv& kv, int g, std::int64_t longest,
               const LaneLengths<V, N>& lanes, float scale, float* widened, float* s,
               typename V::Reg max[N]) {
    constexpr int W = V::kWidth, L = N * W;
    using Reg = typename V::Reg;
    const int d = kv.headDim;
    const Reg scaleBy = V::broadcast(scale);
    for (int v = 0; v < N; ++v)
        max[v] = V::broadcast(-std::numeric_limits<float>::infinity());
    for (std::int64_t t0 = 0; t0 < longest; t0 += kKeyBlock) {
        const int keys = int(std::min<std::int64_t>(kKeyBlock, longest - t0));
        widenRows<V>(kv, g, kv.keys, t0, keys, widened);
        int k = 0;
        for (; k + 4 <= keys; k += 4) {
            Reg acc[4][N];
            for (int j = 0; j < 4; ++j)
                for (int v = 0; v < N; ++v)
                    acc[j][v] = V::zero();
            for (int i = 0; i < d; ++i) {
                Reg q[N];
                for (int v = 0; v < N; ++v)
                    q[v] = V::load(qt + i * L + v * W);
                for (int j = 0; j < 4; ++j) {
                    const Reg key = V::broadcast(widened[std::int64_t(k + j) * d + i]);
                    for (int v = 0; v < N; ++v)
                        acc[j][v] = V::fmadd(key, q[v], acc[j][v]);
                }
            }
            for (int j = 0; j < 4; ++j)
                for (int v = 0; v < N; ++v)
                    V::store(s + (t0 + k + j) * L + v * W, acc[j][v]);
        }
        for (; k < keys; ++k) {
            Reg acc[N];
            for (int v = 0; v < N; ++v)
                acc[v] = V::zero();
            for (int i = 0; i < d; ++i) {
                const Reg key = V::broadcast(widened[std::int64_t(k) * d + i]);
                for (int v = 0; v < N; ++v)
                    acc[v] = V::fmadd(key, V::load(qt + i * L + v * W), acc[v]);
            }
            for (int v = 0; v < N; ++v)
                V::store(s + (t0 + k) * L + v * W, acc[v]);
        }
        // The block's scores scaled and taken into the lanes' maxima while they are in L1.
        for (std::int64_t t = t0; t < t0 + keys; ++t) {
            for (int v = 0; v < N; ++v) {
                const Reg scaled = V::mul(V::load(s + t * L + v * W), scaleBy);
                max[v] =
                    V::max(max[v], t < lanes.shortest ? scaled : lanes.maskAbove(t, v, scaled));
                V::store(s + t * L + v * W, scaled);
            }
        }
    }
}

// ot[i] = sum over the first `longest` keys t of s[t] V[t][i], the rows in lanes (ot
// dimension-major): each widened V value broadcast and multiplied into the N weight vectors of
// its key, V::kValueDims dimensions at a time, each lane summing in key order (one chain).
template <class V, int N>
void weighValues(const float* s, const PagedKv& kv, int g, std::int64_t longest, float* widened,
                 float* ot) {
    constexpr int W = V::kWidth, L = N * W, D = N > 2 ? V::kValueDims / 2 : V::kValueDims;
    using Reg = typename V::Reg;
    const int d = kv.headDim, blocked = d / D * D;
    for (int i = 0; i < d * L; i += W)
        V::store(ot + i, V::zero());
    for (std::int64_t t0 = 0; t0 < longest; t0 += kKeyBlock) {
        const int keys = int(std::min<std::int64_t>(kKeyBlock, longest - t0));
        widenRows<V>(kv, g, kv.values, t0, keys, widened);
        for (int i0 = 0; i0 < blocked; i0 += D) {
            Reg acc[D][N];
            for (int j = 0; j < D; ++j)
                for (int v = 0; v < N; ++v)
                    acc[j][v] = V::load(ot + (i0 + j) * L + v * W);
            for (int k = 0; k < keys; ++k) {
                Reg weight[N];
                for (int v = 0; v < N; ++v)
                    weight[v] = V::load(s + (t0 + k) * L + v * W);
                for (int j = 0; j < D; ++j) {
                    const Reg value = V::broadcast(widened[std::int64_t(k) * d + i0 + j]);
                    for (int v = 0; v < N; ++v)
                        acc[j][v] = V::fmadd(value, weight[v], acc[j][v]);
                }
            }
            for (int j = 0; j < D; ++j)
                for (int v = 0; v < N; ++v)
                    V::store(ot + (i0 + j) * L + v * W, acc[j][v]);
        }
        for (int i = blocked; i < d; ++i) {
            for (int k = 0; k < keys; ++k) {
                const Reg value = V::broadcast(widened[std::int64_t(k) * d + i]);
                for (int v = 0; v < N; ++v) {
                    float* o = ot + i * L + v * W;
                    V::store(o, V::fmadd(value, V::load(s + (t0 + k) * L + v * W), V::load(o)));
                }
            }
        }
    }
}

// Up to N x V::kWidth rows of KV head g, a lane per row, N vectors of lanes side by side: the
// scores and the weighted sum of values as small matrix products blocked in registers
// (scoreKeys, weighValues), the softmax per lane in between. Every lane sums in dimension order
// for a score and in key order for an output value, on its own: a row's bits do not depend on
// the other rows, their number, or N. scratch: see attendRowsScratch.
template <class V, int N>
void attendLanes(const AttentionRow* rows, int count, const PagedKv& kv, int g, float scale,
                 float* scratch) {
    constexpr int W = V::kWidth, L = N * W;
    const int d = kv.headDim;
    std::int64_t longest = 0;
    for (int r = 0; r < count; ++r)
        longest = std::max(longest, rows[r].length);
    float* qt = scratch;                                  // d x L
    float* ot = qt + std::int64_t(d) * kAttendTile;       // d x L
    float* widened = ot + std::int64_t(d) * kAttendTile;  // kKeyBlock x d
    float* s = widened + std::int64_t(d) * kKeyBlock;     // longest x L
    for (int i = 0; i < d; ++i)
        for (int r = 0; r < L; ++r)
            qt[i * L + r] = r < count ? rows[r].q[i] : 0.0f;
    const LaneLengths<V, N> lanes(rows, count);
    typename V::Reg max[N], inverse[N];
    scoreKeys<V, N>(qt, kv, g, longest, lanes, scale, widened, s, max);
    for (int v = 0; v < N; ++v)
        inverse[v] = softmaxLanes<V, N>(s + v * W, L, longest, lanes, v, max[v]);
    weighValues<V, N>(s, kv, g, longest, widened, ot);
    for (int i = 0; i < d; ++i)
        for (int v = 0; v < N; ++v)
            V::store(ot + i * L + v * W, V::mul(V::load(ot + i * L + v * W), inverse[v]));
    for (int r = 0; r < count; ++r)
        for (int i = 0; i < d; ++i)
            rows[r].out[i] = ot[i * L + r];
}

// Up to kAttendTile rows: one vector of lanes when they fit (a decode step's query heads), else
// two, else (where the registers allow) four side by side, as many times as needed. The more
// rows a call takes, the fewer times each K and V row is widened per row.
template <class V>
void attendRowsX86(const AttentionRow* rows, int count, const PagedKv& kv, int g, float scale,
                   float* scratch) {
    constexpr int W = V::kWidth;
    if (count <= W) {
        attendLanes<V, 1>(rows, count, kv, g, scale, scratch);
    } else if (V::kVectors < 4 || count <= 2 * W) {
        for (int r = 0; r < count; r += 2 * W)
            attendLanes<V, 2>(rows + r, std::min(2 * W, count - r), kv, g, scale, scratch);
    } else {
        for (int r = 0; r < count; r += 4 * W)
            attendLanes<V, 4>(rows + r, std::min(4 * W, count - r), kv, g, scale, scratch);
    }
}

}  // namespace
}  // namespace iris::kernels::cpu
