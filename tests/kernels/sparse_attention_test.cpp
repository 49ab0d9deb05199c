// MSA kernels: the scalar reference against float64 sums written here, and every x86 variant
// the CPU can run against the scalar reference, on random paged data with shuffled pages.
#include "kernels/sparse_attention.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/attention.h"
#include "kernels/cpu_features.h"
#include "kernels/fp16.h"

namespace iris::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// A paged pool holding K, V (kvHeads x headDim per token) and indexer keys (indexDim per token)
// with a shuffled page table, so a kernel that ignores the table fails.
struct Pool {
    int pageSize, kvHeads, headDim, indexDim;
    TensorType type;
    std::vector<std::int32_t> table;
    std::vector<float> k32, v32, index;
    std::vector<std::uint16_t> k16, v16;

    Pool(std::int64_t length, int page, int heads, int dim, int idxDim, TensorType t, unsigned seed)
        : pageSize(page), kvHeads(heads), headDim(dim), indexDim(idxDim), type(t) {
        const std::int64_t pages = (length + page - 1) / page + 2;
        table.resize(std::size_t(pages));
        std::iota(table.begin(), table.end(), 0);
        std::mt19937 rng(seed);
        std::shuffle(table.begin(), table.end(), rng);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        const std::size_t rows = std::size_t(pages * page);
        for (auto* v : {&k32, &v32}) {
            v->resize(rows * std::size_t(heads * dim));
            for (float& x : *v)
                x = normal(rng);
        }
        index.resize(rows * std::size_t(idxDim));
        for (float& x : index)
            x = normal(rng);
        for (float& x : k32)  // what an f16 cache would hold, so both types see the same values
            if (t == TensorType::F16) x = fp16ToFp32(fp32ToFp16(x));
        for (float& x : v32)
            if (t == TensorType::F16) x = fp16ToFp32(fp32ToFp16(x));
        k16.resize(k32.size());
        v16.resize(v32.size());
        for (std::size_t i = 0; i < k32.size(); ++i) {
            k16[i] = fp32ToFp16(k32[i]);
            v16[i] = fp32ToFp16(v32[i]);
        }
    }
    std::int64_t row(std::int64_t t) const {
        return std::int64_t(table[std::size_t(t / pageSize)]) * pageSize + t % pageSize;
    }
    PagedIndexKeys indexKeys() const { return {index.data(), table.data(), pageSize, indexDim}; }
    PagedKv kv() const {
        const bool f16 = type == TensorType::F16;
        return {f16 ? static_cast<const void*>(k16.data()) : k32.data(),
                f16 ? static_cast<const void*>(v16.data()) : v32.data(),
                table.data(),
                pageSize,
                kvHeads,
                headDim,
                type};
    }
};

// A pool's K/V moved into the shuffled slots of an arena (PagedKv::slotOf, as KV tiers keep
// them), slot 0 holding NaN: read through the slots it must give the same bits as the pool.
struct Slotted {
    std::vector<std::int32_t> slotOf;
    std::vector<float> k32, v32;
    std::vector<std::uint16_t> k16, v16;
    const Pool& pool;

    Slotted(const Pool& p, unsigned seed) : pool(p) {
        const std::size_t pages = p.table.size(),
                          page = std::size_t(p.pageSize * p.kvHeads * p.headDim);
        slotOf.resize(pages);
        std::iota(slotOf.begin(), slotOf.end(), 1);
        std::shuffle(slotOf.begin(), slotOf.end(), std::mt19937(seed));
        k32.assign((pages + 1) * page, NAN);
        v32.assign(k32.size(), NAN);
        k16.assign(k32.size(), 0xFFFF);
        v16.assign(k32.size(), 0xFFFF);
        for (std::size_t b = 0; b < pages; ++b) {
            const std::size_t from = b * page, to = std::size_t(slotOf[b]) * page;
            std::copy_n(p.k32.begin() + from, page, k32.begin() + to);
            std::copy_n(p.v32.begin() + from, page, v32.begin() + to);
            std::copy_n(p.k16.begin() + from, page, k16.begin() + to);
            std::copy_n(p.v16.begin() + from, page, v16.begin() + to);
        }
    }
    PagedKv kv() const {
        PagedKv kv = pool.kv();
        const bool f16 = pool.type == TensorType::F16;
        kv.keys = f16 ? static_cast<const void*>(k16.data()) : k32.data();
        kv.values = f16 ? static_cast<const void*>(v16.data()) : v32.data();
        kv.slotOf = slotOf.data();
        return kv;
    }
};

