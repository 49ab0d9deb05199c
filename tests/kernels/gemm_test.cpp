#include "kernels/gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/gemm_internal.h"
#include "kernels/cpu_features.h"
#include "kernels/fp16.h"

namespace iris::kernels {
namespace {

constexpr float kUntouched = -12345.0f;  // y outside the written range must keep this

// W (n rows of `type`, row stride wStride), x (m rows, stride xStride), bias, and their f64 views.
struct Problem {
    TensorType type;
    std::int64_t n, k, m;
    std::ptrdiff_t wStride, xStride;
    std::vector<std::uint16_t> w16;  // F16 / BF16 weights
    std::vector<float> w32;          // F32 weights
    std::vector<double> wd;          // the weights as stored, exactly
    std::vector<float> x, bias;

    const void* weights() const {
        return type == TensorType::F32 ? static_cast<const void*>(w32.data())
                                       : static_cast<const void*>(w16.data());
    }
};

Problem makeProblem(TensorType type, std::int64_t n, std::int64_t k, std::int64_t m,
                    std::ptrdiff_t wPad, std::ptrdiff_t xPad, unsigned seed) {
    Problem p{type, n, k, m, k + wPad, k + xPad, {}, {}, {}, {}, {}};
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const std::size_t wSize = std::size_t(n * p.wStride);
    p.wd.assign(wSize, 0.0);
    if (type == TensorType::F32)
        p.w32.assign(wSize, 0.0f);
    else
        p.w16.assign(wSize, 0);
    for (std::size_t i = 0; i < wSize; ++i) {
        const float v = 0.05f * normal(rng);
        if (type == TensorType::F32) {
            p.w32[i] = v;
            p.wd[i] = v;
        } else if (type == TensorType::F16) {
            p.w16[i] = fp32ToFp16(v);
            p.wd[i] = fp16ToFp32(p.w16[i]);
        } else {
            p.w16[i] = fp32ToBf16(v);
            p.wd[i] = bf16ToFp32(p.w16[i]);
        }
    }
    p.x.assign(std::size_t(m * p.xStride), 0.0f);
    for (float& v : p.x)
        v = normal(rng);
    if (!p.x.empty()) p.x[0] = 25.0f;  // an activation outlier, as real hidden states have
    p.bias.assign(std::size_t(n), 0.0f);
    for (float& v : p.bias)
        v = normal(rng);
    return p;
}

struct Reference {
    double value, tolerance;
};

double roundToBf16(double v) {
    return bf16ToFp32(fp32ToBf16(float(v)));
}

// The float64 product; a correct f32 kernel is within a few ulps of sum |x w| (+ |bias|) of it.
// A kernel that drops or repeats one of the k terms misses by about sum |x w| / k, far more.
// `bf16`: the product of the operands rounded to bfloat16 (GemmPrecision::Bf16), whose products
// are exact in f32, so the same tolerance holds.
Reference reference(const Problem& p, std::int64_t i, std::int64_t n, bool withBias,
                    bool bf16 = false) {
    double sum = withBias ? double(p.bias[std::size_t(n)]) : 0.0, magnitude = std::fabs(sum);
    for (std::int64_t j = 0; j < p.k; ++j) {
        double x = p.x[std::size_t(i * p.xStride + j)], w = p.wd[std::size_t(n * p.wStride + j)];
        if (bf16) {
            x = roundToBf16(x);
            w = roundToBf16(w);
        }
        sum += x * w;
        magnitude += std::fabs(x * w);
    }
    return {sum, 1e-5 * magnitude + 1e-30};
}

std::string typeName(TensorType type) {
    return type == TensorType::F32 ? "F32" : type == TensorType::F16 ? "F16" : "BF16";
}

// Runs `fn` on columns [nBegin, nEnd) and checks every written value against the float64
// product and every other value of y for being untouched.
void checkVariant(cpu::GemmFn fn, const Problem& p, std::int64_t nBegin, std::int64_t nEnd,
                  bool withBias, bool bf16) {
    ASSERT_NE(fn, nullptr);
    const std::ptrdiff_t yStride = p.n + 7;
    std::vector<float> y(std::size_t(p.m * yStride), kUntouched);
    fn(p.type, p.weights(), p.wStride, p.k, p.x.data(), p.xStride, p.m,
       withBias ? p.bias.data() : nullptr, y.data(), yStride, nBegin, nEnd);
    int failures = 0;
    for (std::int64_t i = 0; i < p.m && failures < 5; ++i) {
        for (std::int64_t n = 0; n < yStride && failures < 5; ++n) {
            const float got = y[std::size_t(i * yStride + n)];
            if (n < nBegin || n >= nEnd) {
                if (got != kUntouched) {
                    ++failures;
                    ADD_FAILURE() << "wrote outside the range at row " << i << " column " << n;
                }
                continue;
            }
            const Reference r = reference(p, i, n, withBias, bf16);
            if (!(std::fabs(double(got) - r.value) <= r.tolerance)) {
                ++failures;
                ADD_FAILURE() << (bf16 ? "bf16 " : "") << typeName(p.type) << " m=" << p.m
                              << " k=" << p.k << " n=[" << nBegin << "," << nEnd
                              << ") bias=" << withBias << ": y[" << i << "][" << n << "] = " << got
                              << ", expected " << r.value << " +- " << r.tolerance;
            }
        }
    }
}

// Every variant, and the AVX-512 blocking run on AVX2 (so that it is tested without AVX-512).
enum class Variant { Scalar, Avx2, Avx512, Avx2As12x32 };

CpuIsa isaOf(Variant v) {
    return v == Variant::Scalar   ? CpuIsa::Scalar
           : v == Variant::Avx512 ? CpuIsa::Avx512
                                  : CpuIsa::Avx2;
}

std::string variantName(Variant v) {
    return v == Variant::Avx2As12x32 ? "avx2_as_12x32" : std::string(cpuIsaName(isaOf(v)));
}

class GemmVariantTest : public ::testing::TestWithParam<Variant> {
protected:
    void SetUp() override {
        if (isaOf(GetParam()) > highestSupportedIsa(cpuFeatures()))
            GTEST_SKIP() << "this CPU lacks " << cpuIsaName(isaOf(GetParam()));
    }
    bool slow() const { return GetParam() == Variant::Scalar; }
    cpu::GemmFn variant() const {
        switch (GetParam()) {
            case Variant::Scalar:
                return cpu::gemmScalar;
#if defined(IRIS_KERNELS_X86)
            case Variant::Avx2:
                return cpu::gemmAvx2;
            case Variant::Avx512:
                return cpu::gemmAvx512;
            case Variant::Avx2As12x32:
                return cpu::gemmAvx2As12x32;
#endif
            default:
                return nullptr;
        }
    }

