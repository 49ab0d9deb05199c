#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/matmul_prefill.cuh"
#include "kernels/quant.h"
#include "tests/kernels/cuda_test_support.h"

namespace iris::kernels {
namespace {

using cuda_test::DeviceBuffer;

// The GPU's product against a float64 sum over the dequantised weights. Both operands are
// rounded to bf16 (relative error at most 2^-9 each), so an output may be off by
// sum_j |w_j x_j| * (2 * 2^-9 + 2^-18) plus the f32 accumulation's rounding.
void checkPrefill(TensorType type, std::int64_t n, std::int64_t k, std::int64_t m) {
    SCOPED_TRACE(::testing::Message()
                 << tensorTypeInfo(type).name << " n=" << n << " k=" << k << " m=" << m);
    std::mt19937 rng(std::uint32_t(n * 31 + k + m * 7));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const std::int64_t rowBytes =
        k / tensorTypeInfo(type).blockElements * tensorTypeInfo(type).blockBytes;
    std::vector<std::uint8_t> packed(std::size_t(n * rowBytes));
    std::vector<float> row(static_cast<std::size_t>(k)), weights(std::size_t(n * k));
    for (std::int64_t r = 0; r < n; ++r) {
        for (float& v : row)
            v = normal(rng);
        quantizeRow(type, row.data(), &packed[std::size_t(r * rowBytes)], k);
        dequantizeRow(type, &packed[std::size_t(r * rowBytes)], &weights[std::size_t(r * k)], k);
    }
    const std::ptrdiff_t xStride = k + 3, yStride = n + 5;
    std::vector<float> x(std::size_t(m * xStride));
    for (float& v : x)
        v = normal(rng);
    DeviceBuffer dw(packed.size()), dx(x.size() * 4), dy(std::size_t(m * yStride) * 4);
    ASSERT_EQ(cuda_test::upload(packed, dw), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(x, dx), cudaSuccess);
    ASSERT_EQ(cuda::matmulPrefill(type, dw.get(), n, k, dx.floats(), xStride, m, dy.floats(),
                                  yStride, nullptr),
              cudaSuccess);
    std::vector<float> y(std::size_t(m * yStride));
    ASSERT_EQ(cuda_test::download(dy, y), cudaSuccess);
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t r = 0; r < n; ++r) {
            double want = 0.0, magnitude = 0.0;
            for (std::int64_t j = 0; j < k; ++j) {
                const double p = double(weights[std::size_t(r * k + j)]) *
                                 double(x[std::size_t(i * xStride + j)]);
                want += p;
                magnitude += std::abs(p);
            }
            ASSERT_NEAR(y[std::size_t(i * yStride + r)], want, magnitude * 0.0040 + 1e-4)
                << "row " << i << " output " << r;
        }
    }
}

class MatmulPrefillCuda : public cuda_test::CudaTest {};

TEST_F(MatmulPrefillCuda, MatchesFloat64WithinBf16Rounding) {
    for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q4_0,
                            TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,
                            TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
        checkPrefill(type, 130, 512, 70);  // partial tiles in both directions
        checkPrefill(type, 64, 256, 64);   // exactly one tile
        checkPrefill(type, 37, 256, 1);    // a single row still works
    }
}

TEST(MatmulPrefillCudaArguments, RejectsWhatItCannotCompute) {
    float dummy[4] = {};
    EXPECT_EQ(cuda::matmulPrefill(TensorType::Q8_0, dummy, 4, 48, dummy, 48, 2, dummy, 4, nullptr),
              cudaErrorInvalidValue);  // k not a multiple of 32
    EXPECT_EQ(
        cuda::matmulPrefill(TensorType::Q4_K, dummy, 4, 128, dummy, 128, 2, dummy, 4, nullptr),
        cudaErrorInvalidValue);  // k not a whole super-block
    EXPECT_EQ(cuda::matmulPrefill(TensorType::Q8_0, dummy, 4, 32, dummy, 32, 2, dummy, 3, nullptr),
              cudaErrorInvalidValue);  // output rows would overlap
    EXPECT_EQ(
        cuda::matmulPrefill(TensorType::Q8_0, nullptr, 0, 32, nullptr, 32, 2, nullptr, 0, nullptr),
        cudaSuccess);  // nothing to compute
}

}  // namespace
}  // namespace iris::kernels
