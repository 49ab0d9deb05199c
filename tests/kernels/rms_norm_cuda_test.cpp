#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/rms_norm.h"
#include "kernels/cuda/rms_norm.cuh"
#include "tests/kernels/cuda_test_support.h"

namespace iris::kernels {
namespace {

using cuda_test::DeviceBuffer;

class RmsNormCuda : public cuda_test::CudaTest {};

// Runs the CUDA kernel on random rows and compares with the CPU scalar reference.
void checkAgainstReference(std::int64_t rows, std::int64_t cols, std::ptrdiff_t stride,
                           bool inPlace) {
    std::mt19937 rng(std::uint32_t(rows * 131 + cols));
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> x(std::size_t(rows * stride), 0.0f);
    std::vector<float> w(std::size_t(cols), 0.0f);
    for (float& v : x)
        v = normal(rng);
    for (float& v : w)
        v = normal(rng);
    std::vector<float> want(x.size(), 0.0f);
    cpu::rmsNormScalar(x.data(), stride, w.data(), want.data(), stride, rows, cols, 1e-6f);

    DeviceBuffer dx(x.size() * 4), dw(w.size() * 4), dy(x.size() * 4);
    ASSERT_NE(dx.floats(), nullptr);
    ASSERT_EQ(cudaMemcpy(dx.floats(), x.data(), x.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dw.floats(), w.data(), w.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dy.floats(), x.data(), x.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    float* out = inPlace ? dx.floats() : dy.floats();
    ASSERT_EQ(
        cuda::rmsNorm(dx.floats(), stride, dw.floats(), out, stride, rows, cols, 1e-6f, nullptr),
        cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> got(x.size());
    ASSERT_EQ(cudaMemcpy(got.data(), out, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t i = 0; i < cols; ++i) {
            const std::size_t k = std::size_t(r * stride + i);
            ASSERT_NEAR(double(got[k]), double(want[k]), 1e-5 * std::abs(double(want[k])) + 1e-6)
                << "rows=" << rows << " cols=" << cols << " r=" << r << " i=" << i;
        }
    }
}

TEST_F(RmsNormCuda, MatchesCpuReference) {
    for (std::int64_t cols : {1, 3, 4, 33, 128, 896, 1000, 4096, 5120}) {
        checkAgainstReference(5, cols, cols, false);  // contiguous (float4 path when cols % 4 == 0)
        checkAgainstReference(3, cols, cols + 1, false);  // odd stride: scalar path
    }
}

TEST_F(RmsNormCuda, WorksInPlace) {
    checkAgainstReference(64, 896, 896, true);
}

TEST_F(RmsNormCuda, RejectsNegativeSizes) {
    EXPECT_EQ(cuda::rmsNorm(nullptr, 1, nullptr, nullptr, 1, -1, 4, 1e-6f, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(cuda::rmsNorm(nullptr, 1, nullptr, nullptr, 1, 0, 4, 1e-6f, nullptr), cudaSuccess);
}

}  // namespace
}  // namespace iris::kernels