    void check(const Problem& p, std::int64_t nBegin, std::int64_t nEnd, bool withBias) {
        checkVariant(variant(), p, nBegin, nEnd, withBias, false);
    }
};

TEST_P(GemmVariantTest, MatchesFloat64ProductOnManyShapes) {
    const std::int64_t ms[] = {1, 5, 6, 7, 64, 300};
    const std::int64_t ks[] = {1, 7, 80, 256, 1280, 1283};
    constexpr std::int64_t kN = 70;  // more than two AVX-512 panels, four AVX2 panels and a tail
    unsigned seed = 1;
    for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
        for (std::int64_t m : ms) {
            for (std::int64_t k : ks) {
                // The scalar reference is slow in debug builds: it gets the small k only.
                if (slow() && k > 256 && m > 7) continue;
                const Problem p = makeProblem(type, kN, k, m, 3, 5, seed++);
                const bool withBias = seed % 2 == 0;
                check(p, 0, kN, withBias);   // the whole matrix
                check(p, 3, 61, !withBias);  // starts and ends inside a panel
                check(p, 17, 18, withBias);  // one column
                if (HasFailure()) return;
            }
        }
    }
}

TEST_P(GemmVariantTest, UnpaddedStridesAndSeveralColumnBlocks) {
    // wStride == xStride == k, and column ranges wider than one packed block: 256 columns with
    // few rows of x, 4096 with 2048 rows or more.
    for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
        const Problem p = makeProblem(type, 1100, 33, 9, 0, 0, 99);
        check(p, 0, 1100, true);
        check(p, 5, 1093, false);
    }
    const Problem many = makeProblem(TensorType::F16, 4200, 3, 2050, 0, 0, 98);
    check(many, 1, 4199, true);
}

