#include "kernels/rms_norm.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu_features.h"

namespace iris::kernels {
namespace {

// Independent float64 definition of the op, written as plainly as possible.
std::vector<double> referenceRmsNorm(const std::vector<float>& x, std::ptrdiff_t xStride,
                                     const std::vector<float>& w, std::int64_t rows,
                                     std::int64_t cols, float eps) {
    std::vector<double> y(std::size_t(rows * cols));
    for (std::int64_t r = 0; r < rows; ++r) {
        double sum = 0;
        for (std::int64_t i = 0; i < cols; ++i) {
            const double v = double(x[std::size_t(r * xStride + i)]);
            sum += v * v;
        }
        const double scale = 1.0 / std::sqrt(sum / double(cols) + double(eps));
        for (std::int64_t i = 0; i < cols; ++i) {
            y[std::size_t(r * cols + i)] =
                double(x[std::size_t(r * xStride + i)]) * scale * double(w[std::size_t(i)]);
        }
    }
    return y;
}

std::vector<float> filled(std::int64_t count, float value = 0.0f) {
    return std::vector<float>(std::size_t(count), value);
}

struct Variant {
    std::string name;
    cpu::RmsNormFn fn;
    CpuIsa isa;
};

std::vector<Variant> variants() {
    std::vector<Variant> list = {{"scalar", cpu::rmsNormScalar, CpuIsa::Scalar}};
#if defined(IRIS_KERNELS_X86)
    list.push_back({"avx2", cpu::rmsNormAvx2, CpuIsa::Avx2});
    list.push_back({"avx512", cpu::rmsNormAvx512, CpuIsa::Avx512});
#endif
    return list;
}

class RmsNormVariant : public ::testing::TestWithParam<Variant> {
protected:
    void SetUp() override {
        if (GetParam().isa > highestSupportedIsa(cpuFeatures())) {
            GTEST_SKIP() << "this CPU lacks " << cpuIsaName(GetParam().isa);
        }
    }
};

constexpr float kCanary = -12345.0f;

// Random rows (some with large or tiny magnitudes) in a padded buffer; checks every element
// against the float64 reference and that the padding between rows is untouched.
TEST_P(RmsNormVariant, MatchesFloat64ReferenceOnRandomRows) {
    std::mt19937 rng(1234);
    const std::int64_t colsTable[] = {1,  2,  7,  8,  9,  15,  16,  17,   31,
                                      32, 33, 63, 64, 65, 127, 896, 1000, 4864};
    for (std::int64_t cols : colsTable) {
        for (std::int64_t rows : {1, 3}) {
            for (float magnitude : {1e-3f, 1.0f, 1e3f}) {
                const std::ptrdiff_t xStride = cols + 5;  // odd padding: unaligned rows
                const std::ptrdiff_t yStride = cols + 3;
                std::normal_distribution<float> normal(0.0f, magnitude);
                std::vector<float> x = filled(rows * xStride);
                std::vector<float> w = filled(cols);
                for (float& v : x)
                    v = normal(rng);
                for (float& v : w)
                    v = 1.0f + 0.5f * std::normal_distribution<float>()(rng);
                std::vector<float> y = filled(rows * yStride, kCanary);
                const float eps = 1e-6f;

                GetParam().fn(x.data(), xStride, w.data(), y.data(), yStride, rows, cols, eps);

                const std::vector<double> ref = referenceRmsNorm(x, xStride, w, rows, cols, eps);
                for (std::int64_t r = 0; r < rows; ++r) {
                    for (std::int64_t i = 0; i < yStride; ++i) {
                        const float got = y[std::size_t(r * yStride + i)];
                        if (i >= cols) {
                            ASSERT_EQ(got, kCanary)
                                << "wrote past the row: cols=" << cols << " i=" << i;
                            continue;
                        }
                        const double want = ref[std::size_t(r * cols + i)];
                        ASSERT_NEAR(double(got), want, 2e-6 * std::abs(want) + 1e-30)
                            << GetParam().name << " cols=" << cols << " rows=" << rows
                            << " magnitude=" << magnitude << " r=" << r << " i=" << i;
                    }
                }
            }
        }
    }
}

TEST_P(RmsNormVariant, WorksInPlace) {
    const std::int64_t rows = 4, cols = 67;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
    std::vector<float> x = filled(rows * cols), w = filled(cols);
    for (float& v : x)
        v = uniform(rng);
    for (float& v : w)
        v = uniform(rng);
    const std::vector<double> ref = referenceRmsNorm(x, cols, w, rows, cols, 1e-5f);
    GetParam().fn(x.data(), cols, w.data(), x.data(), cols, rows, cols, 1e-5f);
    for (std::size_t i = 0; i < x.size(); ++i)
        ASSERT_NEAR(double(x[i]), ref[i], 2e-6 * std::abs(ref[i]) + 1e-12);
}

TEST_P(RmsNormVariant, ZeroRowGivesZeroNotNan) {
    std::vector<float> x(33, 0.0f), w(33, 1.0f), y(33, kCanary);
    GetParam().fn(x.data(), 33, w.data(), y.data(), 33, 1, 33, 1e-6f);
    for (float v : y)
        ASSERT_EQ(v, 0.0f);
}

TEST_P(RmsNormVariant, EmptyShapesTouchNothing) {
    std::vector<float> x(8, 1.0f), w(8, 1.0f), y(8, kCanary);
    GetParam().fn(x.data(), 8, w.data(), y.data(), 8, 0, 8, 1e-6f);
    GetParam().fn(x.data(), 8, w.data(), y.data(), 8, 1, 0, 1e-6f);
    for (float v : y)
        ASSERT_EQ(v, kCanary);
}

INSTANTIATE_TEST_SUITE_P(Cpu, RmsNormVariant, ::testing::ValuesIn(variants()),
                         [](const auto& param) { return param.param.name; });

TEST(RmsNorm, DispatchRunsTheActiveVariant) {
    const std::int64_t cols = 300;
    std::vector<float> x = filled(cols), w = filled(cols, 0.5f);
    std::vector<float> viaDispatch = filled(cols), viaVariant = filled(cols);
    for (std::int64_t i = 0; i < cols; ++i)
        x[std::size_t(i)] = float(i % 17) - 8.0f;
    rmsNorm(x.data(), cols, w.data(), viaDispatch.data(), cols, 1, cols, 1e-6f);
    for (const Variant& v : variants()) {
        if (v.isa != activeIsa()) continue;
        v.fn(x.data(), cols, w.data(), viaVariant.data(), cols, 1, cols, 1e-6f);
        EXPECT_EQ(viaDispatch, viaVariant) << v.name;
    }
}

}  // namespace
}  // namespace iris::kernels