std::vector<float> randomVector(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = normal(rng);
    return v;
}

std::vector<CpuIsa> runnableIsas() {
    std::vector<CpuIsa> isas;
    for (CpuIsa isa : {CpuIsa::Avx2, CpuIsa::Avx512})
        if (isa <= highestSupportedIsa(cpuFeatures())) isas.push_back(isa);
    return isas;
}

cpu::BlockScoresFn blockScoresFor(CpuIsa isa) {
#if defined(IRIS_KERNELS_X86)
    if (isa == CpuIsa::Avx2) return cpu::indexerBlockScoresAvx2;
    if (isa == CpuIsa::Avx512) return cpu::indexerBlockScoresAvx512;
#endif
    (void)isa;
    return cpu::indexerBlockScoresScalar;
}

cpu::AttendBlocksFn attendBlocksFor(CpuIsa isa) {
#if defined(IRIS_KERNELS_X86)
    if (isa == CpuIsa::Avx2) return cpu::attendBlocksAvx2;
    if (isa == CpuIsa::Avx512) return cpu::attendBlocksAvx512;
#endif
    (void)isa;
    return cpu::attendBlocksScalar;
}

struct Shape {
    int pageSize, selectionBlock, dim;
    std::int64_t length;
};

class BlockScores : public ::testing::TestWithParam<Shape> {};

TEST_P(BlockScores, ScalarMatchesFloat64MaxPooling) {
    const Shape s = GetParam();
    const int groups = 3;
    const Pool pool(s.length, s.pageSize, 1, 8, s.dim, TensorType::F32, 7);
    const std::vector<float> q = randomVector(std::size_t(groups * s.dim), 8);
    const std::int64_t blocks = selectionBlocks(s.length, s.selectionBlock);
    std::vector<float> got(std::size_t(groups * blocks));
    cpu::indexerBlockScoresScalar(q.data(), groups, pool.indexKeys(), s.length, s.selectionBlock,
                                  got.data());
    for (int r = 0; r < groups; ++r) {
        for (std::int64_t b = 0; b < blocks; ++b) {
            double want = -1e300;
            for (std::int64_t t = b * s.selectionBlock;
                 t < std::min(s.length, (b + 1) * s.selectionBlock); ++t) {
                double dot = 0;
                for (int i = 0; i < s.dim; ++i)
                    dot += double(q[std::size_t(r * s.dim + i)]) *
                           double(pool.index[std::size_t(pool.row(t) * s.dim + i)]);
                want = std::max(want, dot);
            }
            EXPECT_NEAR(double(got[std::size_t(r * blocks + b)]), want,
                        1e-4 * (1 + std::fabs(want)))
                << "group " << r << " block " << b;
        }
    }
}

