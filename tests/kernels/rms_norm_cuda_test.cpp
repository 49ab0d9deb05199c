#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/rms_norm.h"
#include "kernels/cuda/rms_norm.cuh"

namespace iris::kernels {
namespace {

// Owns a device buffer of floats.
class DeviceBuffer {
public:
    explicit DeviceBuffer(std::size_t count) {
        if (cudaMalloc(&m_data, count * sizeof(float)) != cudaSuccess) m_data = nullptr;
    }
    ~DeviceBuffer() { cudaFree(m_data); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    float* get() const { return static_cast<float*>(m_data); }

private:
    void* m_data = nullptr;
};

class RmsNormCuda : public ::testing::Test {
protected:
    void SetUp() override {
        int count = 0;
        const cudaError_t err = cudaGetDeviceCount(&count);
        if (err != cudaSuccess || count == 0) {
            GTEST_SKIP() << "no CUDA device here ("
                         << (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices")
                         << "); the CUDA kernel was compiled but not run";
        }
    }
};

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

    DeviceBuffer dx(x.size()), dw(w.size()), dy(x.size());
    ASSERT_NE(dx.get(), nullptr);
    ASSERT_EQ(cudaMemcpy(dx.get(), x.data(), x.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dw.get(), w.data(), w.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dy.get(), x.data(), x.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    float* out = inPlace ? dx.get() : dy.get();
    ASSERT_EQ(cuda::rmsNorm(dx.get(), stride, dw.get(), out, stride, rows, cols, 1e-6f, nullptr),
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
