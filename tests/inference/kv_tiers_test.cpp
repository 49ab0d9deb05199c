// KV tiers on a bare KV cache: units spill to host memory and then to disk under their budgets,
// come back with the bytes they left with, leave least recently required first, keep their
// copies until written, and a disk that fails while spilling is reported once while everything
// stays in memory; pages required ahead (requireAsync) come in on the transfer thread while the
// caller works, whole once awaited. Each page's K/V is a known pattern, so every byte brought
// back is checked.
#include "inference/kv_tiers.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

#include <gtest/gtest.h>

#include "tests/inference/models/scratch_dir.h"

namespace iris::inference {
namespace {

constexpr int kLayers = 3, kFirstPaged = 1, kHeads = 2, kHeadDim = 8, kPage = 16;
constexpr std::int64_t kPages = 12;
// One unit: K and V of one page of one layer, f32.
constexpr std::int64_t kUnit = 2 * kPage * kHeads * kHeadDim * 4;

float pattern(int layer, std::int64_t position, int element, bool value) {
    return float(layer * 1000003 + position * 131 + element * 7 + (value ? 3 : 0)) * 0.25f;
}

class KvTiersTest : public ::testing::Test {
protected:
    void SetUp() override {
        KvCacheOptions o;
        o.layers = kLayers;
        o.kvHeads = kHeads;
        o.headDim = kHeadDim;
        o.blockSize = kPage;
        o.blocks = kPages;
        o.type = kernels::TensorType::F32;
        o.indexerDim = 4;
        o.indexerFirstLayer = kFirstPaged;
        o.selectionBlock = kPage;
        Result<KvCache> cache = KvCache::create(o);
        ASSERT_TRUE(cache) << cache.status().message();
        m_cache.emplace(std::move(*cache));
    }

    void attach(KvTierOptions options) {
        options.poisonEvicted = true;
        Result<std::unique_ptr<KvTiers>> tiers = KvTiers::attach(*m_cache, options);
        ASSERT_TRUE(tiers) << tiers.status().message();
        m_tiers = std::move(*tiers);
    }

    // A sequence of `pages` full pages, every K/V element written with pattern().
    void fill(std::int64_t pages) {
        m_sequence = m_cache->newSequence();
        ASSERT_TRUE(m_cache->extend(m_sequence, pages * kPage).isOk());
        m_tiers->beginForward();
        for (std::int64_t p = 0; p < pages * kPage; ++p) {
            for (int l = 0; l < kLayers; ++l) {
                auto* k = static_cast<float*>(m_cache->keySlot(l, m_sequence, p));
                auto* v = static_cast<float*>(m_cache->valueSlot(l, m_sequence, p));
                for (int e = 0; e < kHeads * kHeadDim; ++e) {
                    k[e] = pattern(l, p, e, false);
                    v[e] = pattern(l, p, e, true);
                }
            }
        }
    }

    std::int32_t block(std::int64_t page) const {
        return m_cache->blockTable(m_sequence)[std::size_t(page)];
    }

    // One forward pass that reads `pages` of `layer`.
    void read(int layer, std::vector<std::int64_t> pages) {
        m_tiers->beginForward();
        require(layer, std::move(pages));
    }
    // Within the current pass.
    void require(int layer, std::vector<std::int64_t> pages) {
        std::vector<std::int32_t> blocks;
        for (std::int64_t p : pages)
            blocks.push_back(block(p));
        const Status status = m_tiers->require(layer, blocks);
        ASSERT_TRUE(status.isOk()) << status.message();
    }

