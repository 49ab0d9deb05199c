// The block readers of kernels/cuda/quant_units.cuh run on the device: every unit of every
// quantised type read by a kernel equals the host's reading (itself checked against
// dequantizeRow by quant_units_test.cpp). The device and host branches of the readers differ
// (intrinsics against plain fallbacks), which is what this test is for.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/quant_units.cuh"
#include "kernels/quant.h"
#include "tests/kernels/cuda_test_support.h"

namespace iris::kernels {
namespace {

constexpr std::int64_t kValues = 1024;

template <TensorType kType>
__global__ void readUnitsKernel(const std::uint8_t* row, std::int64_t units, float* values) {
    const std::int64_t u = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (u >= units) return;
    const cuda::Unit32 unit = cuda::loadUnit<kType>(row, u);
    for (int v = 0; v < 32; ++v)
        values[u * 32 + v] = cuda::unitValue(unit, v);
}

template <TensorType kType>
void checkOnDevice() {
    SCOPED_TRACE(tensorTypeInfo(kType).name);
    std::mt19937 rng(std::uint32_t(kType) * 31u);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> input(kValues);
    for (float& v : input)
        v = normal(rng);
    const auto& info = tensorTypeInfo(kType);
    std::vector<std::uint8_t> row(std::size_t(kValues / info.blockElements * info.blockBytes));
    quantizeRow(kType, input.data(), row.data(), kValues);
    cuda_test::DeviceBuffer drow(row.size()), dvalues(kValues * 4);
    ASSERT_EQ(cuda_test::upload(row, drow), cudaSuccess);
    readUnitsKernel<kType><<<1, kValues / 32>>>(static_cast<const std::uint8_t*>(drow.get()),
                                                kValues / 32, dvalues.floats());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> got(kValues);
    ASSERT_EQ(cuda_test::download(dvalues, got), cudaSuccess);
    for (std::int64_t u = 0; u < kValues / 32; ++u) {
        const cuda::Unit32 host = cuda::loadUnit<kType>(row.data(), u);
        for (int v = 0; v < 32; ++v)
            ASSERT_EQ(got[std::size_t(u * 32 + v)], cuda::unitValue(host, v))
                << "unit " << u << " value " << v;
    }
}

class QuantUnitsCuda : public cuda_test::CudaTest {};

TEST_F(QuantUnitsCuda, TheDeviceReadsEveryUnitAsTheHostDoes) {
    checkOnDevice<TensorType::Q4_0>();
    checkOnDevice<TensorType::Q4_1>();
    checkOnDevice<TensorType::Q5_0>();
    checkOnDevice<TensorType::Q5_1>();
    checkOnDevice<TensorType::Q8_0>();
    checkOnDevice<TensorType::Q4_K>();
    checkOnDevice<TensorType::Q5_K>();
    checkOnDevice<TensorType::Q6_K>();
}

}  // namespace
}  // namespace iris::kernels