TEST_P(BlockScores, VariantsMatchScalar) {
    const Shape s = GetParam();
    const int groups = 4;
    const Pool pool(s.length, s.pageSize, 1, 8, s.dim, TensorType::F32, 11);
    const std::vector<float> q = randomVector(std::size_t(groups * s.dim), 12);
    const std::int64_t blocks = selectionBlocks(s.length, s.selectionBlock);
    std::vector<float> want(std::size_t(groups * blocks)), got(want.size());
    cpu::indexerBlockScoresScalar(q.data(), groups, pool.indexKeys(), s.length, s.selectionBlock,
                                  want.data());
    for (CpuIsa isa : runnableIsas()) {
        std::fill(got.begin(), got.end(), 0.0f);
        blockScoresFor(isa)(q.data(), groups, pool.indexKeys(), s.length, s.selectionBlock,
                            got.data());
        for (std::size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 1e-4f * (1 + std::fabs(want[i])))
                << cpuIsaName(isa) << " entry " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, BlockScores,
                         ::testing::Values(Shape{16, 128, 128, 1000},  // pages inside blocks
                                           Shape{64, 32, 40, 333},     // blocks inside pages
                                           Shape{32, 32, 36, 97},      // equal, odd dims
                                           Shape{16, 64, 128, 1}));

TEST(SelectTopBlocks, ForcesTheLocalBlockAndTakesTheBestOthers) {
    const std::vector<float> scores = {5.0f, 1.0f, 9.0f, 3.0f, 7.0f, -2.0f};
    std::vector<std::int32_t> selected(3);
    ASSERT_EQ(selectTopBlocks(scores.data(), 6, 3, 1, selected.data()), 3);
    EXPECT_EQ(selected, (std::vector<std::int32_t>{2, 4, 5}));  // 5 is local despite -2
    selected.assign(4, -1);
    ASSERT_EQ(selectTopBlocks(scores.data(), 6, 4, 2, selected.data()), 4);
    EXPECT_EQ(selected, (std::vector<std::int32_t>{0, 2, 4, 5}));
}

TEST(SelectTopBlocks, NeverPicksInvalidBlocksAndBreaksTiesToTheLowerBlock) {
    const std::vector<float> scores = {-kInf, 2.0f, std::nanf(""), 2.0f, 2.0f, 0.0f};
    std::vector<std::int32_t> selected(8, -1);
    ASSERT_EQ(selectTopBlocks(scores.data(), 6, 8, 1, selected.data()), 4);
    selected.resize(4);
    EXPECT_EQ(selected, (std::vector<std::int32_t>{1, 3, 4, 5}));
    selected.assign(3, -1);
    ASSERT_EQ(selectTopBlocks(scores.data(), 6, 3, 1, selected.data()), 3);
    EXPECT_EQ(selected, (std::vector<std::int32_t>{1, 3, 5}));
}

TEST(SelectTopBlocks, FewerBlocksThanTopKTakesThemAll) {
    const std::vector<float> scores = {0.5f, -1.0f};
    std::vector<std::int32_t> selected(16, -1);
    ASSERT_EQ(selectTopBlocks(scores.data(), 2, 16, 1, selected.data()), 2);
    EXPECT_EQ(selected[0], 0);
    EXPECT_EQ(selected[1], 1);
}

TEST(SelectTopBlocks, MatchesSortingOnRandomScores) {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int trial = 0; trial < 200; ++trial) {
        const std::int64_t blocks = 1 + trial % 40;
        const int topK = 1 + trial % 7, local = 1 + trial % std::min(topK, 2);
        std::vector<float> scores(static_cast<std::size_t>(blocks));
        for (float& s : scores)
            s = normal(rng);
        std::vector<std::int32_t> got(static_cast<std::size_t>(topK));
        got.resize(std::size_t(selectTopBlocks(scores.data(), blocks, topK, local, got.data())));
        std::vector<std::int32_t> order(static_cast<std::size_t>(blocks));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
            const bool la = a >= blocks - local, lb = b >= blocks - local;
            if (la != lb) return la;
            return scores[std::size_t(a)] > scores[std::size_t(b)];
        });
        order.resize(std::size_t(std::min<std::int64_t>(topK, blocks)));
        std::sort(order.begin(), order.end());
        EXPECT_EQ(got, order) << "trial " << trial;
    }
}

struct AttendCase {
    int pageSize, selectionBlock;
    TensorType type;
};

class AttendBlocks : public ::testing::TestWithParam<AttendCase> {};