    // The bytes of a resident page are the pattern it was written with.
    void expectIntact(int layer, std::int64_t page) {
        if (layer >= kFirstPaged) {
            ASSERT_TRUE(m_tiers->resident(layer, block(page)));
        }
        const KvCacheOptions& o = m_cache->options();
        const std::int32_t* slotOf = m_cache->slotTable(layer);
        const std::int64_t stored = slotOf != nullptr ? slotOf[block(page)] : block(page);
        const std::int64_t row = stored * kPage * kHeads * kHeadDim;
        const auto* k = static_cast<const float*>(m_cache->keys(layer)) + row;
        const auto* v = static_cast<const float*>(m_cache->values(layer)) + row;
        for (int r = 0; r < o.blockSize; ++r) {
            for (int e = 0; e < kHeads * kHeadDim; ++e) {
                const std::int64_t i = std::int64_t(r) * kHeads * kHeadDim + e;
                ASSERT_EQ(k[i], pattern(layer, page * kPage + r, e, false)) << "layer " << layer;
                ASSERT_EQ(v[i], pattern(layer, page * kPage + r, e, true)) << "layer " << layer;
            }
        }
    }

    std::optional<KvCache> m_cache;
    std::unique_ptr<KvTiers> m_tiers;
    SequenceId m_sequence = -1;
};

TEST_F(KvTiersTest, RefusesACacheWithoutSparseLayersAndADiskWithoutAPlace) {
    KvCacheOptions o = m_cache->options();
    o.indexerDim = 0;
    Result<KvCache> dense = KvCache::create(o);
    ASSERT_TRUE(dense);
    EXPECT_EQ(KvTiers::attach(*dense, {}).status().code(), StatusCode::InvalidArgument);
    KvTierOptions noPlace;
    noPlace.diskBytes = 1 << 20;
    EXPECT_EQ(KvTiers::attach(*m_cache, noPlace).status().code(), StatusCode::InvalidArgument);
}

// The paged layers live in the slots of an arena: a unit that comes in takes the lowest free
// slot once others made room, so after every unit has moved once the arena's memory is the
// budget (plus the slot every absent block reads, NaN), however much moved through it.
TEST_F(KvTiersTest, UnitsComeIntoTheLowestFreeSlotsAndTheArenaShrinksToTheBudget) {
    attach({.computeBytes = 4 * kUnit, .hostBytes = 64 * kUnit});
    fill(kPages);  // every unit written: 24 slots in use
    EXPECT_EQ(m_tiers->stats().computeTierBytes, (1 + 2 * kPages) * kUnit);
    for (int sweep = 0; sweep < 2; ++sweep) {
        for (int layer = kFirstPaged; layer < kLayers; ++layer) {
            for (std::int64_t p = 0; p < kPages; p += 2) {
                read(layer, {p, p + 1});
                expectIntact(layer, p);
                expectIntact(layer, p + 1);
            }
        }
    }
    EXPECT_EQ(m_tiers->stats().computeTierBytes, (1 + 4) * kUnit);
    for (int layer = kFirstPaged; layer < kLayers; ++layer) {
        const std::int32_t* slotOf = m_cache->slotTable(layer);
        ASSERT_NE(slotOf, nullptr);
        for (std::int64_t p = 0; p < kPages; ++p) {
            const std::int32_t slot = slotOf[block(p)];
            if (m_tiers->resident(layer, block(p))) {
                EXPECT_TRUE(slot >= 1 && slot <= 4) << "layer " << layer << " page " << p;
            } else {
                EXPECT_EQ(slot, kAbsentSlot) << "layer " << layer << " page " << p;
            }
        }
    }
    EXPECT_EQ(m_cache->slotTable(0), nullptr);  // the dense layer stays in the pool
}

TEST_F(KvTiersTest, SpillsLeastRecentlyRequiredFirstAndFetchesTheSameBytes) {
    // Room for 4 units of the 2 paged layers x 6 pages; the dense layer 0 is never paged.
    attach({.computeBytes = 4 * kUnit, .hostBytes = 64 * kUnit});
    fill(6);
    read(1, {0, 1, 2, 3});  // every other unit leaves; pages 0-3 of layer 1 stay, oldest first
    for (std::int64_t p = 0; p < 6; ++p) {
        EXPECT_EQ(m_tiers->resident(1, block(p)), p < 4) << p;
        EXPECT_FALSE(m_tiers->resident(2, block(p))) << p;
    }
    KvTierStats s = m_tiers->stats();
    EXPECT_EQ(s.residentBytes, 4 * kUnit);
    EXPECT_EQ(s.spilled, 8);
    EXPECT_EQ(s.bytesOut, 8 * kUnit);
    // Pages 2 and 3 read again: 0 and 1 are now the least recent and leave for 4 and 5.
    read(1, {2, 3});
    read(1, {4, 5});  // pages 0 and 1 leave, copied out for the first time
    EXPECT_FALSE(m_tiers->resident(1, block(0)));
    EXPECT_FALSE(m_tiers->resident(1, block(1)));
    for (std::int64_t p = 2; p < 6; ++p)
        expectIntact(1, p);
    read(2, {0, 5});  // layer 1's pages 2 and 3 leave, copied out for the first time
    expectIntact(2, 0);
    expectIntact(2, 5);
    EXPECT_EQ(m_tiers->stats().spilled, 12);
    read(1, {0, 1});  // pages 4 and 5 leave again: they kept their host copies
    expectIntact(1, 0);
    expectIntact(1, 1);
    s = m_tiers->stats();
    EXPECT_EQ(s.spilled, 12);
    EXPECT_EQ(s.fetched, 6);
    EXPECT_EQ(s.bytesIn, 6 * kUnit);
    EXPECT_EQ(s.evicted, 14);
    EXPECT_LE(s.residentBytes, 4 * kUnit);
    // The dense layer was never touched.
    for (std::int64_t p = 0; p < 6; ++p)
        expectIntact(0, p);
}

TEST_F(KvTiersTest, WithinAForwardPassOnlyTheLayerAtWorkStaysPastTheBudget) {
    attach({.computeBytes = 2 * kUnit, .hostBytes = 64 * kUnit});
    fill(4);
    m_tiers->beginForward();
    require(1, {0, 1, 2});  // more than the budget: the layer's attention needs all three
    EXPECT_EQ(m_tiers->stats().residentBytes, 3 * kUnit);
    EXPECT_EQ(m_tiers->stats().overBudget, 1);
    require(2, {3});  // layer 1 is done: its pages make room, oldest first
    EXPECT_EQ(m_tiers->stats().residentBytes, 2 * kUnit);
    EXPECT_FALSE(m_tiers->resident(1, block(0)));
    EXPECT_FALSE(m_tiers->resident(1, block(1)));
    expectIntact(1, 2);
    expectIntact(2, 3);
}

TEST_F(KvTiersTest, AUnitThatLeftIsPoisonedAndAWrittenUnitIsCopiedOutAgain) {
    attach({.computeBytes = 2 * kUnit, .hostBytes = 64 * kUnit});
    fill(2);
    read(1, {0, 1});
    const auto* k = static_cast<const float*>(m_cache->keys(2)) +
                    std::int64_t(block(0)) * kPage * kHeads * kHeadDim;
    EXPECT_TRUE(std::isnan(k[0]));  // not resident: never read as data
    const std::int64_t spilled = m_tiers->stats().spilled;
    // The sequence is cut into page 1 and written again there: its copies are void.
    m_cache->truncate(m_sequence, kPage + 3);
    ASSERT_TRUE(m_cache->extend(m_sequence, 2 * kPage).isOk());
    EXPECT_TRUE(m_tiers->resident(1, block(1)));
    EXPECT_TRUE(m_tiers->resident(2, block(1)));
    read(2, {0});
    read(2, {0});  // layer 1's page 1 leaves: written since it came back, so copied out again
    EXPECT_GT(m_tiers->stats().spilled, spilled);
    read(1, {1});
    expectIntact(1, 1);
}

TEST_F(KvTiersTest, HostTierOverflowsToDiskWithinBothBudgets) {
    testing::ScratchDir dir("iris-kv-tiers");
    attach({.computeBytes = 2 * kUnit,
            .hostBytes = 3 * kUnit,
            .diskBytes = 64 * kUnit,
            .diskFolder = dir.path().string()});
    fill(8);
    for (std::int64_t round = 0; round < 2; ++round) {
        for (int l = 1; l < kLayers; ++l) {
            for (std::int64_t p = 0; p < 8; ++p) {
                read(l, {p});
                expectIntact(l, p);
                const KvTierStats s = m_tiers->stats();
                EXPECT_LE(s.residentBytes, 2 * kUnit);
                EXPECT_LE(s.hostBytes, 3 * kUnit);
                EXPECT_LE(s.diskBytes, 64 * 4096);
            }
        }
    }
    const KvTierStats s = m_tiers->stats();
    EXPECT_GT(s.diskBytesWritten, 0);
    EXPECT_GT(s.fetchedFromDisk, 0);
    EXPECT_EQ(s.diskBytesRead, s.fetchedFromDisk * kUnit);
    EXPECT_EQ(s.diskWriteFailures, 0);
    EXPECT_TRUE(m_tiers->diskWarning().empty());
    // The spill file was unlinked when made: nothing is left in the folder.
    EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST_F(KvTiersTest, AFullDiskIsReportedOnceAndTheSessionGoesOnInMemory) {
    if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
    attach({.computeBytes = 2 * kUnit,
            .hostBytes = 2 * kUnit,
            .diskBytes = 64 * kUnit,
            .diskFile = "/dev/full"});
    fill(6);
    for (int l = 1; l < kLayers; ++l) {
        for (std::int64_t p = 0; p < 6; ++p) {
            read(l, {p});
            expectIntact(l, p);
        }
    }
    const KvTierStats s = m_tiers->stats();
    EXPECT_EQ(s.diskWriteFailures, 1);  // tried once, then the disk tier takes nothing more
    EXPECT_NE(m_tiers->diskWarning().find("/dev/full"), std::string::npos)
        << m_tiers->diskWarning();
    EXPECT_EQ(s.diskBytes, 0);
    EXPECT_GT(s.hostBytes, 2 * kUnit);  // past its budget rather than losing KV
}

TEST_F(KvTiersTest, ADiskBudgetUsedUpKeepsTheRestInMemory) {
    testing::ScratchDir dir("iris-kv-tiers");
    attach({.computeBytes = 1 * kUnit,
            .hostBytes = 1 * kUnit,
            .diskBytes = 2 * 4096,  // two slots
            .diskFolder = dir.path().string()});
    fill(4);
    read(1, {0});
    for (int l = 1; l < kLayers; ++l) {
        for (std::int64_t p = 0; p < 4; ++p) {
            read(l, {p});
            expectIntact(l, p);
        }
    }
    const KvTierStats s = m_tiers->stats();
    EXPECT_LE(s.diskBytes, 2 * 4096);
    EXPECT_EQ(s.diskWriteFailures, 0);
    EXPECT_TRUE(m_tiers->diskWarning().empty());
}

TEST_F(KvTiersTest, FreedBlocksGiveTheirTierSpaceBack) {
    attach({.computeBytes = 2 * kUnit, .hostBytes = 64 * kUnit});
    fill(5);
    read(1, {0});
    EXPECT_GT(m_tiers->stats().hostBytes, 0);
    m_cache->release(m_sequence);
    const KvTierStats s = m_tiers->stats();
    EXPECT_EQ(s.hostBytes, 0);
    EXPECT_EQ(s.residentBytes, 0);
}

// Blocks of `pages` of the current sequence.
std::vector<std::int32_t> blocksOf(const KvCache& cache, SequenceId sequence,
                                   std::initializer_list<std::int64_t> pages) {
    std::vector<std::int32_t> blocks;
    for (std::int64_t p : pages)
        blocks.push_back(cache.blockTable(sequence)[std::size_t(p)]);
    return blocks;
}

TEST_F(KvTiersTest, PagesRequiredAheadComeInWhileTheCallerWorksAndAreWholeOnceAwaited) {
    using namespace std::chrono_literals;
    attach({.computeBytes = 4 * kUnit, .hostBytes = 64 * kUnit, .copyDelay = 100ms});
    fill(8);
    read(1, {0, 1, 2, 3});  // pages 4-7 of layer 1 leave
    m_tiers->beginForward();
    const auto start = std::chrono::steady_clock::now();
    const std::vector<std::int32_t> blocks = blocksOf(*m_cache, m_sequence, {4, 5, 6, 7});
    ASSERT_TRUE(m_tiers->requireAsync(1, blocks).isOk());
    // Four copies of 100 ms each, none of them done by the caller.
    EXPECT_LT(std::chrono::steady_clock::now() - start, 400ms);
    std::this_thread::sleep_for(1s);  // the caller's work; the transfer thread copies meanwhile
    const Status arrived = m_tiers->awaitRequired();
    ASSERT_TRUE(arrived.isOk()) << arrived.message();
    for (std::int64_t p = 4; p < 8; ++p)
        expectIntact(1, p);
    const KvTierStats s = m_tiers->stats();
    EXPECT_EQ(s.fetched, 4);
    EXPECT_GE(s.fetchedBehind, 1);
    EXPECT_LE(s.fetchedBehind, 4);
    EXPECT_LE(s.residentBytes, 4 * kUnit);  // trimmed once awaited: pages 0-3 left
}

TEST_F(KvTiersTest, WavesOfOneLayerAllStayUntilTheLayerIsAwaited) {
    attach({.computeBytes = 2 * kUnit, .hostBytes = 64 * kUnit});
    fill(6);
    read(2, {0});  // every unit of layer 1 leaves
    m_tiers->beginForward();
    ASSERT_TRUE(m_tiers->requireAsync(1, blocksOf(*m_cache, m_sequence, {0, 1})).isOk());
    ASSERT_TRUE(m_tiers->requireAsync(1, blocksOf(*m_cache, m_sequence, {2, 3})).isOk());
    ASSERT_TRUE(m_tiers->requireAsync(1, blocksOf(*m_cache, m_sequence, {4, 5})).isOk());
    ASSERT_TRUE(m_tiers->awaitRequired().isOk());
    for (std::int64_t p = 0; p < 6; ++p)  // the layer's attention reads them all at once
        expectIntact(1, p);
    EXPECT_EQ(m_tiers->stats().overBudget, 1);
    read(2, {1});  // the next pass: layer 1 makes room
    EXPECT_LE(m_tiers->stats().residentBytes, 2 * kUnit);
    expectIntact(2, 1);
}

TEST_F(KvTiersTest, AReadThatFailsInFlightIsReportedWhenAwaited) {
    testing::ScratchDir dir("iris-kv-tiers");
    const std::string file = (dir.path() / "spill").string();
    attach({.computeBytes = 1 * kUnit,
            .hostBytes = 1 * kUnit,
            .diskBytes = 64 * kUnit,
            .diskFile = file});
    fill(4);
    read(2, {0});  // the other units go to host memory and from there to disk
    ASSERT_GT(m_tiers->stats().diskBytes, 0);
    std::filesystem::resize_file(file, 0);  // what was on disk is gone
    m_tiers->beginForward();
    // Page 0 stays (so nothing is written to disk, which would grow the file again).
    const Status planned = m_tiers->requireAsync(2, blocksOf(*m_cache, m_sequence, {0, 1, 2}));
    const Status arrived = planned.isOk() ? m_tiers->awaitRequired() : planned;
    ASSERT_FALSE(arrived.isOk());
    EXPECT_EQ(arrived.code(), StatusCode::IoError);
    EXPECT_NE(arrived.message().find(file), std::string::npos) << arrived.message();
    EXPECT_NE(arrived.message().find("short read"), std::string::npos) << arrived.message();
}

}  // namespace
}  // namespace iris::inference
