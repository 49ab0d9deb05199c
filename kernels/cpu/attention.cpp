#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

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

template <class T>
void attend(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
            float* out, float* scores, int headBegin, int headEnd) {
    const int group = heads / kv.kvHeads;
    const auto* keys = static_cast<const T*>(kv.keys);
    const auto* values = static_cast<const T*>(kv.values);
    const auto row = [&](std::int64_t t, int g) {
        const std::int64_t block = kv.blockTable[t / kv.blockSize];
        return ((block * kv.blockSize + t % kv.blockSize) * kv.kvHeads + g) * kv.headDim;
    };
    for (int h = headBegin; h < headEnd; ++h) {
        const int g = h / group;
        const float* qh = q + std::int64_t(h) * kv.headDim;
        float max = -std::numeric_limits<float>::infinity();
        for (std::int64_t t = 0; t < length; ++t) {
            const T* k = keys + row(t, g);
            float dot = 0.0f;
            for (int i = 0; i < kv.headDim; ++i)
                dot += qh[i] * load(k, i);
            scores[t] = dot * scale;
            max = std::max(max, scores[t]);
        }
        float sum = 0.0f;
        for (std::int64_t t = 0; t < length; ++t) {
            scores[t] = std::exp(scores[t] - max);
            sum += scores[t];
        }
        float* oh = out + std::int64_t(h) * kv.headDim;
        std::fill(oh, oh + kv.headDim, 0.0f);
        for (std::int64_t t = 0; t < length; ++t) {
            const T* v = values + row(t, g);
            const float p = scores[t] / sum;
            for (int i = 0; i < kv.headDim; ++i)
                oh[i] += p * load(v, i);
        }
    }
}

}  // namespace

namespace cpu {

void attendScalar(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                  float* out, float* scratch, int headBegin, int headEnd) {
    if (kv.type == TensorType::F16) {
        attend<std::uint16_t>(q, heads, kv, length, scale, out, scratch, headBegin, headEnd);
    } else {
        attend<float>(q, heads, kv, length, scale, out, scratch, headBegin, headEnd);
    }
}

}  // namespace cpu

namespace {
constexpr cpu::IsaVariants<cpu::AttendFn> kAttendVariants = {
    .scalar = cpu::attendScalar,
    .avx2 = IRIS_X86_VARIANT(cpu::attendAvx2),
    .avx512 = IRIS_X86_VARIANT(cpu::attendAvx512),
};
}  // namespace

void attendPaged(const float* q, int heads, const PagedKv& kv, std::int64_t length, float scale,
                 float* out, float* scratch, int headBegin, int headEnd) {
    cpu::pickVariant(kAttendVariants, activeIsa())(q, heads, kv, length, scale, out, scratch,
                                                   headBegin, headEnd);
}

}  // namespace iris::kernels