TEST_P(GemmVariantTest, ZeroKWritesTheBias) {
    const Problem p = makeProblem(TensorType::F32, 20, 0, 3, 1, 1, 7);
    const std::ptrdiff_t yStride = 20;
    std::vector<float> y(std::size_t(3 * yStride), kUntouched);
    variant()(p.type, p.weights(), p.wStride, 0, p.x.data(), p.xStride, 3, p.bias.data(), y.data(),
              yStride, 2, 19);
    for (std::int64_t i = 0; i < 3; ++i) {
        EXPECT_EQ(y[std::size_t(i * yStride + 1)], kUntouched);
        EXPECT_EQ(y[std::size_t(i * yStride + 19)], kUntouched);
        for (std::int64_t n = 2; n < 19; ++n)
            EXPECT_EQ(y[std::size_t(i * yStride + n)], p.bias[std::size_t(n)]);
    }
}

TEST_P(GemmVariantTest, TwoThreadsOnDisjointRangesEqualOneCall) {
    // Each output's arithmetic does not depend on where the range starts, so the split results
    // are bit-identical, and the per-thread packing buffers must not interfere.
    for (TensorType type : {TensorType::F32, TensorType::F16}) {
        const Problem p = makeProblem(type, 301, 600, 97, 2, 1, 5);
        const std::ptrdiff_t yStride = p.n;
        std::vector<float> whole(std::size_t(p.m * yStride), 0.0f), split(whole.size(), 0.0f);
        const cpu::GemmFn fn = variant();
        fn(p.type, p.weights(), p.wStride, p.k, p.x.data(), p.xStride, p.m, p.bias.data(),
           whole.data(), yStride, 0, p.n);
        for (int round = 0; round < 3; ++round) {
            std::thread a([&] {
                fn(p.type, p.weights(), p.wStride, p.k, p.x.data(), p.xStride, p.m, p.bias.data(),
                   split.data(), yStride, 0, 37);
            });
            std::thread b([&] {
                fn(p.type, p.weights(), p.wStride, p.k, p.x.data(), p.xStride, p.m, p.bias.data(),
                   split.data(), yStride, 37, p.n);
            });
            a.join();
            b.join();
            ASSERT_EQ(0, std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float)))
                << typeName(type) << " round " << round;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllVariants, GemmVariantTest,
                         ::testing::Values(Variant::Scalar, Variant::Avx2, Variant::Avx512,
                                           Variant::Avx2As12x32),
                         [](const ::testing::TestParamInfo<Variant>& param) {
                             return variantName(param.param);
                         });

TEST(GemmTest, DispatchedCallMatchesFloat64Product) {
    const Problem p = makeProblem(TensorType::BF16, 40, 300, 13, 4, 0, 3);
    std::vector<float> y(std::size_t(p.m * p.n), 0.0f);
    gemm(p.type, p.weights(), p.wStride, p.k, p.x.data(), p.xStride, p.m, p.bias.data(), y.data(),
         p.n, 0, p.n);
    for (std::int64_t i = 0; i < p.m; ++i) {
        for (std::int64_t n = 0; n < p.n; ++n) {
            const Reference r = reference(p, i, n, true);
            ASSERT_NEAR(y[std::size_t(i * p.n + n)], r.value, r.tolerance) << i << "," << n;
        }
    }
}

