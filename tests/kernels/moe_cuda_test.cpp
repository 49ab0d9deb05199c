#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/matmul_decode.cuh"
#include "kernels/cuda/moe.cuh"
#include "kernels/quant.h"
#include "tests/kernels/cuda_test_support.h"

namespace iris::kernels {
namespace {

using cuda_test::DeviceBuffer;

class MoeCuda : public cuda_test::CudaTest {};

// Routing against a stable sort of all experts by biased score (ties keep the lower id first),
// weights in float64:
// logits on a coarse grid make exact ties common.
TEST_F(MoeCuda, RoutingPicksTheSortedExpertsAndWeighsThem) {
    const int rows = 9, experts = 128, used = 4;
    const std::ptrdiff_t stride = experts + 2;
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> grid(-12, 12);
    std::vector<float> logits(std::size_t(rows) * stride), bias(static_cast<std::size_t>(experts));
    for (float& l : logits)
        l = float(grid(rng)) / 4.0f;
    for (float& b : bias)
        b = float(grid(rng)) / 64.0f;
    for (bool withBias : {true, false}) {
        for (bool normalise : {true, false}) {
            DeviceBuffer dlogits(logits.size() * 4), dbias(bias.size() * 4),
                dids(std::size_t(rows * used) * 4), dweights(std::size_t(rows * used) * 4);
            ASSERT_EQ(cuda_test::upload(logits, dlogits), cudaSuccess);
            ASSERT_EQ(cuda_test::upload(bias, dbias), cudaSuccess);
            ASSERT_EQ(cuda::routeSigmoid(dlogits.floats(), rows, experts, stride,
                                         withBias ? dbias.floats() : nullptr, used, normalise, 2.5f,
                                         static_cast<std::int32_t*>(dids.get()), dweights.floats(),
                                         nullptr),
                      cudaSuccess);
            std::vector<std::int32_t> ids(std::size_t(rows * used));
            std::vector<float> weights(ids.size());
            ASSERT_EQ(cuda_test::download(dids, ids), cudaSuccess);
            ASSERT_EQ(cuda_test::download(dweights, weights), cudaSuccess);
            for (int r = 0; r < rows; ++r) {
                const float* l = &logits[std::size_t(r) * stride];
                // The biased score in f32 as the kernel forms it, so that equal scores tie alike.
                std::vector<float> score(static_cast<std::size_t>(experts));
                for (int e = 0; e < experts; ++e)
                    score[std::size_t(e)] =
                        1.0f / (1.0f + std::exp(-l[e])) + (withBias ? bias[std::size_t(e)] : 0.0f);
                std::vector<int> order(static_cast<std::size_t>(experts));
                std::iota(order.begin(), order.end(), 0);
                std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
                    return score[std::size_t(a)] > score[std::size_t(b)];
                });
                double sum = 0.0;
                for (int i = 0; i < used; ++i)
                    sum += 1.0 / (1.0 + std::exp(-double(l[order[std::size_t(i)]])));
                for (int i = 0; i < used; ++i) {
                    const int e = order[std::size_t(i)];
                    ASSERT_EQ(ids[std::size_t(r * used + i)], e) << "row " << r << " pick " << i;
                    const double sigmoid = 1.0 / (1.0 + std::exp(-double(l[e])));
                    const double want = sigmoid * (normalise ? 1.0 / sum : 1.0) * 2.5;
                    ASSERT_NEAR(weights[std::size_t(r * used + i)], want, 1e-5 * (1.0 + want));
                }
            }
        }
    }
}

