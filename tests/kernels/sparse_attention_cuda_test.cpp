#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/attention_decode.cuh"
#include "kernels/cuda/sparse_select.cuh"
#include "kernels/sparse_attention.h"
#include "tests/kernels/cuda_test_support.h"

namespace iris::kernels {
namespace {

using cuda_test::DeviceBuffer;

// Sequences of different lengths (one shorter than a block, partial last blocks) sharing one
// pool of shuffled pages, as the serving engine lays them out.
struct Pages {
    int pageSize = 16;
    int tableStride = 0;
    std::vector<std::int32_t> lengths;
    std::vector<std::int32_t> tables;

    Pages(std::vector<std::int32_t> sequenceLengths, std::mt19937& rng)
        : lengths(std::move(sequenceLengths)) {
        const std::int32_t longest = *std::max_element(lengths.begin(), lengths.end());
        tableStride = (longest + pageSize - 1) / pageSize;
        const int poolPages = tableStride * int(lengths.size());
        std::vector<std::int32_t> order(static_cast<std::size_t>(poolPages));
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng);
        tables = order;  // sequence s uses pages [s * tableStride, (s + 1) * tableStride) of it
    }
    int seqs() const { return int(lengths.size()); }
    int poolPages() const { return tableStride * seqs(); }
};

class SparseAttentionCuda : public cuda_test::CudaTest {};

TEST_F(SparseAttentionCuda, BlockScoresSelectionAndAttentionMatchTheCpu) {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int groups = 4, dim = 128, headDim = 64, group = 3, heads = groups * group;
    const int selectionBlock = 64, topK = 5, localBlocks = 1;
    Pages pages({40, 64, 700, 1500}, rng);
    const int maxBlocks = int(selectionBlocks(1500, selectionBlock));
    const std::size_t slots = std::size_t(pages.poolPages()) * std::size_t(pages.pageSize);

    std::vector<float> indexKeys(slots * dim), iq(std::size_t(pages.seqs()) * groups * dim);
    std::vector<float> k(slots * groups * headDim), v(k.size()),
        q(std::size_t(pages.seqs()) * heads * headDim);
    for (std::vector<float>* values : {&indexKeys, &iq, &k, &v, &q})
        for (float& x : *values)
            x = normal(rng);
    DeviceBuffer dkeys(indexKeys.size() * 4), diq(iq.size() * 4), dtables(pages.tables.size() * 4),
        dlengths(pages.lengths.size() * 4),
        dscores(std::size_t(pages.seqs()) * groups * maxBlocks * 4);
    ASSERT_EQ(cuda_test::upload(indexKeys, dkeys), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(iq, diq), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(pages.tables, dtables), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(pages.lengths, dlengths), cudaSuccess);
    const auto* tablesOnDevice = static_cast<const std::int32_t*>(dtables.get());
    const auto* lengthsOnDevice = static_cast<const std::int32_t*>(dlengths.get());
    PagedIndexKeys deviceKeys{dkeys.floats(), tablesOnDevice, pages.pageSize, dim};
    ASSERT_EQ(cuda::indexerBlockScores(diq.floats(), pages.seqs(), groups, deviceKeys,
                                       pages.tableStride, lengthsOnDevice, selectionBlock,
                                       maxBlocks, dscores.floats(), nullptr),
              cudaSuccess);
    std::vector<float> scores(std::size_t(pages.seqs()) * groups * maxBlocks);
    ASSERT_EQ(cuda_test::download(dscores, scores), cudaSuccess);

    // 1. The block scores against the CPU's, sequence by sequence.
    for (int s = 0; s < pages.seqs(); ++s) {
        const std::int64_t blocks = selectionBlocks(pages.lengths[std::size_t(s)], selectionBlock);
        PagedIndexKeys hostKeys{indexKeys.data(), &pages.tables[std::size_t(s) * pages.tableStride],
                                pages.pageSize, dim};
        std::vector<float> want(std::size_t(groups * blocks));
        indexerBlockScores(&iq[std::size_t(s) * groups * dim], groups, hostKeys,
                           pages.lengths[std::size_t(s)], selectionBlock, want.data());
        for (int r = 0; r < groups; ++r)
            for (int b = 0; b < maxBlocks; ++b) {
                const float got = scores[(std::size_t(s) * groups + r) * maxBlocks + b];
                if (b >= blocks) {
                    ASSERT_EQ(got, -INFINITY) << "sequence " << s << " block " << b;
                } else {
                    const float w = want[std::size_t(r * blocks + b)];
                    ASSERT_NEAR(got, w, 1e-4f * (1.0f + std::abs(w))) << "s " << s << " b " << b;
                }
            }
    }

    // 2. The selection against the CPU's on the same scores, with a NaN, a -inf and a row of
    // exact ties planted (ties go to the lower block).
    scores[std::size_t(groups) * 2 * maxBlocks + 3] = NAN;
    scores[std::size_t(groups) * 2 * maxBlocks + maxBlocks + 4] = -INFINITY;
    // Sequence 3, group 0: every block but the forced last one scores the same, so the choice
    // is decided by the tie rule alone (the CPU picks blocks 0..topK-2 and the last).
    float* tied = &scores[std::size_t(groups) * 3 * maxBlocks];
    std::fill(tied, tied + maxBlocks - 1, 1.0f);
    // Group 1 of it: ten blocks at +infinity (an overflowing score) still leave the forced block.
    std::fill(tied + maxBlocks, tied + maxBlocks + 10, INFINITY);
    ASSERT_EQ(cuda_test::upload(scores, dscores), cudaSuccess);
    const int rows = pages.seqs() * groups;
    DeviceBuffer dselected(std::size_t(rows) * topK * 4), dcounts(std::size_t(rows) * 4),
        selectScratch(std::size_t(cuda::selectTopBlocksScratchBytes(rows, maxBlocks, topK)));
    ASSERT_EQ(cuda::selectTopBlocks(
                  dscores.floats(), pages.seqs(), groups, lengthsOnDevice, selectionBlock,
                  maxBlocks, topK, localBlocks, static_cast<std::int32_t*>(dselected.get()),
                  static_cast<std::int32_t*>(dcounts.get()), selectScratch.get(), nullptr),
              cudaSuccess);
    std::vector<std::int32_t> selected(std::size_t(rows) * topK),
        counts(static_cast<std::size_t>(rows));
    ASSERT_EQ(cuda_test::download(dselected, selected), cudaSuccess);
    ASSERT_EQ(cuda_test::download(dcounts, counts), cudaSuccess);
    for (int row = 0; row < rows; ++row) {
        const std::int64_t blocks =
            selectionBlocks(pages.lengths[std::size_t(row / groups)], selectionBlock);
        std::vector<std::int32_t> want(static_cast<std::size_t>(topK));
        const int n = selectTopBlocks(&scores[std::size_t(row) * maxBlocks], blocks, topK,
                                      localBlocks, want.data());
        ASSERT_EQ(counts[std::size_t(row)], n) << "row " << row;
        for (int i = 0; i < n; ++i)
            ASSERT_EQ(selected[std::size_t(row) * topK + i], want[std::size_t(i)])
                << "row " << row << " place " << i;
    }

    // 3. Attention over the selected blocks against the CPU's attendBlocks.
    DeviceBuffer dk(k.size() * 4), dv(v.size() * 4), dq(q.size() * 4), dout(q.size() * 4),
        attendScratch(std::size_t(
            cuda::attendSelectedScratchBytes(pages.seqs(), heads, headDim, topK, selectionBlock)));
    ASSERT_EQ(cuda_test::upload(k, dk), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(v, dv), cudaSuccess);
    ASSERT_EQ(cuda_test::upload(q, dq), cudaSuccess);
    const PagedKv kv{.keys = dk.get(),
                     .values = dv.get(),
                     .blockTable = tablesOnDevice,
                     .blockSize = pages.pageSize,
                     .kvHeads = groups,
                     .headDim = headDim,
                     .type = TensorType::F32};
    const float scale = 0.125f;
    ASSERT_EQ(cuda::attendSelectedBlocks(
                  dq.floats(), pages.seqs(), heads, kv, pages.tableStride, lengthsOnDevice,
                  static_cast<const std::int32_t*>(dselected.get()),
                  static_cast<const std::int32_t*>(dcounts.get()), topK, selectionBlock, scale,
                  dout.floats(), attendScratch.get(), nullptr),
              cudaSuccess);
    std::vector<float> got(q.size());
    ASSERT_EQ(cuda_test::download(dout, got), cudaSuccess);
    std::vector<float> want(q.size()), cpuScratch(std::size_t(heads) * topK * selectionBlock);
    for (int s = 0; s < pages.seqs(); ++s) {
        PagedKv hostKv = kv;
        hostKv.keys = k.data();
        hostKv.values = v.data();
        hostKv.blockTable = &pages.tables[std::size_t(s) * pages.tableStride];
        for (int g = 0; g < groups; ++g) {
            const std::size_t row = std::size_t(s) * groups + std::size_t(g);
            attendBlocks(&q[std::size_t(s) * heads * headDim], heads, hostKv,
                         pages.lengths[std::size_t(s)], scale, &selected[row * topK], counts[row],
                         selectionBlock, &want[std::size_t(s) * heads * headDim], cpuScratch.data(),
                         g * group, (g + 1) * group);
        }
    }
    for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 2e-5f) << "value " << i;
}

TEST(SparseAttentionCudaArguments, RejectsWhatTheKernelsDoNotCover) {
    float dummy[4] = {};
    std::int32_t ids[4] = {};
    PagedIndexKeys keys{dummy, ids, 16, 100};  // dim not a multiple of 32
    EXPECT_EQ(cuda::indexerBlockScores(dummy, 1, 4, keys, 1, ids, 64, 1, dummy, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(cuda::selectTopBlocks(dummy, 1, 1, ids, 64, 4, 2, 3, ids, ids, dummy, nullptr),
              cudaErrorInvalidValue);  // more forced blocks than topK
    EXPECT_EQ(cuda::selectTopBlocks(dummy, 1, 1, ids, 64, 4, 300, 1, ids, ids, dummy, nullptr),
              cudaErrorInvalidValue);  // topK past the candidate limit
}

}  // namespace
}  // namespace iris::kernels