TEST(GemmTest, UnsupportedWeightTypeWritesNan) {
    EXPECT_FALSE(gemmSupports(TensorType::Q8_0));
    EXPECT_TRUE(gemmSupports(TensorType::BF16));
    const std::vector<std::uint8_t> w(64, 0);
    const std::vector<float> x(32, 1.0f);
    std::vector<float> y(8, 0.0f);
    gemm(TensorType::Q8_0, w.data(), 32, 32, x.data(), 32, 1, nullptr, y.data(), 8, 2, 6);
    for (int n = 0; n < 8; ++n)
        EXPECT_EQ(std::isnan(y[std::size_t(n)]), n >= 2 && n < 6) << n;
}

// ---- GemmPrecision::Bf16 ----------------------------------------------------------------------

enum class Bf16Variant { Scalar, Rounded, Avx512Bf16, Amx };

std::string bf16VariantName(Bf16Variant v) {
    switch (v) {
        case Bf16Variant::Scalar:
            return "scalar";
        case Bf16Variant::Rounded:
            return "rounded";
        case Bf16Variant::Avx512Bf16:
            return "avx512bf16";
        case Bf16Variant::Amx:
            return "amx";
    }
    return "?";
}

class GemmBf16Test : public ::testing::TestWithParam<Bf16Variant> {
protected:
    void SetUp() override {
        if (GetParam() == Bf16Variant::Amx && !(cpuFeatures().amxBf16 && cpuFeatures().avx512bf16))
            GTEST_SKIP() << "this CPU (or the OS) offers no AMX bf16 tiles";
    }
    cpu::GemmFn variant() const {
        switch (GetParam()) {
            case Bf16Variant::Scalar:
                return cpu::gemmBf16Scalar;
            case Bf16Variant::Rounded:
                return cpu::gemmBf16Rounded;
#if defined(IRIS_KERNELS_X86)
            case Bf16Variant::Avx512Bf16:
                return cpu::gemmBf16Avx512;
            case Bf16Variant::Amx:
                return cpu::gemmBf16Amx;
#endif
            default:
                return nullptr;
        }
    }
};

TEST_P(GemmBf16Test, MatchesFloat64ProductOfTheRoundedOperands) {
    // Rows around the 16-row tiles and 32-row blocks, k around the 32-value tiles; m = 300 with
    // k = 1283 spans two blocks of converted rows.
    const std::int64_t ms[] = {1, 5, 16, 33, 300};
    const std::int64_t ks[] = {1, 7, 31, 32, 80, 1283};
    constexpr std::int64_t kN = 70;  // two 32-column blocks and a 6-column tail
    unsigned seed = 11;
    for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
        for (std::int64_t m : ms) {
            for (std::int64_t k : ks) {
                if (GetParam() == Bf16Variant::Scalar && k > 256 && m > 5) continue;
                if (m == 300 && type != TensorType::F16) continue;  // one type is enough there
                const Problem p = makeProblem(type, kN, k, m, 3, 5, seed++);
                const bool withBias = seed % 2 == 0;
                checkVariant(variant(), p, 0, kN, withBias, true);
                checkVariant(variant(), p, 3, 61, !withBias, true);
                checkVariant(variant(), p, 17, 18, withBias, true);
                if (HasFailure()) return;
            }
        }
    }
}

TEST_P(GemmBf16Test, StaysWithinBf16RoundingOfTheExactProduct) {
    // Each operand moves by at most 2^-9 of itself, so each product by about 2^-8.
    const Problem p = makeProblem(TensorType::F32, 40, 500, 9, 0, 0, 21);
    std::vector<float> y(std::size_t(p.m * p.n), 0.0f);
    variant()(p.type, p.weights(), p.wStride, p.k, p.x.data(), p.xStride, p.m, p.bias.data(),
              y.data(), p.n, 0, p.n);
    double worst = 0.0;
    for (std::int64_t i = 0; i < p.m; ++i) {
        for (std::int64_t n = 0; n < p.n; ++n) {
            const Reference exact = reference(p, i, n, true);
            const double magnitude = exact.tolerance / 1e-5;
            const double error = std::fabs(double(y[std::size_t(i * p.n + n)]) - exact.value);
            ASSERT_LE(error, magnitude / 256.0) << i << "," << n;
            worst = std::max(worst, error / magnitude);
        }
    }
    EXPECT_GT(worst, 0.0) << "the operands were not rounded to bf16";
}

