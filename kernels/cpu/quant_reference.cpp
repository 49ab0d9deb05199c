// Scalar dequantisation and quantisation: the readable definitions of every block layout.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "kernels/cpu/quant_blocks.h"
#include "kernels/fp16.h"
#include "kernels/quant.h"

namespace iris::kernels {
namespace {

using namespace cpu;

template <class Block>
const Block* blocksOf(const void* p) {
    return static_cast<const Block*>(p);
}

// ---- dequantisation --------------------------------------------------------------------------

// Q4_0, Q4_1, Q5_0, Q5_1: x = d * (q - offset), or x = d * q + m for the types with a minimum.
template <class Block, int kOffset>
void dequantizeLegacy(const Block* b, float* y, std::int64_t blocks) {
    for (std::int64_t i = 0; i < blocks; ++i, y += kQK) {
        const float d = fp16ToFp32(b[i].d);
        if constexpr (requires { b[i].m; }) {
            const float m = fp16ToFp32(b[i].m);
            for (int j = 0; j < kQK; ++j)
                y[j] = float(storedValue(b[i], j)) * d + m;
        } else {
            for (int j = 0; j < kQK; ++j)
                y[j] = float(storedValue(b[i], j) - kOffset) * d;
        }
    }
}

void dequantizeQ8_0(const BlockQ8_0* b, float* y, std::int64_t blocks) {
    for (std::int64_t i = 0; i < blocks; ++i, y += kQK) {
        const float d = fp16ToFp32(b[i].d);
        for (int j = 0; j < kQK; ++j)
            y[j] = float(b[i].qs[j]) * d;
    }
}

// Q4_K, Q5_K: sub-block s has x = d * sc[s] * q - dmin * m[s]; sub-blocks 2i, 2i+1 are the low
// and high nibbles of qs[32i .. 32i+31], and bit s of qh[l] is the 5th bit of element l of s.
template <class Block>
void dequantizeQ45_K(const Block* b, float* y, std::int64_t blocks) {
    for (std::int64_t i = 0; i < blocks; ++i) {
        const float d = fp16ToFp32(b[i].d), dmin = fp16ToFp32(b[i].dmin);
        for (int s = 0; s < 8; ++s) {
            int sc, mn;
            scaleMinK4(s, b[i].scales, sc, mn);
            const float scale = d * float(sc), min = dmin * float(mn);
            const std::uint8_t* q = b[i].qs + 32 * (s / 2);
            for (int l = 0; l < 32; ++l) {
                int v = (q[l] >> (4 * (s % 2))) & 0xF;
                if constexpr (requires { b[i].qh; }) v |= ((b[i].qh[l] >> s) & 1) << 4;
                *y++ = scale * float(v) - min;
            }
        }
    }
}

void dequantizeQ6_K(const BlockQ6_K* b, float* y, std::int64_t blocks) {
    for (std::int64_t i = 0; i < blocks; ++i) {
        const float d = fp16ToFp32(b[i].d);
        const std::uint8_t* ql = b[i].ql;
        const std::uint8_t* qh = b[i].qh;
        const std::int8_t* sc = b[i].scales;
        for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = int((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = int((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = int((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = int((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * float(sc[is]) * float(q1);
                y[l + 32] = d * float(sc[is + 2]) * float(q2);
                y[l + 64] = d * float(sc[is + 4]) * float(q3);
                y[l + 96] = d * float(sc[is + 6]) * float(q4);
            }
        }
    }
}

// ---- quantisation ----------------------------------------------------------------------------

// The value of largest magnitude, with its sign (ggml's legacy quantisers scale by it).
float signedAbsMax(const float* x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

void quantizeQ8_0(const float* x, BlockQ8_0* b, std::int64_t blocks) {
    for (std::int64_t i = 0; i < blocks; ++i, x += kQK) {
        float amax = 0.0f;
        for (int j = 0; j < kQK; ++j)
            amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = fp32ToFp16(d);
        for (int j = 0; j < kQK; ++j)
            b[i].qs[j] = std::int8_t(std::round(x[j] * id));
    }
}

void quantizeQ4_0(const float* x, BlockQ4_0* b, std::int64_t blocks) {
    for (std::int64_t i = 0; i < blocks; ++i, x += kQK) {
        const float d = signedAbsMax(x, kQK) / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = fp32ToFp16(d);
        for (int j = 0; j < 16; ++j) {
            const auto lo = std::uint8_t(std::min(15, int(std::int8_t(x[j] * id + 8.5f))));
            const auto hi = std::uint8_t(std::min(15, int(std::int8_t(x[j + 16] * id + 8.5f))));
            b[i].qs[j] = std::uint8_t(lo | (hi << 4));
        }
    }
}

void quantizeQ4_1(const float* x, BlockQ4_1* b, std::int64_t blocks) {
    for (std::int64_t i = 0; i < blocks; ++i, x += kQK) {
        const float min = *std::min_element(x, x + kQK), max = *std::max_element(x, x + kQK);
        const float d = (max - min) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = fp32ToFp16(d);
        b[i].m = fp32ToFp16(min);
        for (int j = 0; j < 16; ++j) {
            const auto lo = std::uint8_t(std::min(15, int(std::int8_t((x[j] - min) * id + 0.5f))));
            const auto hi =
                std::uint8_t(std::min(15, int(std::int8_t((x[j + 16] - min) * id + 0.5f))));
            b[i].qs[j] = std::uint8_t(lo | (hi << 4));
        }
    }
}

void quantizeQ5_0(const float* x, BlockQ5_0* b, std::int64_t blocks) {
    for (std::int64_t i = 0; i < blocks; ++i, x += kQK) {
        const float d = signedAbsMax(x, kQK) / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = fp32ToFp16(d);
        std::uint32_t qh = 0;
        for (int j = 0; j < 16; ++j) {
            const auto lo = std::uint32_t(std::min(31, int(std::int8_t(x[j] * id + 16.5f))));
            const auto hi = std::uint32_t(std::min(31, int(std::int8_t(x[j + 16] * id + 16.5f))));
            b[i].qs[j] = std::uint8_t((lo & 0xF) | ((hi & 0xF) << 4));
            qh |= ((lo >> 4) & 1u) << j;
            qh |= ((hi >> 4) & 1u) << (j + 16);
        }
        std::memcpy(b[i].qh, &qh, 4);
    }
}

void quantizeQ5_1(const float* x, BlockQ5_1* b, std::int64_t blocks) {
    for (std::int64_t i = 0; i < blocks; ++i, x += kQK) {
        const float min = *std::min_element(x, x + kQK), max = *std::max_element(x, x + kQK);
        const float d = (max - min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = fp32ToFp16(d);
        b[i].m = fp32ToFp16(min);
        std::uint32_t qh = 0;
        for (int j = 0; j < 16; ++j) {
            const auto lo = std::uint32_t(std::min(31, int(std::int8_t((x[j] - min) * id + 0.5f))));
            const auto hi =
                std::uint32_t(std::min(31, int(std::int8_t((x[j + 16] - min) * id + 0.5f))));
            b[i].qs[j] = std::uint8_t((lo & 0xF) | ((hi & 0xF) << 4));
            qh |= ((lo >> 4) & 1u) << j;
            qh |= ((hi >> 4) & 1u) << (j + 16);
        }
        std::memcpy(b[i].qh, &qh, 4);
    }
}

int clampRound(float v, int lo, int hi) {
    return std::clamp(int(std::lround(v)), lo, hi);
}

// Q4_K / Q5_K: per 32-value sub-block an affine fit x ~ scale * q - min with q in [0, levels],
// then the 8 scales and 8 minimums quantised to 6 bits under f16 super-block scales.
struct KFit {
    std::uint16_t d, dmin;
    std::uint8_t scales[12];
    int q[kQKK];
};

KFit fitK(const float* x, int levels) {
    float scale[8], minimum[8];
    for (int s = 0; s < 8; ++s) {
        const float* xs = x + 32 * s;
        const float lo = std::min(0.0f, *std::min_element(xs, xs + 32));
        const float hi = *std::max_element(xs, xs + 32);
        scale[s] = (hi - lo) / float(levels);
        minimum[s] = -lo;
    }
    KFit fit{};
    const float maxScale = *std::max_element(scale, scale + 8);
    const float maxMin = *std::max_element(minimum, minimum + 8);
    fit.d = fp32ToFp16(maxScale / 63.0f);
    fit.dmin = fp32ToFp16(maxMin / 63.0f);
    const float d = fp16ToFp32(fit.d), dmin = fp16ToFp32(fit.dmin);
    int sc[8], mn[8];
    for (int s = 0; s < 8; ++s) {
        sc[s] = d > 0.0f ? clampRound(scale[s] / d, 0, 63) : 0;
        mn[s] = dmin > 0.0f ? clampRound(minimum[s] / dmin, 0, 63) : 0;
    }
    for (int s = 0; s < 4; ++s) {
        fit.scales[s] = std::uint8_t(sc[s] | ((sc[s + 4] >> 4) << 6));
        fit.scales[s + 4] = std::uint8_t(mn[s] | ((mn[s + 4] >> 4) << 6));
        fit.scales[s + 8] = std::uint8_t((sc[s + 4] & 0xF) | ((mn[s + 4] & 0xF) << 4));
    }
    for (int s = 0; s < 8; ++s) {
        const float step = d * float(sc[s]), offset = dmin * float(mn[s]);
        for (int l = 0; l < 32; ++l) {
            fit.q[32 * s + l] =
                step > 0.0f ? clampRound((x[32 * s + l] + offset) / step, 0, levels) : 0;
        }
    }
    return fit;
}

void quantizeQ4_K(const float* x, BlockQ4_K* b, std::int64_t blocks) {
    for (std::int64_t i = 0; i < blocks; ++i, x += kQKK) {
        const KFit fit = fitK(x, 15);
        b[i].d = fit.d;
        b[i].dmin = fit.dmin;
        std::memcpy(b[i].scales, fit.scales, 12);
        for (int s = 0; s < 8; s += 2) {
            for (int l = 0; l < 32; ++l) {
                b[i].qs[16 * s + l] =
                    std::uint8_t(fit.q[32 * s + l] | (fit.q[32 * (s + 1) + l] << 4));
            }
        }
    }
}

void quantizeQ5_K(const float* x, BlockQ5_K* b, std::int64_t blocks) {
    for (std::int64_t i = 0; i < blocks; ++i, x += kQKK) {
        const KFit fit = fitK(x, 31);
        b[i].d = fit.d;
        b[i].dmin = fit.dmin;
        std::memcpy(b[i].scales, fit.scales, 12);
        std::memset(b[i].qh, 0, 32);
        for (int s = 0; s < 8; s += 2) {
            for (int l = 0; l < 32; ++l) {
                const int q0 = fit.q[32 * s + l], q1 = fit.q[32 * (s + 1) + l];
                b[i].qs[16 * s + l] = std::uint8_t((q0 & 0xF) | ((q1 & 0xF) << 4));
                b[i].qh[l] = std::uint8_t(b[i].qh[l] | ((q0 >> 4) << s) | ((q1 >> 4) << (s + 1)));
            }
        }
    }
}

void quantizeQ6_K(const float* x, BlockQ6_K* b, std::int64_t blocks) {
    for (std::int64_t i = 0; i < blocks; ++i, x += kQKK) {
        float scale[16];
        for (int s = 0; s < 16; ++s)
            scale[s] = signedAbsMax(x + 16 * s, 16) / -32.0f;
        float maxScale = 0.0f;
        for (float s : scale)
            maxScale = std::max(maxScale, std::fabs(s));
        b[i].d = fp32ToFp16(maxScale / 127.0f);
        const float d = fp16ToFp32(b[i].d);
        int q[kQKK];
        for (int s = 0; s < 16; ++s) {
            const int sc = d > 0.0f ? clampRound(scale[s] / d, -127, 127) : 0;
            b[i].scales[s] = std::int8_t(sc);
            const float step = d * float(sc);
            for (int l = 0; l < 16; ++l) {
                q[16 * s + l] = step != 0.0f ? clampRound(x[16 * s + l] / step, -32, 31) + 32 : 32;
            }
        }
        for (int half = 0; half < 2; ++half) {
            const int* qq = q + 128 * half;
            std::uint8_t* ql = b[i].ql + 64 * half;
            std::uint8_t* qh = b[i].qh + 32 * half;
            for (int l = 0; l < 32; ++l) {
                const int q1 = qq[l], q2 = qq[l + 32], q3 = qq[l + 64], q4 = qq[l + 96];
                ql[l] = std::uint8_t((q1 & 0xF) | ((q3 & 0xF) << 4));
                ql[l + 32] = std::uint8_t((q2 & 0xF) | ((q4 & 0xF) << 4));
                qh[l] = std::uint8_t((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) |
                                     ((q4 >> 4) << 6));
            }
        }
    }
}

}  // namespace

void dequantizeRow(TensorType type, const void* src, float* dst, std::int64_t count) {
    const std::int64_t blocks = count / tensorTypeInfo(type).blockElements;
    switch (type) {
        case TensorType::F32:
            std::memcpy(dst, src, std::size_t(count) * 4);
            return;
        case TensorType::F16: {
            const auto* h = static_cast<const std::uint16_t*>(src);
            for (std::int64_t i = 0; i < count; ++i)
                dst[i] = fp16ToFp32(h[i]);
            return;
        }
        case TensorType::BF16: {
            const auto* h = static_cast<const std::uint16_t*>(src);
            for (std::int64_t i = 0; i < count; ++i)
                dst[i] = bf16ToFp32(h[i]);
            return;
        }
        case TensorType::Q4_0:
            return dequantizeLegacy<BlockQ4_0, 8>(blocksOf<BlockQ4_0>(src), dst, blocks);
        case TensorType::Q4_1:
            return dequantizeLegacy<BlockQ4_1, 0>(blocksOf<BlockQ4_1>(src), dst, blocks);
        case TensorType::Q5_0:
            return dequantizeLegacy<BlockQ5_0, 16>(blocksOf<BlockQ5_0>(src), dst, blocks);
        case TensorType::Q5_1:
            return dequantizeLegacy<BlockQ5_1, 0>(blocksOf<BlockQ5_1>(src), dst, blocks);
        case TensorType::Q8_0:
            return dequantizeQ8_0(blocksOf<BlockQ8_0>(src), dst, blocks);
        case TensorType::Q4_K:
            return dequantizeQ45_K(blocksOf<BlockQ4_K>(src), dst, blocks);
        case TensorType::Q5_K:
            return dequantizeQ45_K(blocksOf<BlockQ5_K>(src), dst, blocks);
        case TensorType::Q6_K:
            return dequantizeQ6_K(blocksOf<BlockQ6_K>(src), dst, blocks);
        default:
            assert(false && "dequantizeRow: type has no kernels (check computable first)");
    }
}

bool canQuantize(TensorType type) {
    return tensorTypeInfo(type).computable;
}

void quantizeRow(TensorType type, const float* src, void* dst, std::int64_t count) {
    const std::int64_t blocks = count / tensorTypeInfo(type).blockElements;
    switch (type) {
        case TensorType::F32:
            std::memcpy(dst, src, std::size_t(count) * 4);
            return;
        case TensorType::F16: {
            auto* h = static_cast<std::uint16_t*>(dst);
            for (std::int64_t i = 0; i < count; ++i)
                h[i] = fp32ToFp16(src[i]);
            return;
        }
        case TensorType::BF16: {
            auto* h = static_cast<std::uint16_t*>(dst);
            for (std::int64_t i = 0; i < count; ++i)
                h[i] = fp32ToBf16(src[i]);
            return;
        }
        case TensorType::Q4_0:
            return quantizeQ4_0(src, static_cast<BlockQ4_0*>(dst), blocks);
        case TensorType::Q4_1:
            return quantizeQ4_1(src, static_cast<BlockQ4_1*>(dst), blocks);
        case TensorType::Q5_0:
            return quantizeQ5_0(src, static_cast<BlockQ5_0*>(dst), blocks);
        case TensorType::Q5_1:
            return quantizeQ5_1(src, static_cast<BlockQ5_1*>(dst), blocks);
        case TensorType::Q8_0:
            return quantizeQ8_0(src, static_cast<BlockQ8_0*>(dst), blocks);
        case TensorType::Q4_K:
            return quantizeQ4_K(src, static_cast<BlockQ4_K*>(dst), blocks);
        case TensorType::Q5_K:
            return quantizeQ5_K(src, static_cast<BlockQ5_K*>(dst), blocks);
        case TensorType::Q6_K:
            return quantizeQ6_K(src, static_cast<BlockQ6_K*>(dst), blocks);
        default:
            assert(false && "quantizeRow: type has no kernels (check canQuantize first)");
    }
}

}  // namespace iris::kernels
