#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu_features.h"
#include "kernels/fp16.h"

namespace iris::kernels {
namespace {

template <class T>
float load(const T* p, int i) {
    if constexpr (sizeof(T) == 2) {
        return fp16ToFp32(p[i]);
    } else {
        return p[i];
    }
}

// Row by row, each on its own: the dot products, softmax and weighted sum in key order.
template <class T>
void attendRowsPlain(const AttentionRow* rows, int count, const PagedKv& kv, int g, float scale,
                     float* scores) {
    const auto* keys = static_cast<const T*>(kv.keys);
    const auto* values = static_cast<const T*>(kv.values);
    const auto row = [&](std::int64_t t) {
        const std::int64_t block = kv.page(t);
        return ((block * kv.blockSize + t % kv.blockSize) * kv.kvHeads + g) * kv.headDim;
    };
    for (int r = 0; r < count; ++r) {
        const float* q = rows[r].q;
        const std::int64_t length = rows[r].length;
        float max = -std::numeric_limits<float>::infinity();
        for (std::int64_t t = 0; t < length; ++t) {
            const T* k = keys + row(t);
            float dot = 0.0f;
            for (int i = 0; i < kv.headDim; ++i)
                dot += q[i] * load(k, i);
            scores[t] = dot * scale;
            max = std::max(max, scores[t]);
        }
        float sum = 0.0f;
        for (std::int64_t t = 0; t < length; ++t) {
            scores[t] = std::exp(scores[t] - max);
            sum += scores[t];
        }
        float* out = rows[r].out;
        std::fill(out, out + kv.headDim, 0.0f);
        for (std::int64_t t = 0; t < length; ++t) {
            const T* v = values + row(t);
            const float p = scores[t] / sum;
            for (int i = 0; i < kv.headDim; ++i)
                out[i] += p * load(v, i);
        }
    }
}

}  // namespace

namespace cpu {

void attendRowsScalar(const AttentionRow* rows, int count, const PagedKv& kv, int kvHead,
                      float scale, float* scratch) {
    if (kv.type == TensorType::F16) {
        attendRowsPlain<std::uint16_t>(rows, count, kv, kvHead, scale, scratch);
    } else {
        attendRowsPlain<float>(rows, count, kv, kvHead, scale, scratch);
    }
}

void attendHeads(AttendRowsFn rowsFn, const float* q, int heads, const PagedKv& kv,
                 std::int64_t length, float scale, float* out, int headBegin, int headEnd) {
    thread_local std::vector<float> scratch;
    scratch.resize(std::size_t(attendRowsScratch(kv.headDim, length)));
    const int group = heads / kv.kvHeads;
    AttentionRow rows[kAttendTile];
    for (int h = headBegin; h < headEnd;) {
        const int g = h / group;
        const int end = std::min({headEnd, (g + 1) * group, h + kAttendTile});
        for (int r = 0; r < end - h; ++r)
            rows[r] = {q + std::int64_t(h + r) * kv.headDim, out + std::int64_t(h + r) * kv.headDim,
                       length};
        rowsFn(rows, end - h, kv, g, scale, scratch.data());
        h = end;
    }
}

void attendScalar(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                  float* out, float*, int headBegin, int headEnd) {
    attendHeads(attendRowsScalar, q, heads, kv, length, scale, out, headBegin, headEnd);
}

}  // namespace cpu

namespace {
constexpr cpu::IsaVariants<cpu::AttendRowsFn> kAttendRowsVariants = {
    .scalar = cpu::attendRowsScalar,
    .avx2 = IRIS_X86_VARIANT(cpu::attendRowsAvx2),
    .avx512 = IRIS_X86_VARIANT(cpu::attendRowsAvx512),
};
}  // namespace

int attendRowsTile() {
    return cpu::kAttendTile;
}

std::int64_t attendRowsScratch(int headDim, std::int64_t maxLength) {
    // Transposed queries and outputs, a block of widened K or V rows, and the scores
    // (key-major, a lane per row).
    return 2 * std::int64_t(cpu::kAttendTile) * headDim + std::int64_t(cpu::kKeyBlock) * headDim +
           std::int64_t(cpu::kAttendTile) * maxLength;
}

void attendRows(const AttentionRow* rows, int count, const PagedKv& kv, int kvHead, float scale,
                float* scratch) {
    cpu::pickVariant(kAttendRowsVariants, activeIsa())(rows, count, kv, kvHead, scale, scratch);
}

void attendPaged(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                 float* out, float*, int headBegin, int headEnd) {
    cpu::attendHeads(cpu::pickVariant(kAttendRowsVariants, activeIsa()), q, heads, kv, length,
                     scale, out, headBegin, headEnd);
}

}  // namespace iris::kernels