TEST_P(AttendBlocks, AllBlocksSelectedIsDenseAttention) {
    const AttendCase c = GetParam();
    const int heads = 6, kvHeads = 2, dim = 40, group = heads / kvHeads;
    const std::int64_t length = 150;
    const Pool pool(length, c.pageSize, kvHeads, dim, 8, c.type, 21);
    const std::vector<float> q = randomVector(std::size_t(heads * dim), 22);
    const std::int64_t blocks = selectionBlocks(length, c.selectionBlock);
    std::vector<std::int32_t> all(static_cast<std::size_t>(blocks));
    std::iota(all.begin(), all.end(), 0);
    std::vector<float> dense(std::size_t(heads * dim)), sparse(dense.size());
    std::vector<float> scratch(std::size_t(heads * (blocks * c.selectionBlock + length)));
    attendPaged(q.data(), heads, pool.kv(), length, 0.3f, dense.data(), scratch.data(), 0, heads);
    for (int g = 0; g < kvHeads; ++g) {
        attendBlocks(q.data(), heads, pool.kv(), length, 0.3f, all.data(), int(blocks),
                     c.selectionBlock, sparse.data(), scratch.data(), g * group, (g + 1) * group);
    }
    for (std::size_t i = 0; i < dense.size(); ++i)
        EXPECT_NEAR(sparse[i], dense[i], 1e-5f) << i;
}

TEST_P(AttendBlocks, ScalarMatchesFloat64OverSelectedTokens) {
    const AttendCase c = GetParam();
    const int heads = 4, kvHeads = 2, dim = 32, group = heads / kvHeads;
    const std::int64_t length = 200;  // the last block is partly visible
    const Pool pool(length, c.pageSize, kvHeads, dim, 8, c.type, 31);
    const std::vector<float> q = randomVector(std::size_t(heads * dim), 32);
    const std::int64_t blocks = selectionBlocks(length, c.selectionBlock);
    const std::vector<std::int32_t> chosen = {0, std::int32_t(blocks / 2),
                                              std::int32_t(blocks - 1)};
    std::vector<float> got(std::size_t(heads * dim));
    std::vector<float> scratch(std::size_t(heads * 3 * c.selectionBlock));
    const float scale = 0.2f;
    for (int g = 0; g < kvHeads; ++g)
        cpu::attendBlocksScalar(q.data(), heads, pool.kv(), length, scale, chosen.data(), 3,
                                c.selectionBlock, got.data(), scratch.data(), g * group,
                                (g + 1) * group);
    for (int h = 0; h < heads; ++h) {
        const int g = h / group;
        std::vector<std::int64_t> tokens;
        for (std::int32_t b : chosen)
            for (std::int64_t t = std::int64_t(b) * c.selectionBlock;
                 t < std::min(length, std::int64_t(b + 1) * c.selectionBlock); ++t)
                tokens.push_back(t);
        std::vector<double> w;
        double max = -1e300, sum = 0;
        for (std::int64_t t : tokens) {
            double dot = 0;
            for (int i = 0; i < dim; ++i)
                dot += double(q[std::size_t(h * dim + i)]) *
                       double(pool.k32[std::size_t((pool.row(t) * kvHeads + g) * dim + i)]);
            w.push_back(dot * double(scale));
            max = std::max(max, w.back());
        }
        for (double& x : w)
            sum += (x = std::exp(x - max));
        for (int i = 0; i < dim; ++i) {
            double want = 0;
            for (std::size_t j = 0; j < tokens.size(); ++j)
                want +=
                    w[j] / sum *
                    double(pool.v32[std::size_t((pool.row(tokens[j]) * kvHeads + g) * dim + i)]);
            EXPECT_NEAR(double(got[std::size_t(h * dim + i)]), want, 1e-5)
                << "head " << h << " dim " << i;
        }
    }
}

