// The device kernels' block readers (kernels/cuda/quant_units.cuh), compiled for the host: every
// 32-value unit of every quantised type against the CPU's dequantizeRow, and the integer unit
// product against a float64 product of the dequantised values. Runs on every machine where the
// CUDA kernels are compiled in, GPU or not: the block layouts are the part of the kernels most
// easily got wrong.
#include "kernels/cuda/quant_units.cuh"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/quant_blocks.h"
#include "kernels/quant.h"

namespace iris::kernels {
namespace {

constexpr std::int64_t kRow = 1024;  // four K super-blocks, 32 legacy blocks

std::vector<std::uint8_t> quantisedRow(TensorType type, std::vector<float>& dequantised) {
    std::mt19937 rng(std::uint32_t(type) * 977u);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> values(static_cast<std::size_t>(kRow));
    for (float& v : values)
        v = normal(rng);
    const auto& info = tensorTypeInfo(type);
    std::vector<std::uint8_t> row(std::size_t(kRow / info.blockElements * info.blockBytes));
    quantizeRow(type, values.data(), row.data(), kRow);
    dequantised.resize(values.size());
    dequantizeRow(type, row.data(), dequantised.data(), kRow);
    return row;
}

template <TensorType kType>
void checkUnits() {
    SCOPED_TRACE(tensorTypeInfo(kType).name);
    std::vector<float> want;
    const std::vector<std::uint8_t> row = quantisedRow(kType, want);
    for (std::int64_t u = 0; u < kRow / 32; ++u) {
        const cuda::Unit32 unit = cuda::loadUnit<kType>(row.data(), u);
        for (int v = 0; v < 32; ++v) {
            const float w = want[std::size_t(u * 32 + v)];
            ASSERT_NEAR(cuda::unitValue(unit, v), w, 1e-6f * (1.0f + std::abs(w)))
                << "unit " << u << " value " << v;
        }
    }
}

TEST(QuantUnits, EveryUnitReadsWhatDequantizeRowReads) {
    checkUnits<TensorType::Q4_0>();
    checkUnits<TensorType::Q4_1>();
    checkUnits<TensorType::Q5_0>();
    checkUnits<TensorType::Q5_1>();
    checkUnits<TensorType::Q8_0>();
    checkUnits<TensorType::Q4_K>();
    checkUnits<TensorType::Q5_K>();
    checkUnits<TensorType::Q6_K>();
}

TEST(QuantUnits, FloatRowsReadBackTheirValues) {
    for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
        std::vector<float> want;
        const std::vector<std::uint8_t> row = quantisedRow(type, want);
        for (std::int64_t j = 0; j < kRow; ++j) {
            const float got =
                type == TensorType::F32   ? cuda::floatAt<TensorType::F32>(row.data(), j)
                : type == TensorType::F16 ? cuda::floatAt<TensorType::F16>(row.data(), j)
                                          : cuda::floatAt<TensorType::BF16>(row.data(), j);
            ASSERT_EQ(got, want[std::size_t(j)]) << tensorTypeInfo(type).name << " value " << j;
        }
    }
}

// The integer product of a unit with an 8-bit activation block equals the float64 product of
// the dequantised weights and the dequantised activations (both exact in f32), up to rounding.
TEST(QuantUnits, UnitDotEqualsTheProductOfTheDequantisedValues) {
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> byte(-127, 127);
    std::vector<float> weights;
    const std::vector<std::uint8_t> row = quantisedRow(TensorType::Q6_K, weights);
    for (std::int64_t u = 0; u < kRow / 32; ++u) {
        cpu::BlockQ8Act act{};
        act.d = 0.0123f;
        int sum = 0;
        for (std::int8_t& q : act.qs) {
            q = static_cast<std::int8_t>(byte(rng));
            sum += q;
        }
        act.sum = sum;
        double want = 0.0;
        for (int v = 0; v < 32; ++v)
            want += double(weights[std::size_t(u * 32 + v)]) * double(act.qs[v]) * double(act.d);
        const float got = cuda::unitDot(cuda::loadUnit<TensorType::Q6_K>(row.data(), u), act);
        ASSERT_NEAR(got, want, 1e-4 * (1.0 + std::abs(want))) << "unit " << u;
    }
    // A type with an offset (q4_K's minimums) exercises the sum term.
    const std::vector<std::uint8_t> k4 = quantisedRow(TensorType::Q4_K, weights);
    cpu::BlockQ8Act ones{};
    ones.d = 0.5f;
    for (std::int8_t& q : ones.qs)
        q = 2;
    ones.sum = 64;
    for (std::int64_t u = 0; u < kRow / 32; ++u) {
        double want = 0.0;
        for (int v = 0; v < 32; ++v)
            want += double(weights[std::size_t(u * 32 + v)]);  // each activation is 0.5 * 2 = 1
        const float got = cuda::unitDot(cuda::loadUnit<TensorType::Q4_K>(k4.data(), u), ones);
        ASSERT_NEAR(got, want, 1e-4 * (1.0 + std::abs(want))) << "unit " << u;
    }
}

}  // namespace
}  // namespace iris::kernels
