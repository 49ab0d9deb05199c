// Scalar dot products of one weight row with one prepared activation row: the reference every
// SIMD variant is tested against. Integer sums are exact; scales are applied per block in f32.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/fp16.h"
#include "kernels/matmul.h"

namespace iris::kernels::cpu {
namespace {

using DotFn = float (*)(const void* w, const void* x, std::int64_t k);

float dotF32(const void* w, const void* x, std::int64_t k) {
    const auto* a = static_cast<const float*>(w);
    const auto* b = static_cast<const float*>(x);
    float sum = 0.0f;
    for (std::int64_t j = 0; j < k; ++j)
        sum += a[j] * b[j];
    return sum;
}

float dotF16(const void* w, const void* x, std::int64_t k) {
    const auto* a = static_cast<const std::uint16_t*>(w);
    const auto* b = static_cast<const float*>(x);
    float sum = 0.0f;
    for (std::int64_t j = 0; j < k; ++j)
        sum += fp16ToFp32(a[j]) * b[j];
    return sum;
}

float dotBf16(const void* w, const void* x, std::int64_t k) {
    const auto* a = static_cast<const std::uint16_t*>(w);
    const auto* b = static_cast<const float*>(x);
    float sum = 0.0f;
    for (std::int64_t j = 0; j < k; ++j)
        sum += bf16ToFp32(a[j]) * b[j];
    return sum;
}

// Sum over one 32-value block of q[j] * x.qs[j], q given by `value(j)`.
template <class Value>
int blockDot(const BlockQ8Act& x, Value value) {
    int sum = 0;
    for (int j = 0; j < 32; ++j)
        sum += value(j) * x.qs[j];
    return sum;
}

int blockSum(const BlockQ8Act& x) {
    return x.sum;
}

float dotQ8_0(const void* w, const void* x, std::int64_t k) {
    const auto* wb = static_cast<const BlockQ8_0*>(w);
    const auto* xb = static_cast<const BlockQ8Act*>(x);
    float sum = 0.0f;
    for (std::int64_t i = 0; i < k / kQK; ++i) {
        const int s = blockDot(xb[i], [&](int j) { return int(wb[i].qs[j]); });
        sum += fp16ToFp32(wb[i].d) * xb[i].d * float(s);
    }
    return sum;
}

// Legacy 4/5-bit types: q unsigned (storedValue), x = d * (q - offset) or x = d * q + m.

float dotQ4_0(const void* w, const void* x, std::int64_t k) {
    const auto* wb = static_cast<const BlockQ4_0*>(w);
    const auto* xb = static_cast<const BlockQ8Act*>(x);
    float sum = 0.0f;
    for (std::int64_t i = 0; i < k / kQK; ++i) {
        const int s = blockDot(xb[i], [&](int j) { return storedValue(wb[i], j); });
        sum += fp16ToFp32(wb[i].d) * xb[i].d * float(s - 8 * blockSum(xb[i]));
    }
    return sum;
}

float dotQ4_1(const void* w, const void* x, std::int64_t k) {
    const auto* wb = static_cast<const BlockQ4_1*>(w);
    const auto* xb = static_cast<const BlockQ8Act*>(x);
    float sum = 0.0f;
    for (std::int64_t i = 0; i < k / kQK; ++i) {
        const int s = blockDot(xb[i], [&](int j) { return storedValue(wb[i], j); });
        sum += xb[i].d *
               (fp16ToFp32(wb[i].d) * float(s) + fp16ToFp32(wb[i].m) * float(blockSum(xb[i])));
    }
    return sum;
}

float dotQ5_0(const void* w, const void* x, std::int64_t k) {
    const auto* wb = static_cast<const BlockQ5_0*>(w);
    const auto* xb = static_cast<const BlockQ8Act*>(x);
    float sum = 0.0f;
    for (std::int64_t i = 0; i < k / kQK; ++i) {
        const int s = blockDot(xb[i], [&](int j) { return storedValue(wb[i], j); });
        sum += fp16ToFp32(wb[i].d) * xb[i].d * float(s - 16 * blockSum(xb[i]));
    }
    return sum;
}

float dotQ5_1(const void* w, const void* x, std::int64_t k) {
    const auto* wb = static_cast<const BlockQ5_1*>(w);
    const auto* xb = static_cast<const BlockQ8Act*>(x);
    float sum = 0.0f;
    for (std::int64_t i = 0; i < k / kQK; ++i) {
        const int s = blockDot(xb[i], [&](int j) { return storedValue(wb[i], j); });
        sum += xb[i].d *
               (fp16ToFp32(wb[i].d) * float(s) + fp16ToFp32(wb[i].m) * float(blockSum(xb[i])));
    }
    return sum;
}

// K types against q8_K activations: integer sums per sub-block, scaled by the weights' integer
// sub-block scales, one float conversion per super-block.
template <bool kFiveBit, class Block>
float dotQ45_K(const void* w, const void* x, std::int64_t k) {
    const auto* wb = static_cast<const Block*>(w);
    const auto* xb = static_cast<const BlockQ8K*>(x);
    float sum = 0.0f;
    for (std::int64_t i = 0; i < k / kQKK; ++i) {
        int scaled = 0, minimums = 0;
        for (int s = 0; s < 8; ++s) {
            const std::uint8_t* q = wb[i].qs + 32 * (s / 2);
            const int shift = 4 * (s % 2);
            int dot = 0;
            for (int j = 0; j < 32; ++j) {
                int v = (q[j] >> shift) & 0xF;
                if constexpr (kFiveBit) v |= ((wb[i].qh[j] >> s) & 1) << 4;
                dot += v * xb[i].qs[32 * s + j];
            }
            int scale, min;
            scaleMinK4(s, wb[i].scales, scale, min);
            scaled += scale * dot;
            minimums += min * (xb[i].bsums[2 * s] + xb[i].bsums[2 * s + 1]);
        }
        sum += xb[i].d *
               (fp16ToFp32(wb[i].d) * float(scaled) - fp16ToFp32(wb[i].dmin) * float(minimums));
    }
    return sum;
}

float dotQ4_K(const void* w, const void* x, std::int64_t k) {
    return dotQ45_K<false, BlockQ4_K>(w, x, k);
}
float dotQ5_K(const void* w, const void* x, std::int64_t k) {
    return dotQ45_K<true, BlockQ5_K>(w, x, k);
}

float dotQ6_K(const void* w, const void* x, std::int64_t k) {
    const auto* wb = static_cast<const BlockQ6_K*>(w);
    const auto* xb = static_cast<const BlockQ8K*>(x);
    float sum = 0.0f;
    for (std::int64_t i = 0; i < k / kQKK; ++i) {
        int scaled = 0;
        for (int g = 0; g < 16; ++g) {  // 16-value group g = elements 16g .. 16g+15
            const int half = g / 8, quarter = (g % 8) / 2;
            const std::uint8_t* ql = wb[i].ql + 64 * half + 32 * (quarter % 2);
            const std::uint8_t* qh = wb[i].qh + 32 * half;
            const int lowShift = quarter < 2 ? 0 : 4, highShift = 2 * quarter;
            int dot = 0;
            for (int j = 16 * (g % 2); j < 16 * (g % 2) + 16; ++j) {
                const int q = ((ql[j] >> lowShift) & 0xF) | (((qh[j] >> highShift) & 3) << 4);
                dot += (q - 32) * xb[i].qs[128 * half + 32 * quarter + j];
            }
            scaled += wb[i].scales[g] * dot;
        }
        sum += xb[i].d * fp16ToFp32(wb[i].d) * float(scaled);
    }
    return sum;
}

template <DotFn Dot>
void matmulRows(const void* w, std::int64_t k, const void* prepared, std::int64_t m, float* y,
                std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd,
                std::int64_t wRowBytes, std::int64_t xRowBytes) {
    const auto* wBytes = static_cast<const std::uint8_t*>(w);
    const auto* xBytes = static_cast<const std::uint8_t*>(prepared);
    for (std::int64_t n = nBegin; n < nEnd; ++n) {
        for (std::int64_t i = 0; i < m; ++i) {
            y[i * yStride + n] = Dot(wBytes + n * wRowBytes, xBytes + i * xRowBytes, k);
        }
    }
}

template <TensorType kType, DotFn Dot>
void matmulType(const void* w, std::int64_t k, const void* prepared, std::int64_t m, float* y,
                std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
    matmulRows<Dot>(w, k, prepared, m, y, yStride, nBegin, nEnd, rowBytes(kType, k),
                    preparedRowBytes(kType, k));
}

// Round to nearest, ties to even (what cvtps2dq does), for |v| < 2^22: adding and subtracting
// 1.5 * 2^23 leaves the rounded value, with no libm call in the activation hot path.
int roundEven(float v) {
    constexpr float kMagic = 12582912.0f;
    return int((v + kMagic) - kMagic);
}

}  // namespace

MatmulFn matmulScalar(TensorType weightType) {
    switch (weightType) {
        case TensorType::F32:
            return matmulType<TensorType::F32, dotF32>;
        case TensorType::F16:
            return matmulType<TensorType::F16, dotF16>;
        case TensorType::BF16:
            return matmulType<TensorType::BF16, dotBf16>;
        case TensorType::Q8_0:
            return matmulType<TensorType::Q8_0, dotQ8_0>;
        case TensorType::Q4_0:
            return matmulType<TensorType::Q4_0, dotQ4_0>;
        case TensorType::Q4_1:
            return matmulType<TensorType::Q4_1, dotQ4_1>;
        case TensorType::Q5_0:
            return matmulType<TensorType::Q5_0, dotQ5_0>;
        case TensorType::Q5_1:
            return matmulType<TensorType::Q5_1, dotQ5_1>;
        case TensorType::Q4_K:
            return matmulType<TensorType::Q4_K, dotQ4_K>;
        case TensorType::Q5_K:
            return matmulType<TensorType::Q5_K, dotQ5_K>;
        case TensorType::Q6_K:
            return matmulType<TensorType::Q6_K, dotQ6_K>;
        default:
            return nullptr;
    }
}

void quantizeActivationRow(const float* x, std::int64_t k, void* blocks) {
    auto* b = static_cast<BlockQ8Act*>(blocks);
    for (std::int64_t i = 0; i < k / kQK; ++i, x += kQK) {
        float amax = 0.0f;
        for (int j = 0; j < kQK; ++j)
            amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = d;
        int sum = 0;
        for (int j = 0; j < kQK; ++j) {
            const int q = roundEven(x[j] * id);
            b[i].qs[j] = std::int8_t(q);
            sum += q;
        }
        b[i].sum = sum;
    }
}

void quantizeActivationRowK(const float* x, std::int64_t k, void* blocks) {
    auto* b = static_cast<BlockQ8K*>(blocks);
    for (std::int64_t i = 0; i < k / kQKK; ++i, x += kQKK) {
        float amax = 0.0f;
        for (int j = 0; j < kQKK; ++j)
            amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = d;
        for (int g = 0; g < 16; ++g) {
            int sum = 0;
            for (int j = 16 * g; j < 16 * g + 16; ++j) {
                const int q = roundEven(x[j] * id);
                b[i].qs[j] = std::int8_t(q);
                sum += q;
            }
            b[i].bsums[g] = std::int16_t(sum);
        }
    }
}

}  // namespace iris::kernels::cpu
