#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/activation.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/quant.h"
#include "kernels/rope.h"
#include "tests/kernels/cuda_test_support.h"

namespace iris::kernels {
namespace {

using cuda_test::DeviceBuffer;

std::vector<float> randomValues(std::size_t n, std::uint32_t seed, float sigma = 2.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, sigma);
    std::vector<float> v(n);
    for (float& x : v)
        x = normal(rng);
    return v;
}

class ElementwiseCuda : public cuda_test::CudaTest {};

// Every token with its own angles, partial rotary, a token stride wider than its heads: the CPU
// kernel applied token by token is the reference.
TEST_F(ElementwiseCuda, RopeNeoxMatchesTheCpuKernelTokenByToken) {
    const int tokens = 37, heads = 5, headDim = 64, rotDims = 48;
    const std::ptrdiff_t stride = heads * headDim + 3;
    std::vector<float> x = randomValues(std::size_t(tokens * stride), 1);
    std::vector<float> angles = randomValues(std::size_t(tokens * rotDims / 2), 2, 3.0f);
    std::vector<float> cos(angles.size()), sin(angles.size());
    for (std::size_t i = 0; i < angles.size(); ++i) {
        cos[i] = std::cos(angles[i]);
        sin[i] = std::sin(angles[i]);
    }
    DeviceBuffer dx(x.size() * 4), dcos(cos.size() * 4), dsin(sin.size() * 4);
    ASSERT_EQ(cuda_test::upload(x, dx), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(cos, dcos), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(sin, dsin), cudaSuccess);
    ASSERT_EQ(cuda::ropeNeox(dx.floats(), tokens, stride, heads, headDim, rotDims, dcos.floats(),
                             dsin.floats(), nullptr),
              cudaSuccess);
    std::vector<float> got(x.size());
    ASSERT_EQ(cuda_test::download(dx, got), cudaSuccess);
    for (int t = 0; t < tokens; ++t)
        ropeNeox(&x[std::size_t(t * stride)], heads, headDim, rotDims,
                 &cos[std::size_t(t * rotDims / 2)], &sin[std::size_t(t * rotDims / 2)]);
    for (std::size_t i = 0; i < x.size(); ++i)
        ASSERT_NEAR(got[i], x[i], 1e-5f * (1.0f + std::abs(x[i]))) << i;
}

TEST_F(ElementwiseCuda, ActivationsMatchTheCpuKernels) {
    const std::int64_t n = 10007;
    const std::vector<float> x = randomValues(std::size_t(n), 3, 4.0f);
    const std::vector<float> up = randomValues(std::size_t(n), 4);
    DeviceBuffer dx(std::size_t(n) * 4), dup(std::size_t(n) * 4), dout(std::size_t(n) * 4);
    ASSERT_EQ(cuda_test::upload(x, dx), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(up, dup), cudaSuccess);
    struct Kind {
        cuda::Activation kind;
        void (*cpu)(const float*, const float*, float*, std::int64_t);
    };
    const Kind kinds[] = {
        {cuda::Activation::SwiGlu, swiglu},
        {cuda::Activation::GeGlu, geglu},
        {cuda::Activation::Silu,
         [](const float* a, const float*, float* o, std::int64_t k) { silu(a, o, k); }},
        {cuda::Activation::Gelu,
         [](const float* a, const float*, float* o, std::int64_t k) { gelu(a, o, k); }},
        {cuda::Activation::GeluErf,
         [](const float* a, const float*, float* o, std::int64_t k) { geluErf(a, o, k); }},
    };
    for (const Kind& kind : kinds) {
        ASSERT_EQ(cuda::activate(kind.kind, dx.floats(), dup.floats(), dout.floats(), n, nullptr),
                  cudaSuccess);
        std::vector<float> got(static_cast<std::size_t>(n)), want(static_cast<std::size_t>(n));
        ASSERT_EQ(cuda_test::download(dout, got), cudaSuccess);
        kind.cpu(x.data(), up.data(), want.data(), n);
        for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 2e-6f * (1.0f + std::abs(want[i])))
                << "activation " << int(kind.kind) << " at " << i;
    }
}

