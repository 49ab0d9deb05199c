// storeKvRows and addBias (kernels/cuda/kv_store.cuh) against what the CPU does for the same
// steps: inference/models/model_parts.cpp's writeKv (f16 through kernels::fp32ToFp16) and
// LinearRunner's bias loop, written out here.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/kv_store.cuh"
#include "kernels/fp16.h"
#include "tests/kernels/cuda_test_support.h"

namespace iris::kernels {
namespace {

using cuda_test::DeviceBuffer;

std::vector<float> randomValues(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = normal(rng);
    return v;
}

class KvStoreCuda : public cuda_test::CudaTest, public ::testing::WithParamInterface<TensorType> {};

// Tokens scattered over a pool out of order, one skipped (row -1); every other pool row keeps
// its sentinel. f16 rows must be the CPU's round-to-nearest-even bits exactly.
TEST_P(KvStoreCuda, RowsLandInTheirSlotsRoundedAsTheCpuRoundsThem) {
    const TensorType type = GetParam();
    const std::int64_t tokens = 9, width = 2 * 96, poolRows = 40;
    const std::vector<std::int64_t> rows = {17, 3, 39, -1, 0, 22, 5, 31, 12};
    const std::vector<float> k = randomValues(std::size_t(tokens * width), 1);
    const std::vector<float> v = randomValues(std::size_t(tokens * width), 2);
    const std::size_t element = type == TensorType::F16 ? 2 : 4;
    const std::size_t poolBytes = std::size_t(poolRows * width) * element;
    std::vector<std::uint8_t> sentinel(poolBytes, 0xA5);
    DeviceBuffer dk(k.size() * 4), dv(v.size() * 4), dRows(rows.size() * 8), keys(poolBytes),
        values(poolBytes);
    ASSERT_EQ(cuda_test::upload(k, dk), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(v, dv), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(rows, dRows), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(sentinel, keys), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(sentinel, values), cudaSuccess);
    ASSERT_EQ(cuda::storeKvRows(dk.floats(), dv.floats(), tokens, width,
                                static_cast<const std::int64_t*>(dRows.get()), type, keys.get(),
                                values.get(), nullptr),
              cudaSuccess);
    std::vector<std::uint8_t> gotK(poolBytes), gotV(poolBytes);
    ASSERT_EQ(cuda_test::download(keys, gotK), cudaSuccess);
    ASSERT_EQ(cuda_test::download(values, gotV), cudaSuccess);
    std::vector<std::uint8_t> wantK = sentinel, wantV = sentinel;
    for (std::int64_t t = 0; t < tokens; ++t) {
        if (rows[std::size_t(t)] < 0) continue;
        for (std::int64_t i = 0; i < width; ++i) {
            const std::size_t at = std::size_t(rows[std::size_t(t)] * width + i) * element;
            const float kv[2] = {k[std::size_t(t * width + i)], v[std::size_t(t * width + i)]};
            std::uint8_t* out[2] = {&wantK[at], &wantV[at]};
            for (int j = 0; j < 2; ++j) {
                if (type == TensorType::F16) {
                    const std::uint16_t h = fp32ToFp16(kv[j]);
                    std::memcpy(out[j], &h, 2);
                } else {
                    std::memcpy(out[j], &kv[j], 4);
                }
            }
        }
    }
    EXPECT_EQ(gotK, wantK);
    EXPECT_EQ(gotV, wantV);
}

INSTANTIATE_TEST_SUITE_P(Types, KvStoreCuda, ::testing::Values(TensorType::F16, TensorType::F32),
                         [](const auto& p) { return p.param == TensorType::F16 ? "f16" : "f32"; });

class AddBiasCuda : public cuda_test::CudaTest {};

TEST_F(AddBiasCuda, AddsTheBiasToEveryRow) {
    const std::int64_t rows = 13, width = 1000;
    std::vector<float> y = randomValues(std::size_t(rows * width), 3);
    const std::vector<float> bias = randomValues(std::size_t(width), 4);
    DeviceBuffer dy(y.size() * 4), db(bias.size() * 4);
    ASSERT_EQ(cuda_test::upload(y, dy), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(bias, db), cudaSuccess);
    ASSERT_EQ(cuda::addBias(dy.floats(), db.floats(), rows, width, nullptr), cudaSuccess);
    std::vector<float> got(y.size());
    ASSERT_EQ(cuda_test::download(dy, got), cudaSuccess);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t n = 0; n < width; ++n)
            y[std::size_t(r * width + n)] += bias[std::size_t(n)];
    EXPECT_EQ(got, y);  // one f32 addition each: exact
}

TEST(KvStoreCudaArguments, RejectsBadInputsBeforeAnyLaunch) {
    float f = 0;
    std::int64_t row = 0;
    EXPECT_EQ(cuda::storeKvRows(&f, &f, 1, 1, &row, TensorType::BF16, &f, &f, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(cuda::storeKvRows(&f, &f, -1, 1, &row, TensorType::F16, &f, &f, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(cuda::storeKvRows(&f, nullptr, 1, 1, &row, TensorType::F16, &f, &f, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(cuda::storeKvRows(&f, &f, 1, 1, &row, TensorType::F32, &f, nullptr, nullptr),
              cudaErrorInvalidValue);  // K alone takes both v and values null
    EXPECT_EQ(cuda::storeKvRows(nullptr, nullptr, 0, 8, nullptr, TensorType::F16, nullptr, nullptr,
                                nullptr),
              cudaSuccess);  // nothing to do
    EXPECT_EQ(cuda::addBias(&f, nullptr, 1, 1, nullptr), cudaErrorInvalidValue);
    EXPECT_EQ(cuda::addBias(&f, &f, -1, 1, nullptr), cudaErrorInvalidValue);
    EXPECT_EQ(cuda::addBias(nullptr, nullptr, 0, 0, nullptr), cudaSuccess);
}

}  // namespace
}  // namespace iris::kernels
