#include "kernels/matmul.h"

#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu_features.h"
#include "kernels/quant.h"

namespace iris::kernels {
namespace {

constexpr TensorType kTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16,
                                 TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1,
                                 TensorType::Q5_0, TensorType::Q5_1, TensorType::Q4_K,
                                 TensorType::Q5_K, TensorType::Q6_K};

struct Problem {
    TensorType type;
    std::int64_t n, k, m;
    std::vector<std::byte> w;  // n rows of `type`
    std::vector<float> wf;     // the same weights dequantised
    std::vector<float> x;      // m rows of k
    std::vector<std::byte> prepared;
};

Problem makeProblem(TensorType type, std::int64_t n, std::int64_t m, unsigned seed) {
    const std::int64_t block = tensorTypeInfo(type).blockElements;
    Problem p{type, n, block == 256 ? 512 : 160, m, {}, {}, {}, {}};
    if (type == TensorType::F32 || type == TensorType::F16 || type == TensorType::BF16)
        p.k = 77;  // odd tail
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> raw(std::size_t(n * p.k), 0.0f);
    for (float& v : raw)
        v = 0.05f * normal(rng);
    p.w.resize(std::size_t(rowBytes(type, p.k) * n));
    p.wf.resize(raw.size());
    for (std::int64_t r = 0; r < n; ++r) {
        quantizeRow(type, raw.data() + r * p.k, p.w.data() + r * rowBytes(type, p.k), p.k);
        dequantizeRow(type, p.w.data() + r * rowBytes(type, p.k), p.wf.data() + r * p.k, p.k);
    }
    p.x.resize(std::size_t(m * p.k));
    for (float& v : p.x)
        v = normal(rng);
    p.x[3] = 25.0f;  // an activation outlier, as real hidden states have
    p.prepared.resize(std::size_t(preparedRowBytes(type, p.k) * m));
    prepareActivations(type, p.x.data(), p.k, m, p.k, p.prepared.data());
    return p;
}

bool quantisedActivations(TensorType type) {
    return type != TensorType::F32 && type != TensorType::F16 && type != TensorType::BF16;
}

// The float64 product of the dequantised weights and the original activations, and how far a
// correct kernel may be from it: the 8-bit activation rounding (at most half a step per value)
// plus f32 accumulation.
struct Reference {
    double value, tolerance;
};

Reference reference(const Problem& p, std::int64_t i, std::int64_t n) {
    // Activations share one scale per 32 values (per 256 for the K types).
    const std::int64_t group = cpu::usesQ8KActivations(p.type) ? 256 : 32;
    double sum = 0, magnitude = 0, quantisation = 0;
    for (std::int64_t b = 0; b < p.k; b += group) {
        double amax = 0;
        for (std::int64_t j = b; j < std::min(b + group, p.k); ++j)
            amax = std::max(amax, std::fabs(double(p.x[std::size_t(i * p.k + j)])));
        for (std::int64_t j = b; j < std::min(b + group, p.k); ++j) {
            const double w = p.wf[std::size_t(n * p.k + j)], x = p.x[std::size_t(i * p.k + j)];
            sum += w * x;
            magnitude += std::fabs(w * x);
            quantisation += std::fabs(w) * amax / 254.0;
        }
    }
    const double tolerance =
        (quantisedActivations(p.type) ? quantisation * 1.001 : 0.0) + 1e-5 * magnitude + 1e-6;
    return {sum, tolerance};
}

struct Variant {
    std::string name;
    CpuIsa isa;
};

class MatmulVariant : public ::testing::TestWithParam<CpuIsa> {
protected:
    void SetUp() override {
        if (GetParam() > highestSupportedIsa(cpuFeatures()))
            GTEST_SKIP() << "this CPU lacks " << cpuIsaName(GetParam());
    }
    cpu::MatmulFn variant(TensorType type) const {
        switch (GetParam()) {
            case CpuIsa::Scalar:
                return cpu::matmulScalar(type);
#if defined(IRIS_KERNELS_X86)
            case CpuIsa::Avx2:
                return cpu::matmulAvx2(type);
            case CpuIsa::Avx512:
                return cpu::matmulAvx512(type);
#else
            default:
                return nullptr;
#endif
        }
        return nullptr;
    }
};

TEST_P(MatmulVariant, EveryTypeMatchesTheFloat64Reference) {
    for (TensorType type : kTypes) {
        const cpu::MatmulFn fn = variant(type);
        ASSERT_NE(fn, nullptr) << tensorTypeInfo(type).name;
        for (std::int64_t m : {1, 2, 3, 4, 5, 9}) {
            const Problem p = makeProblem(type, 6, m, unsigned(m) * 7 + unsigned(type));
            std::vector<float> y(std::size_t(m * p.n), NAN);
            fn(p.w.data(), p.k, p.prepared.data(), m, y.data(), p.n, 0, p.n);
            for (std::int64_t i = 0; i < m; ++i) {
                for (std::int64_t n = 0; n < p.n; ++n) {
                    const Reference ref = reference(p, i, n);
                    ASSERT_NEAR(double(y[std::size_t(i * p.n + n)]), ref.value, ref.tolerance)
                        << tensorTypeInfo(type).name << " " << cpuIsaName(GetParam()) << " m=" << m
                        << " i=" << i << " n=" << n;
                }
            }
        }
    }
}

TEST_P(MatmulVariant, AgreesWithTheScalarKernelOnTheSameQuantisedInputs) {
    for (TensorType type : kTypes) {
        const Problem p = makeProblem(type, 5, 6, 99);
        std::vector<float> got(std::size_t(p.m * p.n)), want(got.size());
        variant(type)(p.w.data(), p.k, p.prepared.data(), p.m, got.data(), p.n, 0, p.n);
        cpu::matmulScalar(type)(p.w.data(), p.k, p.prepared.data(), p.m, want.data(), p.n, 0, p.n);
        for (std::size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(double(got[i]), double(want[i]), 2e-5 * (std::fabs(double(want[i])) + 1.0))
                << tensorTypeInfo(type).name << " " << i;
        }
    }
}

TEST_P(MatmulVariant, WritesOnlyTheRequestedColumns) {
    const Problem p = makeProblem(TensorType::Q4_K, 8, 3, 5);
    std::vector<float> y(std::size_t(p.m * 10), -7.0f);  // yStride 10 > n
    variant(TensorType::Q4_K)(p.w.data(), p.k, p.prepared.data(), p.m, y.data(), 10, 2, 5);
    for (std::int64_t i = 0; i < p.m; ++i) {
        for (std::int64_t n = 0; n < 10; ++n) {
            const float v = y[std::size_t(i * 10 + n)];
            if (n >= 2 && n < 5) {
                EXPECT_NE(v, -7.0f);
            } else {
                EXPECT_EQ(v, -7.0f) << "i=" << i << " n=" << n;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Cpu, MatmulVariant,
                         ::testing::Values(CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512),
                         [](const auto& param) { return std::string(cpuIsaName(param.param)); });

// The packed layout gives the products of the plain layout, for its scalar reference and each
// kernel this CPU runs (AVX2 and AVX-512 VNNI), whatever the number of
// rows (padding) and the column range.
TEST(MatmulPacked, MatchesThePlainLayout) {
    [[maybe_unused]] const CpuIsa highest = highestSupportedIsa(cpuFeatures());
    for (TensorType type : {TensorType::Q8_0, TensorType::Q5_0, TensorType::Q4_0}) {
        for (std::int64_t n : {1, 16, 21, 40}) {
            // 20 rows: AVX-512 takes two groups at a time from 16 rows on.
            for (std::int64_t m : {1, 3, 6, 20}) {
                const Problem p = makeProblem(type, n, m, unsigned(n * 10 + m));
                std::vector<float> want(std::size_t(m * n), 0.0f);
                cpu::matmulScalar(type)(p.w.data(), p.k, p.prepared.data(), m, want.data(), n, 0,
                                        n);
                const std::int64_t groups = (n + 15) / 16;
                std::vector<std::byte> packed(
                    std::size_t(groups * (p.k / 32) * cpu::packedBlockBytes(type)));
                packWeights(type, p.w.data(), n, p.k, packed.data());
                std::vector<cpu::PackedMatmulFn> kernels = {cpu::matmulPackedScalar};
#if defined(IRIS_KERNELS_X86)
                if (highest >= CpuIsa::Avx2) kernels.push_back(cpu::matmulPackedAvx2);
                if (highest >= CpuIsa::Avx512) kernels.push_back(cpu::matmulPackedAvx512);
#endif
                for (cpu::PackedMatmulFn kernel : kernels) {
                    std::vector<float> got(want.size(), NAN);
                    // Two calls: columns [0, 16) and [16, n), as two threads would split them.
                    kernel(type, packed.data(), p.k, p.prepared.data(), m, got.data(), n, 0,
                           std::min<std::int64_t>(16, n));
                    if (n > 16)
                        kernel(type, packed.data(), p.k, p.prepared.data(), m, got.data(), n, 16,
                               n);
                    for (std::size_t i = 0; i < want.size(); ++i) {
                        ASSERT_NEAR(double(got[i]), double(want[i]),
                                    1e-5 * (std::fabs(double(want[i])) + 1.0))
                            << tensorTypeInfo(type).name << " n=" << n << " m=" << m << " i=" << i;
                    }
                }
            }
        }
    }
}

// q8_0 at the edges of vpmaddubsw: weights of -128 and 127 against activations of +-127 (a pair
// of products reaches 2 * 128 * 127 = 32512, just under the int16 limit, and two pairs would
// not fit). Every packed kernel must give the float64 product exactly (all terms are integers
// times one scale).
TEST(MatmulPacked, Q8_0ExtremesDoNotSaturate) {
    constexpr std::int64_t n = 16, k = 64;
    std::vector<cpu::BlockQ8_0> w(std::size_t(n * k / 32));
    for (std::int64_t r = 0; r < n; ++r) {
        for (std::int64_t b = 0; b < k / 32; ++b) {
            cpu::BlockQ8_0& block = w[std::size_t(r * (k / 32) + b)];
            block.d = 0x3C00;             // 1.0
            for (int j = 0; j < 32; ++j)  // 127 where bit j % 4 of r is set, else -128
                block.qs[j] = std::int8_t((r >> (j % 4)) & 1 ? 127 : -128);
        }
    }
    std::vector<cpu::PackedMatmulFn> kernels = {cpu::matmulPackedScalar};
#if defined(IRIS_KERNELS_X86)
    const CpuIsa highest = highestSupportedIsa(cpuFeatures());
    if (highest >= CpuIsa::Avx2) kernels.push_back(cpu::matmulPackedAvx2);
    if (highest >= CpuIsa::Avx512) kernels.push_back(cpu::matmulPackedAvx512);
#endif
    std::vector<std::byte> packed(std::size_t((k / 32) * cpu::packedBlockBytes(TensorType::Q8_0)));
    packWeights(TensorType::Q8_0, w.data(), n, k, packed.data());
    // Activations quantised to +-127 (d = 1/127): all positive (the products of a row add up
    // in one direction), then signs changing every 3 values.
    for (int signs = 0; signs < 2; ++signs) {
        // The same row twice: one activation row (decoding) and two take different paths.
        std::vector<float> x(static_cast<std::size_t>(2 * k));
        for (std::int64_t j = 0; j < 2 * k; ++j)
            x[std::size_t(j)] = signs == 0 || (j % k / 3) % 2 == 0 ? 1.0f : -1.0f;
        std::vector<std::byte> prepared(std::size_t(2 * preparedRowBytes(TensorType::Q8_0, k)));
        prepareActivations(TensorType::Q8_0, x.data(), k, 2, k, prepared.data());
        for (std::size_t kernel = 0; kernel < kernels.size(); ++kernel) {
            for (std::int64_t m : {1, 2}) {
                std::vector<float> y(std::size_t(m * n), NAN);
                kernels[kernel](TensorType::Q8_0, packed.data(), k, prepared.data(), m, y.data(), n,
                                0, n);
                for (std::int64_t i = 0; i < m * n; ++i) {
                    double want = 0.0;
                    for (std::int64_t j = 0; j < k; ++j) {
                        const int q = (i % n >> (j % 4)) & 1 ? 127 : -128;
                        want += double(q) * (x[std::size_t(j)] > 0 ? 1.0 : -1.0);
                    }
                    EXPECT_NEAR(double(y[std::size_t(i)]), want, 1e-4 * std::fabs(want) + 1e-3)
                        << "kernel " << kernel << " signs " << signs << " m " << m << " i " << i;
                }
            }
        }
    }
}

// The packed K layouts (q4_K, q5_K, q6_K: 16 interleaved rows, unpacked sub-block scales) give
// the float64 reference product and the plain layout's, for the scalar reference of the layout
// and every SIMD kernel this CPU runs, with padded groups (n not a multiple of 16), column
// ranges split as threads split them, and outputs outside the range left alone.
TEST(MatmulPackedK, MatchesTheReferenceAndThePlainLayout) {
    const CpuIsa highest = highestSupportedIsa(cpuFeatures());
    std::vector<std::pair<std::string, cpu::PackedMatmulFn>> kernels = {
        {"scalar", cpu::matmulPackedKScalar}};
#if defined(IRIS_KERNELS_X86)
    if (highest >= CpuIsa::Avx2) kernels.emplace_back("avx2", cpu::matmulPackedKAvx2);
    if (highest >= CpuIsa::Avx512) kernels.emplace_back("avx512", cpu::matmulPackedKAvx512);
#endif
    for (TensorType type : {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
        for (std::int64_t n : {1, 8, 16, 21, 40, 48}) {
            for (std::int64_t m : {1, 3, 6}) {
                const Problem p = makeProblem(type, n, m, unsigned(n * 10 + m) + unsigned(type));
                std::vector<float> plain(std::size_t(m * n), 0.0f);
                cpu::matmulScalar(type)(p.w.data(), p.k, p.prepared.data(), m, plain.data(), n, 0,
                                        n);
                const std::int64_t groups = (n + 15) / 16;
                std::vector<std::byte> packed(
                    std::size_t(groups * (p.k / 256) * cpu::packedKSuperBlockBytes(type)));
                packWeights(type, p.w.data(), n, p.k, packed.data());
                const std::int64_t stride = n + 3;  // columns n..n+2 must stay untouched
                for (const auto& [name, kernel] : kernels) {
                    for (std::int64_t split : {std::int64_t(16), std::int64_t(32)}) {
                        std::vector<float> got(std::size_t(m * stride), -7.0f);
                        // Two calls, [0, split) and [split, n), as two threads would make them.
                        kernel(type, packed.data(), p.k, p.prepared.data(), m, got.data(), stride,
                               0, std::min(split, n));
                        if (n > split)
                            kernel(type, packed.data(), p.k, p.prepared.data(), m, got.data(),
                                   stride, split, n);
                        for (std::int64_t i = 0; i < m; ++i) {
                            for (std::int64_t c = 0; c < stride; ++c) {
                                const double v = got[std::size_t(i * stride + c)];
                                const std::string where =
                                    std::string(tensorTypeInfo(type).name) + " " + name +
                                    " n=" + std::to_string(n) + " m=" + std::to_string(m) +
                                    " i=" + std::to_string(i) + " c=" + std::to_string(c);
                                if (c >= n) {
                                    ASSERT_EQ(v, -7.0) << where;
                                    continue;
                                }
                                const Reference ref = reference(p, i, c);
                                ASSERT_NEAR(v, ref.value, ref.tolerance) << where;
                                const double want = plain[std::size_t(i * n + c)];
                                ASSERT_NEAR(v, want, 1e-5 * (std::fabs(want) + 1.0)) << where;
                            }
                        }
                    }
                }
            }
        }
    }
}

// A prefill-sized m: the SIMD kernels take the activation rows in several L2-sized panels (448
// rows of 2 super-blocks each); the scalar reference of the layout takes them all at once.
TEST(MatmulPackedK, ManyActivationRowsInPanels) {
    const CpuIsa highest = highestSupportedIsa(cpuFeatures());
    if (highest < CpuIsa::Avx2) GTEST_SKIP() << "no SIMD kernel on this CPU";
    for (TensorType type : {TensorType::Q4_K, TensorType::Q6_K}) {
        const std::int64_t n = 24, m = 1000;
        const Problem p = makeProblem(type, n, m, 23);
        std::vector<std::byte> packed(
            static_cast<std::size_t>(2 * (p.k / 256) * cpu::packedKSuperBlockBytes(type)));
        packWeights(type, p.w.data(), n, p.k, packed.data());
        std::vector<float> want(std::size_t(m * n), NAN);
        cpu::matmulPackedKScalar(type, packed.data(), p.k, p.prepared.data(), m, want.data(), n, 0,
                                 n);
        std::vector<cpu::PackedMatmulFn> kernels;
#if defined(IRIS_KERNELS_X86)
        kernels.push_back(cpu::matmulPackedKAvx2);
        if (highest >= CpuIsa::Avx512) kernels.push_back(cpu::matmulPackedKAvx512);
#endif
        for (cpu::PackedMatmulFn kernel : kernels) {
            std::vector<float> got(want.size(), NAN);
            kernel(type, packed.data(), p.k, p.prepared.data(), m, got.data(), n, 0, n);
            for (std::size_t i = 0; i < got.size(); ++i) {
                ASSERT_NEAR(double(got[i]), double(want[i]),
                            1e-5 * (std::fabs(double(want[i])) + 1.0))
                    << tensorTypeInfo(type).name << " " << i;
            }
        }
    }
}

// Through the public API: packedBytes, packWeights and matmulPacked on the active ISA.
TEST(MatmulPackedK, PublicApiMatchesThePlainLayout) {
    for (TensorType type : {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
        const std::int64_t n = 32, m = 5;
        const std::int64_t bytes = packedBytes(type, n, 512);
        if (bytes == 0) GTEST_SKIP() << "no packed K layout on " << cpuIsaName(activeIsa());
        const Problem p = makeProblem(type, n, m, 17);
        ASSERT_EQ(bytes, 2 * 2 * cpu::packedKSuperBlockBytes(type));
        std::vector<std::byte> packed(static_cast<std::size_t>(bytes));
        packWeights(type, p.w.data(), n, p.k, packed.data());
        std::vector<float> got(std::size_t(m * n), NAN), want(got.size(), NAN);
        matmulPacked(type, packed.data(), p.k, p.prepared.data(), m, got.data(), n, 0, n);
        matmul(type, p.w.data(), p.k, p.prepared.data(), m, want.data(), n, 0, n);
        for (std::size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(double(got[i]), double(want[i]), 1e-5 * (std::fabs(double(want[i])) + 1.0))
                << tensorTypeInfo(type).name << " " << i;
        }
    }
}

// What makes the serving engine's batches invariant (inference/scheduler.h): a token's output
// row has the same bits whether it is multiplied alone (decode), with a few others or in a long
// prefill chunk, in the plain and the packed layouts.
TEST(Matmul, EachActivationRowGivesTheSameBitsWhateverTheBatch) {
    for (TensorType type : kTypes) {
        const std::int64_t n = 48, m = 37;
        const Problem p = makeProblem(type, n, m, 23);
        const std::int64_t packed = packedBytes(type, n, p.k);
        std::vector<std::byte> packedWeights(static_cast<std::size_t>(packed));
        if (packed > 0) packWeights(type, p.w.data(), n, p.k, packedWeights.data());
        for (bool usePacked : {false, true}) {
            if (usePacked && packed == 0) continue;
            auto run = [&](std::int64_t first, std::int64_t rows) {
                std::vector<float> y(std::size_t(rows * n), NAN);
                const std::byte* x = p.prepared.data() + first * preparedRowBytes(type, p.k);
                if (usePacked)
                    matmulPacked(type, packedWeights.data(), p.k, x, rows, y.data(), n, 0, n);
                else
                    matmul(type, p.w.data(), p.k, x, rows, y.data(), n, 0, n);
                return y;
            };
            const std::vector<float> all = run(0, m);
            for (auto [first, rows] : {std::pair<std::int64_t, std::int64_t>{0, 1},
                                       {5, 1},
                                       {36, 1},
                                       {3, 2},
                                       {7, 5},
                                       {11, 17}}) {
                const std::vector<float> some = run(first, rows);
                for (std::int64_t i = 0; i < rows * n; ++i) {
                    ASSERT_EQ(std::bit_cast<std::uint32_t>(some[std::size_t(i)]),
                              std::bit_cast<std::uint32_t>(all[std::size_t(first * n + i)]))
                        << tensorTypeInfo(type).name << (usePacked ? " packed" : "") << " rows "
                        << first << "+" << rows << " value " << i;
                }
            }
        }
    }
}

// The SIMD quantisation of activation rows gives the reference's blocks byte for byte: the scale,
// every rounded value (ties to even included) and the sums the packed kernels take the weights'
// offset out with.
TEST(QuantizeActivations, SimdMatchesTheReferenceByteForByte) {
#if defined(IRIS_KERNELS_X86)
    if (highestSupportedIsa(cpuFeatures()) < CpuIsa::Avx512) GTEST_SKIP() << "no AVX-512";
    constexpr std::int64_t k = 1024;
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<std::size_t>(k));
    for (float& v : x)
        v = normal(rng);
    for (std::int64_t j = 0; j < 32; ++j)  // a block of zeros (scale 0)
        x[std::size_t(32 + j)] = 0.0f;
    for (std::int64_t j = 0; j < 32; ++j)  // amax 127: scale 1, and every other value a tie
        x[std::size_t(64 + j)] = j == 0 ? 127.0f : float(j - 16) + 0.5f;
    x[200] = 3.0e4f;  // an outlier
    for (std::int64_t j = 256; j < 288; ++j)
        x[std::size_t(j)] *= 1e-30f;  // tiny values
    for (std::int64_t j = 512; j < 768; ++j)  // a K super-block of ties and a negative maximum
        x[std::size_t(j)] = j == 512 ? -127.0f : float(j % 64 - 32) + 0.5f;
    const auto bytesOf = [&](auto quantize, std::int64_t bytes) {
        std::vector<std::byte> out(std::size_t(bytes), std::byte{0x5A});
        quantize(x.data(), k, out.data());
        return out;
    };
    const std::int64_t q8 = k / 32 * std::int64_t(sizeof(cpu::BlockQ8Act));
    const std::int64_t q8k = k / 256 * std::int64_t(sizeof(cpu::BlockQ8K));
    EXPECT_EQ(bytesOf(cpu::quantizeActivationRowAvx512, q8),
              bytesOf(cpu::quantizeActivationRow, q8));
    EXPECT_EQ(bytesOf(cpu::quantizeActivationRowKAvx512, q8k),
              bytesOf(cpu::quantizeActivationRowK, q8k));
#else
    GTEST_SKIP() << "x86 only";
#endif
}

TEST(Matmul, DispatchMatchesTheActiveVariant) {
    const Problem p = makeProblem(TensorType::Q8_0, 4, 2, 1);
    std::vector<float> a(8), b(8);
    matmul(TensorType::Q8_0, p.w.data(), p.k, p.prepared.data(), 2, a.data(), 4, 0, 4);
    cpu::pickVariant(cpu::matmulVariants(TensorType::Q8_0), activeIsa())(
        p.w.data(), p.k, p.prepared.data(), 2, b.data(), 4, 0, 4);
    EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace iris::kernels