TEST_P(GemmBf16Test, ZeroKWritesTheBias) {
    const Problem p = makeProblem(TensorType::F16, 20, 0, 3, 1, 1, 7);
    std::vector<float> y(std::size_t(3 * 20), kUntouched);
    variant()(p.type, p.weights(), p.wStride, 0, p.x.data(), p.xStride, 3, p.bias.data(), y.data(),
              20, 2, 19);
    for (std::int64_t i = 0; i < 3; ++i)
        for (std::int64_t n = 0; n < 20; ++n)
            EXPECT_EQ(y[std::size_t(i * 20 + n)],
                      n >= 2 && n < 19 ? p.bias[std::size_t(n)] : kUntouched);
}

TEST_P(GemmBf16Test, TwoThreadsOnDisjointRangesEqualOneCall) {
    const Problem p = makeProblem(TensorType::F16, 301, 600, 97, 2, 1, 5);
    std::vector<float> whole(std::size_t(p.m * p.n), 0.0f), split(whole.size(), 0.0f);
    const cpu::GemmFn fn = variant();
    fn(p.type, p.weights(), p.wStride, p.k, p.x.data(), p.xStride, p.m, p.bias.data(), whole.data(),
       p.n, 0, p.n);
    std::thread a([&] {
        fn(p.type, p.weights(), p.wStride, p.k, p.x.data(), p.xStride, p.m, p.bias.data(),
           split.data(), p.n, 0, 64);
    });
    std::thread b([&] {
        fn(p.type, p.weights(), p.wStride, p.k, p.x.data(), p.xStride, p.m, p.bias.data(),
           split.data(), p.n, 64, p.n);
    });
    a.join();
    b.join();
    EXPECT_EQ(0, std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float)));
}

INSTANTIATE_TEST_SUITE_P(AllVariants, GemmBf16Test,
                         ::testing::Values(Bf16Variant::Scalar, Bf16Variant::Rounded,
                                           Bf16Variant::Avx512Bf16, Bf16Variant::Amx),
                         [](const ::testing::TestParamInfo<Bf16Variant>& param) {
                             return bf16VariantName(param.param);
                         });

TEST(GemmTest, DispatchedBf16CallMatchesTheRoundedProduct) {
    const Problem p = makeProblem(TensorType::F16, 40, 300, 13, 4, 0, 3);
    checkVariant(
        [](TensorType type, const void* w, std::ptrdiff_t wStride, std::int64_t k, const float* x,
           std::ptrdiff_t xStride, std::int64_t m, const float* bias, float* y,
           std::ptrdiff_t yStride, std::int64_t nBegin, std::int64_t nEnd) {
            gemm(GemmPrecision::Bf16, type, w, wStride, k, x, xStride, m, bias, y, yStride, nBegin,
                 nEnd);
        },
        p, 0, p.n, true, true);
}

// The choice of precision for the vision tower is a measurement: both timed, and the answer
// the same for the whole process; without bf16 instructions (or with them turned off) it is F32.
TEST(GemmTest, Bf16IsChosenByMeasurementOnlyWhereTheCpuHasBf16Products) {
    const Bf16Speed speed = measureBf16Speed();
    EXPECT_GT(speed.f32Seconds, 0.0);
    EXPECT_GT(speed.bf16Seconds, 0.0);
    EXPECT_TRUE(std::isfinite(speed.f32Seconds) && std::isfinite(speed.bf16Seconds));
    const bool faster = gemmBf16Faster();
    EXPECT_EQ(gemmBf16Faster(), faster);
    if (!(cpuFeatures().avx512bf16 && activeIsa() >= CpuIsa::Avx512)) {
        EXPECT_FALSE(faster);
    }
}

}  // namespace
}  // namespace iris::kernels