// Three rows, two experts each, from a stack of five q4_K experts: each pair against float64.
TEST_F(MoeCuda, GroupedProductsUseEachPairsExpert) {
    const int experts = 5, rows = 3, perRow = 2;
    const std::int64_t n = 70, k = 512;
    const std::vector<std::int32_t> ids = {4, 0, 2, 2, 1, 7};  // 7: outside the stack
    for (TensorType type : {TensorType::Q4_K, TensorType::Q8_0, TensorType::F16}) {
        SCOPED_TRACE(tensorTypeInfo(type).name);
        std::mt19937 rng(9);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        const std::int64_t rowBytes =
            k / tensorTypeInfo(type).blockElements * tensorTypeInfo(type).blockBytes;
        std::vector<std::uint8_t> stack(std::size_t(experts * n * rowBytes));
        std::vector<float> weights(std::size_t(experts * n * k)), row(static_cast<std::size_t>(k));
        for (std::int64_t r = 0; r < experts * n; ++r) {
            for (float& v : row)
                v = normal(rng);
            quantizeRow(type, row.data(), &stack[std::size_t(r * rowBytes)], k);
            dequantizeRow(type, &stack[std::size_t(r * rowBytes)], &weights[std::size_t(r * k)], k);
        }
        std::vector<float> x(std::size_t(rows * k));
        for (float& v : x)
            v = normal(rng);
        const std::ptrdiff_t yStride = n + 1;
        DeviceBuffer dstack(stack.size()), dx(x.size() * 4), dids(ids.size() * 4),
            dy(ids.size() * std::size_t(yStride) * 4),
            scratch(std::size_t(cuda::decodeScratchBytes(type, rows, k)) + 4);
        ASSERT_EQ(cuda_test::upload(stack, dstack), cudaSuccess);
        ASSERT_EQ(cuda_test::upload(x, dx), cudaSuccess);
        ASSERT_EQ(cuda_test::upload(ids, dids), cudaSuccess);
        ASSERT_EQ(cuda::matmulDecodeGrouped(type, dstack.get(), experts, n, k, dx.floats(), k, rows,
                                            static_cast<const std::int32_t*>(dids.get()), perRow,
                                            dy.floats(), yStride, scratch.get(), nullptr),
                  cudaSuccess);
        std::vector<float> y(ids.size() * std::size_t(yStride));
        ASSERT_EQ(cuda_test::download(dy, y), cudaSuccess);
        for (std::size_t p = 0; p < ids.size(); ++p) {
            const float* xr = &x[(p / perRow) * std::size_t(k)];
            for (std::int64_t o = 0; o < n; ++o) {
                double want = 0.0, magnitude = 0.0, rounding = 0.0;
                if (ids[p] < experts) {
                    const float* w = &weights[(std::size_t(ids[p]) * n + std::size_t(o)) * k];
                    for (std::int64_t j0 = 0; j0 < k; j0 += 32) {
                        float amax = 0.0f;
                        for (std::int64_t j = j0; j < j0 + 32; ++j)
                            amax = std::max(amax, std::abs(xr[j]));
                        for (std::int64_t j = j0; j < j0 + 32; ++j) {
                            want += double(w[j]) * double(xr[j]);
                            magnitude += std::abs(double(w[j]) * double(xr[j]));
                            rounding += std::abs(double(w[j])) * double(amax) / 254.0;
                        }
                    }
                }
                // 8-bit activations for the quantised types: each x_j is off by at most half a
                // step of its block, amax / 127 / 2.
                const double tolerance =
                    (type == TensorType::F16 ? 0.0 : rounding * 1.001) + 1e-5 * magnitude + 1e-5;
                ASSERT_NEAR(y[p * std::size_t(yStride) + std::size_t(o)], want, tolerance)
                    << "pair " << p << " output " << o;
            }
        }
    }
}

TEST_F(MoeCuda, WeightedExpertsAddToTheResidualAndSwigluOaiClamps) {
    const int rows = 2, used = 3;
    const std::int64_t width = 5;
    std::vector<float> y = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    std::vector<float> outputs(std::size_t(rows * used * width));
    std::iota(outputs.begin(), outputs.end(), 0.0f);
    const std::vector<float> weights = {0.5f, 0.25f, 0.25f, 1.0f, -1.0f, 2.0f};
    DeviceBuffer dy(y.size() * 4), dout(outputs.size() * 4), dw(weights.size() * 4);
    ASSERT_EQ(cuda_test::upload(y, dy), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(outputs, dout), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(weights, dw), cudaSuccess);
    ASSERT_EQ(cuda::addWeightedExperts(dy.floats(), width, dout.floats(), width, dw.floats(), rows,
                                       used, width, nullptr),
              cudaSuccess);
    std::vector<float> got(y.size());
    ASSERT_EQ(cuda_test::download(dy, got), cudaSuccess);
    for (int r = 0; r < rows; ++r)
        for (int j = 0; j < width; ++j) {
            float want = y[std::size_t(r * width + j)];
            for (int e = 0; e < used; ++e)
                want += weights[std::size_t(r * used + e)] *
                        outputs[std::size_t((r * used + e) * width + j)];
            EXPECT_FLOAT_EQ(got[std::size_t(r * width + j)], want) << r << "," << j;
        }

    const std::vector<float> gate = {-9.0f, -1.0f, 0.0f, 2.0f, 7.0f, 12.0f};
    const std::vector<float> up = {-12.0f, -3.0f, 0.5f, 1.0f, 7.5f, 100.0f};
    DeviceBuffer dg(gate.size() * 4), du(up.size() * 4), da(gate.size() * 4);
    ASSERT_EQ(cuda_test::upload(gate, dg), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(up, du), cudaSuccess);
    ASSERT_EQ(cuda::activate(cuda::Activation::SwiGluOai, dg.floats(), du.floats(), da.floats(),
                             std::int64_t(gate.size()), nullptr),
              cudaSuccess);
    std::vector<float> act(gate.size());
    ASSERT_EQ(cuda_test::download(da, act), cudaSuccess);
    for (std::size_t i = 0; i < gate.size(); ++i) {
        const double g = std::min(double(gate[i]), 7.0), u = std::clamp(double(up[i]), -7.0, 7.0);
        const double want = g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0);
        EXPECT_NEAR(act[i], want, 1e-5 * (1.0 + std::abs(want))) << i;
    }
}

TEST(MoeCudaArguments, RejectsRoutingItCannotDo) {
    float dummy[4] = {};
    std::int32_t ids[4] = {};
    EXPECT_EQ(cuda::routeSigmoid(dummy, 1, 4, 4, nullptr, 5, true, 1.0f, ids, dummy, nullptr),
              cudaErrorInvalidValue);  // more experts used than there are
    EXPECT_EQ(cuda::routeSigmoid(dummy, 1, 2048, 2048, nullptr, 4, true, 1.0f, ids, dummy, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(cuda::matmulDecodeGrouped(TensorType::Q8_0, dummy, 2, 4, 32, dummy, 32, 40000, ids, 2,
                                        dummy, 4, dummy, nullptr),
              cudaErrorInvalidValue);  // more pairs than a grid holds
}

}  // namespace
}  // namespace iris::kernels
