#include "kernels/quant.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu_features.h"
#include "kernels/fp16.h"

#if defined(IRIS_KERNELS_X86)
#include <immintrin.h>
#endif

namespace iris::kernels {
namespace {

using namespace cpu;

// IEEE binary16 by its definition, in double.
double halfValue(std::uint16_t h) {
    const int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    double v;
    if (exponent == 0) {
        v = std::ldexp(double(mantissa), -24);
    } else if (exponent == 31) {
        v = mantissa == 0 ? INFINITY : NAN;
    } else {
        v = std::ldexp(1.0 + double(mantissa) / 1024.0, exponent - 15);
    }
    return sign ? -v : v;
}

TEST(Fp16, EveryHalfConvertsToItsValueAndBack) {
    for (std::uint32_t h = 0; h < 65536; ++h) {
        const double want = halfValue(std::uint16_t(h));
        const float got = fp16ToFp32(std::uint16_t(h));
        if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(got)) << h;
            continue;
        }
        ASSERT_EQ(double(got), want) << "half " << h;
        ASSERT_EQ(fp32ToFp16(got), h) << "half " << h;
    }
}

#if defined(IRIS_KERNELS_X86)
__attribute__((target("f16c"))) std::uint16_t hardwareFp16(float f) {
    return std::uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}

TEST(Fp16, RoundsLikeTheF16cInstruction) {
    if (!cpuFeatures().f16c) GTEST_SKIP() << "this CPU has no F16C";
    std::mt19937 rng(3);
    for (int i = 0; i < 2000000; ++i) {
        // Random bit patterns cover subnormals, overflow, ties and NaN.
        const float f = std::bit_cast<float>(std::uint32_t(rng()));
        if (std::isnan(f)) continue;
        ASSERT_EQ(fp32ToFp16(f), hardwareFp16(f)) << std::hexfloat << f;
    }
}
#endif

TEST(Bf16, RoundsToNearestEvenAndKeepsNan) {
    EXPECT_EQ(fp32ToBf16(1.0f), 0x3f80);
    EXPECT_EQ(fp32ToBf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie -> even
    EXPECT_EQ(fp32ToBf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie -> even (up)
    EXPECT_EQ(fp32ToBf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
    EXPECT_TRUE(std::isnan(bf16ToFp32(fp32ToBf16(NAN))));
    EXPECT_EQ(bf16ToFp32(0xc040), -3.0f);
}

std::uint16_t half(float f) {
    return fp32ToFp16(f);
}

// Hand-built blocks: each value's position and formula straight from ggml's block comments.
TEST(Dequantize, LegacyBlockLayouts) {
    BlockQ4_0 q40{};
    q40.d = half(0.5f);
    for (int j = 0; j < 16; ++j)
        q40.qs[j] = std::uint8_t(j | ((15 - j) << 4));
    float y[32];
    dequantizeRow(TensorType::Q4_0, &q40, y, 32);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], 0.5f * float(j - 8)) << j;
        EXPECT_EQ(y[j + 16], 0.5f * float(15 - j - 8)) << j;
    }

    BlockQ4_1 q41{};
    q41.d = half(2.0f);
    q41.m = half(-1.0f);
    for (int j = 0; j < 16; ++j)
        q41.qs[j] = std::uint8_t(j | (j << 4));
    dequantizeRow(TensorType::Q4_1, &q41, y, 32);
    for (int j = 0; j < 16; ++j)
        EXPECT_EQ(y[j], 2.0f * float(j) - 1.0f);

    BlockQ5_0 q50{};
    q50.d = half(1.0f);
    const std::uint32_t qh = 0xA5A5F00Fu;  // 5th bits
    std::memcpy(q50.qh, &qh, 4);
    for (int j = 0; j < 16; ++j)
        q50.qs[j] = std::uint8_t(j | ((j ^ 5) << 4));
    dequantizeRow(TensorType::Q5_0, &q50, y, 32);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], float((j | int((qh >> j) & 1) << 4) - 16)) << j;
        EXPECT_EQ(y[j + 16], float(((j ^ 5) | int((qh >> (j + 16)) & 1) << 4) - 16)) << j;
    }

    BlockQ5_1 q51{};
    q51.d = half(0.25f);
    q51.m = half(3.0f);
    std::memcpy(q51.qh, &qh, 4);
    std::memcpy(q51.qs, q50.qs, 16);
    dequantizeRow(TensorType::Q5_1, &q51, y, 32);
    for (int j = 0; j < 16; ++j)
        EXPECT_EQ(y[j], 0.25f * float(j | int((qh >> j) & 1) << 4) + 3.0f);

    BlockQ8_0 q80{};
    q80.d = half(-0.125f);
    for (int j = 0; j < 32; ++j)
        q80.qs[j] = std::int8_t(j * 8 - 128);
    dequantizeRow(TensorType::Q8_0, &q80, y, 32);
    for (int j = 0; j < 32; ++j)
        EXPECT_EQ(y[j], -0.125f * float(j * 8 - 128));
}