TEST_F(ElementwiseCuda, AddInPlaceAddsEveryValue) {
    const std::int64_t n = 70001;
    std::vector<float> y = randomValues(std::size_t(n), 5);
    const std::vector<float> x = randomValues(std::size_t(n), 6);
    DeviceBuffer dy(std::size_t(n) * 4), dx(std::size_t(n) * 4);
    ASSERT_EQ(cuda_test::upload(y, dy), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(x, dx), cudaSuccess);
    ASSERT_EQ(cuda::addInPlace(dy.floats(), dx.floats(), n, nullptr), cudaSuccess);
    std::vector<float> got(static_cast<std::size_t>(n));
    ASSERT_EQ(cuda_test::download(dy, got), cudaSuccess);
    for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], y[i] + x[i]) << i;  // one f32 addition: exact
}

// The rows the GPU dequantises equal dequantizeRow's on the CPU (bit for bit up to the f32
// multiply-add of scale and offset), and ids outside the table give zeros.
TEST_F(ElementwiseCuda, EmbeddingRowsEqualTheCpuDequantisation) {
    const std::int64_t rows = 11, width = 512;
    const std::vector<std::int32_t> ids = {3, 0, 10, 3, -1, 11, 7};
    for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q4_0,
                            TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,
                            TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
        SCOPED_TRACE(tensorTypeInfo(type).name);
        const std::vector<float> values = randomValues(std::size_t(rows * width), 7);
        const std::int64_t rowBytes =
            width / tensorTypeInfo(type).blockElements * tensorTypeInfo(type).blockBytes;
        std::vector<std::uint8_t> table(std::size_t(rows * rowBytes));
        for (std::int64_t r = 0; r < rows; ++r)
            quantizeRow(type, &values[std::size_t(r * width)], &table[std::size_t(r * rowBytes)],
                        width);
        DeviceBuffer dtable(table.size()), dids(ids.size() * 4),
            dout(ids.size() * std::size_t(width) * 4);
        ASSERT_EQ(cuda_test::upload(table, dtable), cudaSuccess);
        ASSERT_EQ(cuda_test::upload(ids, dids), cudaSuccess);
        ASSERT_EQ(cuda::embeddingRows(type, dtable.get(), rows, width,
                                      static_cast<const std::int32_t*>(dids.get()),
                                      std::int64_t(ids.size()), dout.floats(), width, nullptr),
                  cudaSuccess);
        std::vector<float> got(ids.size() * std::size_t(width));
        ASSERT_EQ(cuda_test::download(dout, got), cudaSuccess);
        std::vector<float> want(static_cast<std::size_t>(width));
        for (std::size_t r = 0; r < ids.size(); ++r) {
            const bool inside = ids[r] >= 0 && ids[r] < rows;
            if (inside)
                dequantizeRow(type, &table[std::size_t(ids[r]) * std::size_t(rowBytes)],
                              want.data(), width);
            for (std::int64_t j = 0; j < width; ++j) {
                const float w = inside ? want[std::size_t(j)] : 0.0f;
                ASSERT_NEAR(got[r * std::size_t(width) + std::size_t(j)], w,
                            1e-6f * (1.0f + std::abs(w)))
                    << "id " << ids[r] << " value " << j;
            }
        }
    }
}

TEST(ElementwiseCudaArguments, RejectsBadSizesBeforeAnyLaunch) {
    float dummy[4] = {};
    EXPECT_EQ(cuda::ropeNeox(dummy, 1, 8, 1, 8, 9, dummy, dummy, nullptr), cudaErrorInvalidValue);
    EXPECT_EQ(cuda::ropeNeox(dummy, 1, 8, 1, 8, 10, dummy, dummy, nullptr), cudaErrorInvalidValue);
    EXPECT_EQ(cuda::ropeNeox(nullptr, 0, 8, 1, 8, 8, nullptr, nullptr, nullptr), cudaSuccess);
    EXPECT_EQ(cuda::activate(cuda::Activation::SwiGlu, dummy, nullptr, dummy, 4, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(cuda::addInPlace(dummy, dummy, -1, nullptr), cudaErrorInvalidValue);
    EXPECT_EQ(cuda::embeddingRows(TensorType::Q4_K, dummy, 1, 48, nullptr, 1, dummy, 48, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(cuda::embeddingRows(TensorType::Q2_K, dummy, 1, 256, nullptr, 1, dummy, 256, nullptr),
              cudaErrorInvalidValue);
}

}  // namespace
}  // namespace iris::kernels
