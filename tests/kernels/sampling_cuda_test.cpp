#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/sampling.cuh"
#include "tests/kernels/cuda_test_support.h"

namespace iris::kernels {
namespace {

using cuda_test::DeviceBuffer;

class SamplingCuda : public cuda_test::CudaTest {};

// Rows with many exact ties (logits on a coarse grid) and, in row 1, NaN logits, for
// vocabularies that leave a last slice shorter than k (4106 = 4096 + 10) or a long one: the
// candidates equal std::partial_sort's with inference/sampler.cpp's ranking, NaN last.
TEST_F(SamplingCuda, TopCandidatesAreThePartialSortOfTheRow) {
    for (int k : {1, 40, 256}) {
        for (std::int64_t vocab : {std::int64_t(300), std::int64_t(4106), std::int64_t(151936)}) {
            if (k > vocab) continue;
            SCOPED_TRACE(::testing::Message() << "k=" << k << " vocab=" << vocab);
            const int rows = 3;
            const std::ptrdiff_t stride = vocab + 5;
            std::mt19937 rng(std::uint32_t(k * 7 + vocab));
            std::uniform_int_distribution<int> grid(-400, 400);
            std::vector<float> logits(std::size_t(rows * stride), -1e30f);
            for (int r = 0; r < rows; ++r)
                for (std::int64_t i = 0; i < vocab; ++i)
                    logits[std::size_t(r * stride + i)] =
                        r == 1 && i % 97 == 3 ? NAN : float(grid(rng)) / 16.0f;
            DeviceBuffer dlogits(logits.size() * 4), dids(std::size_t(rows * k) * 4),
                dvalues(std::size_t(rows * k) * 4),
                scratch(std::size_t(cuda::topCandidatesScratchBytes(rows, vocab, k)));
            ASSERT_EQ(cuda_test::upload(logits, dlogits), cudaSuccess);
            ASSERT_EQ(cuda::topCandidates(dlogits.floats(), rows, vocab, stride, k,
                                          static_cast<std::int32_t*>(dids.get()), dvalues.floats(),
                                          scratch.get(), nullptr),
                      cudaSuccess);
            std::vector<std::int32_t> ids(std::size_t(rows * k));
            std::vector<float> values(ids.size());
            ASSERT_EQ(cuda_test::download(dids, ids), cudaSuccess);
            ASSERT_EQ(cuda_test::download(dvalues, values), cudaSuccess);
            for (int r = 0; r < rows; ++r) {
                std::vector<std::int32_t> order(static_cast<std::size_t>(vocab));
                std::iota(order.begin(), order.end(), 0);
                const float* row = &logits[std::size_t(r * stride)];
                std::partial_sort(order.begin(), order.begin() + k, order.end(),
                                  [&](std::int32_t a, std::int32_t b) {
                                      if (std::isnan(row[a]) || std::isnan(row[b]))
                                          return !std::isnan(row[a]) ||
                                                 (std::isnan(row[b]) && a < b);
                                      return row[a] > row[b] || (row[a] == row[b] && a < b);
                                  });
                for (int j = 0; j < k; ++j) {
                    ASSERT_EQ(ids[std::size_t(r * k + j)], order[std::size_t(j)])
                        << "row " << r << " place " << j;
                    const float want = row[order[std::size_t(j)]];
                    if (std::isnan(want)) {
                        ASSERT_TRUE(std::isnan(values[std::size_t(r * k + j)]));
                    } else {
                        ASSERT_EQ(values[std::size_t(r * k + j)], want);
                    }
                }
            }
        }
    }
}

TEST_F(SamplingCuda, PenaltiesFollowTheSamplersFormula) {
    std::vector<float> logits = {2.0f, -2.0f, 0.5f, 3.0f, -1.0f};
    const std::vector<std::int32_t> ids = {0, 1, 4}, counts = {1, 3, 2};
    DeviceBuffer dlogits(logits.size() * 4), dids(12), dcounts(12);
    ASSERT_EQ(cuda_test::upload(logits, dlogits), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(ids, dids), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(counts, dcounts), cudaSuccess);
    ASSERT_EQ(cuda::applyPenalties(dlogits.floats(), static_cast<const std::int32_t*>(dids.get()),
                                   static_cast<const std::int32_t*>(dcounts.get()), 3, 1.25f, 0.5f,
                                   0.25f, nullptr),
              cudaSuccess);
    std::vector<float> got(logits.size());
    ASSERT_EQ(cuda_test::download(dlogits, got), cudaSuccess);
    // Positive logits divided, negative multiplied, then counts * frequency + presence off.
    EXPECT_FLOAT_EQ(got[0], 2.0f / 1.25f - (1 * 0.25f + 0.5f));
    EXPECT_FLOAT_EQ(got[1], -2.0f * 1.25f - (3 * 0.25f + 0.5f));
    EXPECT_FLOAT_EQ(got[2], 0.5f);
    EXPECT_FLOAT_EQ(got[3], 3.0f);
    EXPECT_FLOAT_EQ(got[4], -1.0f * 1.25f - (2 * 0.25f + 0.5f));
}

TEST(SamplingCudaArguments, RejectsWhatItCannotSelect) {
    float dummy[4] = {};
    std::int32_t ids[4] = {};
    EXPECT_EQ(cuda::topCandidates(dummy, 1, 4, 4, 0, ids, dummy, dummy, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(cuda::topCandidates(dummy, 1, 4, 4, 5, ids, dummy, dummy, nullptr),
              cudaErrorInvalidValue);  // more candidates than the vocabulary
    EXPECT_EQ(cuda::topCandidates(dummy, 1, 1000, 1000, cuda::kMaxCandidates + 1, ids, dummy, dummy,
                                  nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(cuda::topCandidates(dummy, 2, 4, 3, 1, ids, dummy, dummy, nullptr),
              cudaErrorInvalidValue);  // rows would overlap
    EXPECT_EQ(cuda::applyPenalties(dummy, ids, ids, 1, 0.0f, 0.0f, 0.0f, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(cuda::topCandidatesScratchBytes(2, 151936, 40), 2 * 38 * 40 * 8);
}

}  // namespace
}  // namespace iris::kernels
