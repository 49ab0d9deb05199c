#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/matmul_decode.cuh"
#include "kernels/quant.h"
#include "kernels/tensor_type.h"
#include "tests/kernels/cuda_test_support.h"

namespace iris::kernels {
namespace {

using cuda_test::DeviceBuffer;

constexpr TensorType kDecodeTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16,
                                       TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0,
                                       TensorType::Q5_1, TensorType::Q8_0, TensorType::Q4_K,
                                       TensorType::Q5_K, TensorType::Q6_K};

bool isFloatType(TensorType type) {
    return type == TensorType::F32 || type == TensorType::F16 || type == TensorType::BF16;
}

struct Product {
    std::int64_t n, k, m;
    std::ptrdiff_t xStride, yStride;
};

// The activations as the kernel multiplies them: as they are for float weights; for quantised
// ones rounded to 8 bits per 32 values exactly as the kernel rounds them (d = max|x| / 127 in f32,
// q = x / d rounded to nearest even), so that the reference differs from the kernel only by the
// order of its f32 sums. (m rows of k values.)
std::vector<double> activationsAsTheKernelSeesThem(TensorType type, const std::vector<float>& x,
                                                   const Product& p) {
    std::vector<double> out(std::size_t(p.m * p.k));
    for (std::int64_t i = 0; i < p.m; ++i) {
        const float* xi = &x[std::size_t(i * p.xStride)];
        for (std::int64_t j0 = 0; j0 < p.k; j0 += 32) {
            float amax = 0.0f;
            for (std::int64_t j = j0; j < j0 + 32; ++j)
                amax = std::max(amax, std::abs(xi[j]));
            const float d = amax / 127.0f;
            for (std::int64_t j = j0; j < j0 + 32; ++j) {
                const double q = amax == 0.0f ? 0.0 : double(std::nearbyint(xi[j] / d));
                out[std::size_t(i * p.k + j)] = isFloatType(type) ? double(xi[j]) : q * double(d);
            }
        }
    }
    return out;
}

// Runs one product on the GPU and compares every output with a float64 sum over the weights as
// dequantizeRow reads them (the CPU reference) and the activations as the kernel rounds them,
// within the rounding of f32 sums.
void checkProduct(TensorType type, const Product& p) {
    SCOPED_TRACE(::testing::Message() << tensorTypeInfo(type).name << " n=" << p.n << " k=" << p.k
                                      << " m=" << p.m << " xStride=" << p.xStride);
    std::mt19937 rng(std::uint32_t(p.n * 7919 + p.k * 31 + p.m));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> weights(std::size_t(p.n * p.k));
    for (float& v : weights)
        v = normal(rng);
    const std::int64_t rowBytes =
        p.k / tensorTypeInfo(type).blockElements * tensorTypeInfo(type).blockBytes;
    std::vector<std::uint8_t> packed(std::size_t(p.n * rowBytes));
    std::vector<float> dequantized(weights.size());
    for (std::int64_t r = 0; r < p.n; ++r) {
        quantizeRow(type, &weights[std::size_t(r * p.k)], &packed[std::size_t(r * rowBytes)], p.k);
        dequantizeRow(type, &packed[std::size_t(r * rowBytes)], &dequantized[std::size_t(r * p.k)],
                      p.k);
    }
    std::vector<float> x(std::size_t(p.m * p.xStride), 0.0f);
    for (std::int64_t i = 0; i < p.m; ++i)
        for (std::int64_t j = 0; j < p.k; ++j)
            x[std::size_t(i * p.xStride + j)] = normal(rng) * (j % 64 == 5 ? 8.0f : 1.0f);

    DeviceBuffer dw(packed.size()), dx(x.size() * 4), dy(std::size_t(p.m * p.yStride) * 4),
        scratch(std::size_t(cuda::decodeScratchBytes(type, p.m, p.k)));
    ASSERT_NE(dw.get(), nullptr);
    ASSERT_EQ(cuda_test::upload(packed, dw), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(x, dx), cudaSuccess);
    ASSERT_EQ(cuda::matmulDecode(type, dw.get(), p.n, p.k, dx.floats(), p.xStride, p.m, dy.floats(),
                                 p.yStride, scratch.get(), nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> y(std::size_t(p.m * p.yStride));
    ASSERT_EQ(cuda_test::download(dy, y), cudaSuccess);

    const std::vector<double> activation = activationsAsTheKernelSeesThem(type, x, p);
    for (std::int64_t i = 0; i < p.m; ++i) {
        for (std::int64_t r = 0; r < p.n; ++r) {
            const float* wr = &dequantized[std::size_t(r * p.k)];
            double want = 0.0, magnitude = 0.0;
            for (std::int64_t j = 0; j < p.k; ++j) {
                const double term = double(wr[j]) * activation[std::size_t(i * p.k + j)];
                want += term;
                magnitude += std::abs(term);
            }
            ASSERT_NEAR(double(y[std::size_t(i * p.yStride + r)]), want, 1e-5 * magnitude + 1e-6)
                << "row " << i << " output " << r;
        }
    }
}

class MatmulDecodeCuda : public cuda_test::CudaTest {};

TEST_F(MatmulDecodeCuda, MatchesFloat64OnTheDequantizedWeights) {
    for (TensorType type : kDecodeTypes) {
        for (std::int64_t m : {1, 3, 8}) {
            checkProduct(type, {37, 256, m, 256, 40});      // fewer units than lanes
            checkProduct(type, {130, 2816, m, 2816, 130});  // 88 units: lanes wrap, tail lanes idle
        }
        checkProduct(type, {5, 512, 2, 513, 9});  // odd activation stride: the float scalar path
    }
}

TEST_F(MatmulDecodeCuda, EmptyProductsWriteZerosOrNothing) {
    DeviceBuffer dy(4 * 16);
    ASSERT_EQ(cudaMemset(dy.get(), 0x7f, 4 * 16), cudaSuccess);
    ASSERT_EQ(cuda::matmulDecode(TensorType::Q8_0, nullptr, 4, 0, nullptr, 0, 2, dy.floats(), 8,
                                 nullptr, nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> y(16);
    ASSERT_EQ(cuda_test::download(dy, y), cudaSuccess);
    float untouched;
    std::memset(&untouched, 0x7f, sizeof untouched);
    for (int row = 0; row < 2; ++row) {
        for (int col = 0; col < 8; ++col) {  // n = 4 outputs per row, row stride 8
            EXPECT_EQ(y[std::size_t(row * 8 + col)], col < 4 ? 0.0f : untouched)
                << "row " << row << " column " << col;
        }
    }
}

// Argument checks happen before any CUDA call, so these run on every machine.
TEST(MatmulDecodeCudaArguments, RejectsWhatItCannotCompute) {
    float dummy[8] = {};
    EXPECT_EQ(cuda::matmulDecode(TensorType::Q2_K, dummy, 1, 256, dummy, 256, 1, dummy, 1, dummy,
                                 nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(
        cuda::matmulDecode(TensorType::Q8_0, dummy, 1, 32, dummy, 32, 0, dummy, 1, dummy, nullptr),
        cudaErrorInvalidValue);
    EXPECT_EQ(cuda::matmulDecode(TensorType::Q8_0, dummy, 1, 32, dummy, 32,
                                 cuda::kMaxDecodeRows + 1, dummy, 1, dummy, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(cuda::matmulDecode(TensorType::Q4_K, dummy, 1, 128, dummy, 128, 1, dummy, 1, dummy,
                                 nullptr),
              cudaErrorInvalidValue);  // k not a whole super-block
    EXPECT_EQ(cuda::matmulDecode(TensorType::Q8_0, dummy, 1, 32, dummy, 32, 1, dummy, 1, nullptr,
                                 nullptr),
              cudaErrorInvalidValue);  // quantised weights need the activation scratch
    EXPECT_EQ(
        cuda::matmulDecode(TensorType::F16, dummy, 4, 32, dummy, 32, 2, dummy, 3, nullptr, nullptr),
        cudaErrorInvalidValue);  // output rows would overlap
    EXPECT_EQ(cuda::matmulDecode(TensorType::Q8_0, nullptr, 0, 32, nullptr, 32, 1, nullptr, 1,
                                 nullptr, nullptr),
              cudaSuccess);  // nothing to compute
}

TEST(MatmulDecodeCudaArguments, ScratchHoldsOneActivationBlockPer32Values) {
    for (TensorType type : kDecodeTypes)
        EXPECT_TRUE(cuda::decodeSupports(type)) << tensorTypeInfo(type).name;
    EXPECT_FALSE(cuda::decodeSupports(TensorType::Q2_K));
    EXPECT_EQ(cuda::decodeScratchBytes(TensorType::F16, 8, 4096), 0);
    EXPECT_EQ(cuda::decodeScratchBytes(TensorType::Q4_K, 3, 4096), 3 * 128 * 40);
}

}  // namespace
}  // namespace iris::kernels