TEST(Dequantize, KBlockLayouts) {
    // Q4_K: sub-block s has scale s+1 and minimum 2s (6-bit packing), values l % 16.
    BlockQ4_K q4k{};
    q4k.d = half(1.0f);
    q4k.dmin = half(0.5f);
    int sc[8], mn[8];
    for (int s = 0; s < 8; ++s) {
        sc[s] = 40 + s * 3;  // uses the high 2 bits for s >= 4 too
        mn[s] = 63 - s * 5;
    }
    for (int s = 0; s < 4; ++s) {
        q4k.scales[s] = std::uint8_t(sc[s] | ((sc[s + 4] >> 4) << 6));
        q4k.scales[s + 4] = std::uint8_t(mn[s] | ((mn[s + 4] >> 4) << 6));
        q4k.scales[s + 8] = std::uint8_t((sc[s + 4] & 0xF) | ((mn[s + 4] & 0xF) << 4));
    }
    for (int s = 0; s < 8; ++s) {
        int a, b;
        scaleMinK4(s, q4k.scales, a, b);
        ASSERT_EQ(a, sc[s]);
        ASSERT_EQ(b, mn[s]);
    }
    for (int i = 0; i < 128; ++i)
        q4k.qs[i] = std::uint8_t((i % 16) | (((i + 3) % 16) << 4));
    std::vector<float> y(256);
    dequantizeRow(TensorType::Q4_K, &q4k, y.data(), 256);
    for (int s = 0; s < 8; ++s) {
        for (int l = 0; l < 32; ++l) {
            const int byte = 32 * (s / 2) + l;
            const int q = s % 2 == 0 ? byte % 16 : (byte + 3) % 16;
            EXPECT_EQ(y[std::size_t(32 * s + l)],
                      1.0f * float(sc[s]) * float(q) - 0.5f * float(mn[s]))
                << "s=" << s << " l=" << l;
        }
    }

    // Q6_K: element e of each 128-half: 4 low bits from ql, 2 high bits from qh, scale per 16.
    BlockQ6_K q6k{};
    q6k.d = half(0.5f);
    for (int i = 0; i < 16; ++i)
        q6k.scales[i] = std::int8_t(i * 9 - 70);
    for (int i = 0; i < 128; ++i)
        q6k.ql[i] = std::uint8_t(i * 37);
    for (int i = 0; i < 64; ++i)
        q6k.qh[i] = std::uint8_t(i * 91 + 7);
    dequantizeRow(TensorType::Q6_K, &q6k, y.data(), 256);
    for (int e = 0; e < 256; ++e) {
        const int half128 = e / 128, r = e % 128, quarter = r / 32, l = r % 32;
        const std::uint8_t lowByte = q6k.ql[64 * half128 + l + (quarter % 2) * 32];
        const int low = quarter < 2 ? (lowByte & 0xF) : (lowByte >> 4);
        const int high = (q6k.qh[32 * half128 + l] >> (2 * quarter)) & 3;
        const int q = (low | (high << 4)) - 32;
        EXPECT_EQ(y[std::size_t(e)], 0.5f * float(q6k.scales[e / 16]) * float(q)) << e;
    }
}

struct RoundTrip {
    TensorType type;
    double maxRelativeRms;  // RMS error / RMS value on Gaussian data
};

class QuantRoundTrip : public ::testing::TestWithParam<RoundTrip> {};

TEST_P(QuantRoundTrip, QuantizeThenDequantizeStaysWithinTheTypesPrecision) {
    const TensorType type = GetParam().type;
    const std::int64_t n = 256 * 16;
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<float> x(std::size_t(n), 0.0f), y(std::size_t(n), 0.0f);
    for (float& v : x)
        v = normal(rng);
    x[5] = 0.5f;  // an outlier, as real weights have
    std::vector<std::byte> q(std::size_t(rowBytes(type, n)));
    ASSERT_TRUE(canQuantize(type));
    quantizeRow(type, x.data(), q.data(), n);
    dequantizeRow(type, q.data(), y.data(), n);
    double err = 0, ref = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        err += (double(y[i]) - double(x[i])) * (double(y[i]) - double(x[i]));
        ref += double(x[i]) * double(x[i]);
    }
    EXPECT_LT(std::sqrt(err / ref), GetParam().maxRelativeRms) << tensorTypeInfo(type).name;
    EXPECT_GT(std::sqrt(err / ref), GetParam().maxRelativeRms / 1000) << "suspiciously exact";

    // All-zero rows stay zero (no division by a zero scale).
    std::vector<float> zeros(std::size_t(n), 0.0f);
    quantizeRow(type, zeros.data(), q.data(), n);
    dequantizeRow(type, q.data(), y.data(), n);
    for (float v : y)
        ASSERT_EQ(v, 0.0f) << tensorTypeInfo(type).name;
}

INSTANTIATE_TEST_SUITE_P(
    Types, QuantRoundTrip,
    ::testing::Values(RoundTrip{TensorType::F16, 1e-3}, RoundTrip{TensorType::BF16, 5e-3},
                      RoundTrip{TensorType::Q8_0, 0.01}, RoundTrip{TensorType::Q4_0, 0.15},
                      RoundTrip{TensorType::Q4_1, 0.12}, RoundTrip{TensorType::Q5_0, 0.07},
                      RoundTrip{TensorType::Q5_1, 0.06}, RoundTrip{TensorType::Q4_K, 0.12},
                      RoundTrip{TensorType::Q5_K, 0.06}, RoundTrip{TensorType::Q6_K, 0.03}),
    [](const auto& param) { return std::string(tensorTypeInfo(param.param.type).name); });

TEST(Quantize, Q8_0MatchesGgmlReferenceRounding) {
    // d = max|x| / 127 stored as f16; q = round(x / d) with halves away from zero.
    float x[32];
    for (int j = 0; j < 32; ++j)
        x[j] = float(j - 16) * 0.5f;  // max |x| = 8
    BlockQ8_0 b{};
    quantizeRow(TensorType::Q8_0, x, &b, 32);
    EXPECT_EQ(b.d, fp32ToFp16(8.0f / 127.0f));
    const float id = 127.0f / 8.0f;
    for (int j = 0; j < 32; ++j)
        EXPECT_EQ(b.qs[j], std::int8_t(std::round(x[j] * id))) << j;
    EXPECT_EQ(b.qs[0], -127);
}

}  // namespace
}  // namespace iris::kernels