TEST_P(AttendBlocks, VariantsMatchScalar) {
    const AttendCase c = GetParam();
    const int heads = 20, kvHeads = 2, dim = 128, group = heads / kvHeads;
    const std::int64_t length = 700;
    const Pool pool(length, c.pageSize, kvHeads, dim, 8, c.type, 41);
    const std::vector<float> q = randomVector(std::size_t(heads * dim), 42);
    const std::int64_t blocks = selectionBlocks(length, c.selectionBlock);
    std::vector<std::int32_t> chosen;
    for (std::int64_t b = 0; b < blocks; b += 2)
        chosen.push_back(std::int32_t(b));
    // The last block is always chosen (it holds the query); the loop may have taken it already.
    if (chosen.empty() || chosen.back() != blocks - 1) chosen.push_back(std::int32_t(blocks - 1));
    const int count = int(chosen.size());
    std::vector<float> want(std::size_t(heads * dim)), got(want.size());
    std::vector<float> scratch(std::size_t(heads * count * c.selectionBlock));
    for (int g = 0; g < kvHeads; ++g)
        cpu::attendBlocksScalar(q.data(), heads, pool.kv(), length, 0.09f, chosen.data(), count,
                                c.selectionBlock, want.data(), scratch.data(), g * group,
                                (g + 1) * group);
    for (CpuIsa isa : runnableIsas()) {
        std::fill(got.begin(), got.end(), 0.0f);
        for (int g = 0; g < kvHeads; ++g)
            attendBlocksFor(isa)(q.data(), heads, pool.kv(), length, 0.09f, chosen.data(), count,
                                 c.selectionBlock, got.data(), scratch.data(), g * group,
                                 (g + 1) * group);
        for (std::size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 1e-5f) << cpuIsaName(isa) << " element " << i;
    }
}

cpu::MaskedBlocksFn maskedFor(CpuIsa isa) {
#if defined(IRIS_KERNELS_X86)
    if (isa == CpuIsa::Avx2) return cpu::attendMaskedBlocksAvx2;
    if (isa == CpuIsa::Avx512) return cpu::attendMaskedBlocksAvx512;
#endif
    (void)isa;
    return cpu::attendMaskedBlocksScalar;
}

// A prefill chunk of queries at consecutive positions (ending mid-block), each with its own
// random selection that always holds its own block; the block-masked kernel of every variant
// against the scalar per-query gather.
TEST_P(AttendBlocks, MaskedPrefillMatchesPerQueryGather) {
    const AttendCase c = GetParam();
    const int heads = 12, kvHeads = 2, dim = 40, group = heads / kvHeads, n = 37;
    const std::int64_t first = 300;
    const Pool pool(first + n, c.pageSize, kvHeads, dim, 8, c.type, 51);
    const std::vector<float> q = randomVector(std::size_t(n * heads * dim), 52);
    const std::int64_t maskStride = selectionBlocks(first + n, c.selectionBlock);
    std::vector<std::uint8_t> mask(std::size_t(n * maskStride), 0);
    std::vector<std::int64_t> lengths(static_cast<std::size_t>(n));
    std::mt19937 rng(53);
    for (int i = 0; i < n; ++i) {
        lengths[std::size_t(i)] = first + i + 1;
        const std::int64_t own = (first + i) / c.selectionBlock;
        for (std::int64_t b = 0; b <= own; ++b)
            mask[std::size_t(i * maskStride + b)] = b == own || rng() % 3 == 0;
    }
    std::vector<float> want(std::size_t(n * heads * dim)), got(want.size());
    std::vector<float> scratch(
        std::size_t(n * heads * (dim + 2) + heads * maskStride * c.selectionBlock));
    for (int i = 0; i < n; ++i) {
        std::vector<std::int32_t> chosen;
        for (std::int64_t b = 0; b < maskStride; ++b)
            if (mask[std::size_t(i * maskStride + b)]) chosen.push_back(std::int32_t(b));
        for (int g = 0; g < kvHeads; ++g)
            cpu::attendBlocksScalar(
                q.data() + i * heads * dim, heads, pool.kv(), lengths[std::size_t(i)], 0.15f,
                chosen.data(), int(chosen.size()), c.selectionBlock, want.data() + i * heads * dim,
                scratch.data(), g * group, (g + 1) * group);
    }
    std::vector<CpuIsa> isas = runnableIsas();
    isas.insert(isas.begin(), CpuIsa::Scalar);
    for (CpuIsa isa : isas) {
        std::fill(got.begin(), got.end(), 0.0f);
        for (int g = 0; g < kvHeads; ++g)
            maskedFor(isa)(q.data(), heads * dim, n, lengths.data(), heads, pool.kv(), 0.15f,
                           mask.data(), maskStride, c.selectionBlock, got.data(), heads * dim,
                           scratch.data(), g * group, (g + 1) * group);
        for (std::size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 2e-5f) << cpuIsaName(isa) << " element " << i;
    }
}

