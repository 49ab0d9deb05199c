// planStep (inference/backend/step_plan.h), the host half of the CUDA backend's forward pass,
// on every machine: each token's pool row checked against KvCache's own slot addressing
// (keySlot), the runs, lengths and padded block tables by hand.
#include "inference/backend/step_plan.h"

#include <gtest/gtest.h>

namespace iris::inference {
namespace {

constexpr int kBlockSize = 4, kKvHeads = 2, kHeadDim = 8;

KvCache makeCache() {
    Result<KvCache> cache =
        KvCache::create({1, kKvHeads, kHeadDim, kBlockSize, 32, kernels::TensorType::F32});
    EXPECT_TRUE(cache);
    return std::move(*cache);
}

// The pool row KvCache itself writes token `slot` of `sequence` to.
std::int64_t cacheRow(KvCache& cache, SequenceId sequence, std::int64_t slot) {
    const auto* base = static_cast<const std::byte*>(cache.keys(0));
    const auto* at = static_cast<const std::byte*>(cache.keySlot(0, sequence, slot));
    return (at - base) / std::int64_t(kKvHeads * kHeadDim * sizeof(float));
}

TokenInput token(std::int32_t id, SequenceId sequence, std::int64_t slot) {
    const auto p = std::int32_t(slot);
    return {id, sequence, slot, {p, p, p, p}, true};
}

TEST(StepPlan, PrefillRunsOfTwoSequencesWithTheirRowsLengthsAndTables) {
    KvCache cache = makeCache();
    const SequenceId a = cache.newSequence(), b = cache.newSequence();
    ASSERT_TRUE(cache.extend(b, 3).isOk());  // b first: its block comes before a's
    ASSERT_TRUE(cache.extend(a, 6).isOk());
    const TokenInput batch[] = {token(10, a, 3), token(11, a, 4), token(12, a, 5), token(20, b, 1),
                                token(21, b, 2)};
    const StepPlan plan = planStep(batch, cache);
    EXPECT_EQ(plan.ids, (std::vector<std::int32_t>{10, 11, 12, 20, 21}));
    EXPECT_EQ(plan.kvRows, (std::vector<std::int64_t>{cacheRow(cache, a, 3), cacheRow(cache, a, 4),
                                                      cacheRow(cache, a, 5), cacheRow(cache, b, 1),
                                                      cacheRow(cache, b, 2)}));
    EXPECT_EQ(plan.lengths, (std::vector<std::int32_t>{4, 5, 6, 2, 3}));
    ASSERT_EQ(plan.runs.size(), 2u);
    EXPECT_EQ(plan.runs[0].first, 0);
    EXPECT_EQ(plan.runs[0].tokens, 3);
    EXPECT_EQ(plan.runs[0].maxLength, 6);
    EXPECT_EQ(plan.runs[1].first, 3);
    EXPECT_EQ(plan.runs[1].tokens, 2);
    EXPECT_EQ(plan.runs[1].maxLength, 3);
    EXPECT_EQ(plan.maxLength, 6);
    EXPECT_FALSE(plan.decode);
    // a holds 2 blocks, b 1: rows of 2, b's padded.
    EXPECT_EQ(plan.tableStride, 2);
    const auto ta = cache.blockTable(a), tb = cache.blockTable(b);
    EXPECT_EQ(plan.tables, (std::vector<std::int32_t>{ta[0], ta[1], tb[0], 0}));
    EXPECT_TRUE(plan.imageRows.empty());
}

TEST(StepPlan, OneTokenPerSequenceIsADecodeStep) {
    KvCache cache = makeCache();
    const SequenceId a = cache.newSequence(), b = cache.newSequence(), c = cache.newSequence();
    ASSERT_TRUE(cache.extend(a, 9).isOk());
    ASSERT_TRUE(cache.extend(b, 1).isOk());
    ASSERT_TRUE(cache.extend(c, 4).isOk());
    const TokenInput batch[] = {token(1, a, 8), token(2, b, 0), token(3, c, 3)};
    const StepPlan plan = planStep(batch, cache);
    EXPECT_TRUE(plan.decode);
    EXPECT_EQ(plan.maxLength, 9);
    EXPECT_EQ(plan.tableStride, 3);
    EXPECT_EQ(plan.lengths, (std::vector<std::int32_t>{9, 1, 4}));
    EXPECT_EQ(plan.kvRows, (std::vector<std::int64_t>{cacheRow(cache, a, 8), cacheRow(cache, b, 0),
                                                      cacheRow(cache, c, 3)}));
    const auto ta = cache.blockTable(a), tb = cache.blockTable(b), tc = cache.blockTable(c);
    EXPECT_EQ(plan.tables,
              (std::vector<std::int32_t>{ta[0], ta[1], ta[2], tb[0], 0, 0, tc[0], 0, 0}));
}

// A fork shares the prefix's blocks; the token it writes after copy on write lands in its own
// block, and its table names the shared ones before it.
TEST(StepPlan, AForkWritesItsOwnBlockAndReadsTheSharedPrefix) {
    KvCache cache = makeCache();
    const SequenceId a = cache.newSequence();
    ASSERT_TRUE(cache.extend(a, 6).isOk());
    const SequenceId fork = cache.fork(a, 6);
    ASSERT_TRUE(cache.extend(fork, 7).isOk());  // copies the shared partial block
    const TokenInput batch[] = {token(5, fork, 6)};
    const StepPlan plan = planStep(batch, cache);
    EXPECT_EQ(plan.kvRows, (std::vector<std::int64_t>{cacheRow(cache, fork, 6)}));
    EXPECT_NE(cache.blockTable(fork)[1], cache.blockTable(a)[1]);
    EXPECT_EQ(plan.tables[0], cache.blockTable(a)[0]);
    EXPECT_EQ(plan.tables[1], cache.blockTable(fork)[1]);
}

TEST(StepPlan, ImageTokensAreListedInBatchOrder) {
    KvCache cache = makeCache();
    const SequenceId a = cache.newSequence();
    ASSERT_TRUE(cache.extend(a, 5).isOk());
    const float row[1] = {0.0f};
    TokenInput batch[] = {token(1, a, 0), token(2, a, 1), token(2, a, 2), token(3, a, 3),
                          token(2, a, 4)};
    batch[1].embedding = batch[2].embedding = batch[4].embedding = row;
    const StepPlan plan = planStep(batch, cache);
    EXPECT_EQ(plan.imageRows, (std::vector<std::int64_t>{1, 2, 4}));
    EXPECT_EQ(plan.runs.size(), 1u);
}

}  // namespace
}  // namespace iris::inference