// Decode and prefill kernels of every variant read a pool's blocks from the slots of an arena
// (as KV tiers keep them) with the same bits as from the pool itself.
TEST_P(AttendBlocks, BlocksReadThroughSlotsGiveTheSameBitsAsThePool) {
    const AttendCase c = GetParam();
    const int heads = 8, kvHeads = 2, dim = 64, group = heads / kvHeads, n = 21;
    const std::int64_t first = 250, length = first + n;
    const Pool pool(length, c.pageSize, kvHeads, dim, 8, c.type, 61);
    const Slotted slotted(pool, 62);
    const std::vector<float> q = randomVector(std::size_t(n * heads * dim), 63);
    const std::int64_t blocks = selectionBlocks(length, c.selectionBlock);
    std::vector<std::int32_t> chosen;
    for (std::int64_t b = 0; b + 1 < blocks; b += 3)
        chosen.push_back(std::int32_t(b));
    chosen.push_back(std::int32_t(blocks - 1));
    std::vector<std::uint8_t> mask(std::size_t(n * blocks), 0);
    std::vector<std::int64_t> lengths(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        lengths[std::size_t(i)] = first + i + 1;
        const std::int64_t own = (first + i) / c.selectionBlock;
        for (std::int64_t b = 0; b <= own; ++b)
            mask[std::size_t(i * blocks + b)] = b == own || (b + i) % 2 == 0;
    }
    std::vector<float> scratch(
        std::size_t(n * heads * (dim + 2) + heads * blocks * c.selectionBlock));
    std::vector<CpuIsa> isas = runnableIsas();
    isas.insert(isas.begin(), CpuIsa::Scalar);
    for (CpuIsa isa : isas) {
        std::vector<float> fromPool(std::size_t(n * heads * dim)), fromSlots(fromPool.size());
        for (const auto& [kv, out] : {std::pair{pool.kv(), fromPool.data()},
                                      std::pair{slotted.kv(), fromSlots.data()}}) {
            for (int g = 0; g < kvHeads; ++g) {
                attendBlocksFor(isa)(q.data(), heads, kv, length, 0.1f, chosen.data(),
                                     int(chosen.size()), c.selectionBlock, out, scratch.data(),
                                     g * group, (g + 1) * group);
            }
        }
        for (std::size_t i = 0; i < std::size_t(heads * dim); ++i)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(fromSlots[i]),
                      std::bit_cast<std::uint32_t>(fromPool[i]))
                << cpuIsaName(isa) << " decode, element " << i;
        for (const auto& [kv, out] : {std::pair{pool.kv(), fromPool.data()},
                                      std::pair{slotted.kv(), fromSlots.data()}}) {
            for (int g = 0; g < kvHeads; ++g) {
                maskedFor(isa)(q.data(), heads * dim, n, lengths.data(), heads, kv, 0.1f,
                               mask.data(), blocks, c.selectionBlock, out, heads * dim,
                               scratch.data(), g * group, (g + 1) * group);
            }
        }
        for (std::size_t i = 0; i < fromPool.size(); ++i)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(fromSlots[i]),
                      std::bit_cast<std::uint32_t>(fromPool[i]))
                << cpuIsaName(isa) << " prefill, element " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(Layouts, AttendBlocks,
                         ::testing::Values(AttendCase{16, 64, TensorType::F16},
                                           AttendCase{16, 64, TensorType::F32},
                                           AttendCase{64, 32, TensorType::F16},
                                           AttendCase{32, 32, TensorType::F32}));

}  // namespace
}  // namespace iris::kernels
