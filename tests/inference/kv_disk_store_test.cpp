// The KV disk store on its own, against a KV cache filled with known bytes: a block saved and
// read back into another pool is byte for byte the same and named there; a file whose header
// differs from the reader's in any field, or whose payload has one byte flipped, is rejected,
// removed and not used; the budget evicts least recently used first (also across a reopen);
// a failing write warns once and leaves no file; the read-or-recompute decision follows the
// rates; `iris kv du/gc`'s survey and trim.
#include "inference/kv_disk_store.h"

#include <chrono>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "tests/inference/models/scratch_dir.h"

namespace iris::inference {
namespace {

namespace fs = std::filesystem;
using kernels::TensorType;

KvBlockFormat smallFormat(bool indexer = false) {
    KvBlockFormat f;
    f.model = Sha256::hash(std::string_view("model A"));
    f.type = TensorType::F32;
    f.blockSize = 4;
    f.layers = 3;
    f.kvHeads = 2;
    f.headDim = 8;
    if (indexer) {
        f.indexerDim = 6;
        f.indexerFirstLayer = 1;
    }
    return f;
}

KvCache cacheFor(const KvBlockFormat& f, std::int64_t blocks = 8) {
    KvCacheOptions o;
    o.layers = f.layers;
    o.kvHeads = f.kvHeads;
    o.headDim = f.headDim;
    o.blockSize = f.blockSize;
    o.blocks = blocks;
    o.type = f.type;
    o.indexerDim = f.indexerDim;
    o.indexerFirstLayer = f.indexerFirstLayer;
    o.selectionBlock = f.blockSize;
    Result<KvCache> cache = KvCache::create(o);
    EXPECT_TRUE(cache) << cache.status().message();
    return std::move(*cache);
}

// The format with its payload size taken from the cache it describes.
KvBlockFormat completed(KvBlockFormat f) {
    f.payloadBytes = cacheFor(f, 1).blockPayloadBytes();
    return f;
}

std::vector<std::byte> randomBytes(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::byte> out(n);
    for (std::byte& b : out)
        b = std::byte(rng() & 0xff);
    return out;
}

Sha256Digest nameOf(int i) {
    return Sha256::hash("block " + std::to_string(i));
}

// Blocks in a cache holding known bytes, saved under nameOf(i).
struct Filled {
    KvCache cache;
    SequenceId sequence;
    std::vector<std::vector<std::byte>> payloads;
};

Filled fill(const KvBlockFormat& f, int blocks) {
    Filled out{cacheFor(f), 0, {}};
    out.sequence = out.cache.newSequence();
    EXPECT_TRUE(out.cache.extend(out.sequence, std::int64_t(blocks) * f.blockSize).isOk());
    for (int b = 0; b < blocks; ++b) {
        out.payloads.push_back(randomBytes(std::size_t(f.payloadBytes), unsigned(b + 1)));
        out.cache.copyBlockIn(out.cache.blockTable(out.sequence)[std::size_t(b)],
                              out.payloads.back());
    }
    return out;
}

class KvDiskStoreTest : public ::testing::Test {
protected:
    std::unique_ptr<KvDiskStore> open(const KvBlockFormat& format,
                                      std::int64_t budget = std::int64_t(1) << 30) {
        KvDiskStoreOptions options;
        options.folder = m_folder;
        options.budgetBytes = budget;
        options.alwaysRead = true;
        options.onWarning = [this](const std::string& m) { m_warnings.push_back(m); };
        options.writeFile = m_writer;
        Result<std::unique_ptr<KvDiskStore>> store = KvDiskStore::open(options, format, "test");
        EXPECT_TRUE(store) << store.status().message();
        return store ? std::move(*store) : nullptr;
    }

    void save(KvDiskStore& store, Filled& filled, int first, int count) {
        for (int b = first; b < first + count; ++b)
            store.save(nameOf(b), filled.cache,
                       filled.cache.blockTable(filled.sequence)[std::size_t(b)]);
    }

    // Restores nameOf(0..count-1) into a fresh cache; the payloads read back, in order.
    std::vector<std::vector<std::byte>> restore(KvDiskStore& store, int count) {
        KvCache cache = cacheFor(store.format());
        const SequenceId sequence = cache.newSequence();
        std::vector<Sha256Digest> names;
        for (int b = 0; b < count; ++b)
            names.push_back(nameOf(b));
        const std::size_t restored = store.restore(cache, sequence, names);
        EXPECT_EQ(cache.length(sequence), std::int64_t(restored) * store.format().blockSize);
        std::vector<std::vector<std::byte>> out;
        for (std::size_t b = 0; b < restored; ++b) {
            const std::int32_t block = cache.blockTable(sequence)[b];
            EXPECT_EQ(cache.findBlock(names[b]), block) << "named in the pool";
            out.emplace_back(std::size_t(store.format().payloadBytes));
            cache.copyBlockOut(block, out.back());
        }
        return out;
    }

    testing::ScratchDir m_scratch{"iris_kv_disk"};
    fs::path m_folder = m_scratch.path() / "kv";
    std::vector<std::string> m_warnings;
    std::function<Status(const fs::path&, std::span<const std::byte>)> m_writer;
};

TEST_F(KvDiskStoreTest, ABlockSavedAndReadBackIsTheSameBytesWithAndWithoutIndexerKeys) {
    for (bool indexer : {false, true}) {
        const KvBlockFormat format = completed(smallFormat(indexer));
        Filled filled = fill(format, 3);
        {
            std::unique_ptr<KvDiskStore> store = open(format);
            save(*store, filled, 0, 3);
            EXPECT_EQ(store->stats().writes, 3);
            EXPECT_EQ(store->stats().bytesWritten, 3 * (4096 + format.payloadBytes));
            save(*store, filled, 0, 1);  // stored once
            EXPECT_EQ(store->stats().writes, 3);
        }
        std::unique_ptr<KvDiskStore> reopened = open(format);  // "after a restart"
        EXPECT_EQ(reopened->stats().files, indexer ? 6 : 3);   // both formats share the folder
        EXPECT_EQ(restore(*reopened, 4), filled.payloads) << "indexer " << indexer;
        const KvDiskStats stats = reopened->stats();
        EXPECT_EQ(stats.hitBlocks, 3);
        EXPECT_EQ(stats.hitTokens, 3 * format.blockSize);
        EXPECT_EQ(stats.bytesRead, 3 * (4096 + format.payloadBytes));
        EXPECT_EQ(stats.rejected, 0);
        EXPECT_EQ(fs::file_size(reopened->pathOf(nameOf(0))),
                  std::uintmax_t(4096 + format.payloadBytes));
        // A file's time is its last use: now, give or take (not the file clock's epoch).
        const auto age = fs::file_time_type::clock::now() -
                         fs::last_write_time(reopened->pathOf(nameOf(0)));
        EXPECT_LT(std::chrono::abs(age), std::chrono::hours(1));
    }
}

// A reader whose format differs in one field finds a file (copied into its own folder, as a
// file of another engine would be if the folder key ever collided) and must reject it.
TEST_F(KvDiskStoreTest, AFileWhoseHeaderDiffersInAnyFieldIsRejectedAndRemoved) {
    const KvBlockFormat written = completed(smallFormat(true));
    std::vector<std::pair<std::string, KvBlockFormat>> readers;
    auto variant = [&](const std::string& what, auto change) {
        KvBlockFormat f = smallFormat(true);
        change(f);
        readers.emplace_back(what, completed(f));
    };
    variant("model", [](KvBlockFormat& f) { f.model[31] ^= 1; });
    variant("KV type", [](KvBlockFormat& f) { f.type = TensorType::F16; });
    variant("block size", [](KvBlockFormat& f) { f.blockSize = 8; });
    variant("layers", [](KvBlockFormat& f) { f.layers = 4; });
    variant("KV heads", [](KvBlockFormat& f) { f.kvHeads = 1; });
    variant("head size", [](KvBlockFormat& f) { f.headDim = 4; });
    variant("indexer size", [](KvBlockFormat& f) { f.indexerDim = 5; });
    variant("indexer layers", [](KvBlockFormat& f) { f.indexerFirstLayer = 2; });
    Filled filled = fill(written, 1);
    fs::path saved;
    {
        std::unique_ptr<KvDiskStore> store = open(written);
        save(*store, filled, 0, 1);
        saved = store->pathOf(nameOf(0));
    }
    for (const auto& [what, format] : readers) {
        std::unique_ptr<KvDiskStore> probe = open(format);
        const fs::path target = probe->pathOf(nameOf(0));
        ASSERT_NE(target, saved) << what << ": its own folder";
        probe.reset();
        fs::copy_file(saved, target, fs::copy_options::overwrite_existing);
        std::unique_ptr<KvDiskStore> reader = open(format);
        EXPECT_TRUE(restore(*reader, 1).empty()) << what;
        EXPECT_EQ(reader->stats().rejected, 1) << what;
        EXPECT_FALSE(fs::exists(target)) << what << ": removed";
    }
    // The same bytes under another block's name, and another format version.
    std::unique_ptr<KvDiskStore> store = open(written);
    fs::copy_file(saved, store->pathOf(nameOf(1)));
    std::vector<char> bytes(fs::file_size(saved));
    std::ifstream(saved, std::ios::binary).read(bytes.data(), std::streamsize(bytes.size()));
    bytes[8] = 2;  // version
    std::ofstream(saved, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    store = open(written);
    KvCache cache = cacheFor(written);
    const SequenceId sequence = cache.newSequence();
    EXPECT_EQ(store->restore(cache, sequence, std::vector{nameOf(1)}), 0u);
    EXPECT_EQ(store->restore(cache, sequence, std::vector{nameOf(0)}), 0u);
    EXPECT_EQ(store->stats().rejected, 2);
}

TEST_F(KvDiskStoreTest, AFlippedPayloadByteFailsTheChecksumAndStopsTheRunThere) {
    const KvBlockFormat format = completed(smallFormat());
    Filled filled = fill(format, 3);
    fs::path middle;
    {
        std::unique_ptr<KvDiskStore> store = open(format);
        save(*store, filled, 0, 3);
        middle = store->pathOf(nameOf(1));
    }
    std::fstream file(middle, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(4096 + 100);
    char byte = 0;
    file.read(&byte, 1);
    byte = char(byte ^ 0x10);
    file.seekp(4096 + 100);
    file.write(&byte, 1);
    file.close();
    std::unique_ptr<KvDiskStore> store = open(format);
    const std::vector<std::vector<std::byte>> got = restore(*store, 3);
    ASSERT_EQ(got.size(), 1u);  // block 0; block 2 follows a block that must be recomputed
    EXPECT_EQ(got[0], filled.payloads[0]);
    EXPECT_EQ(store->stats().rejected, 1);
    EXPECT_FALSE(fs::exists(middle));
}

TEST_F(KvDiskStoreTest, TheBudgetEvictsTheLeastRecentlyUsedFileAlsoAfterAReopen) {
    const KvBlockFormat format = completed(smallFormat());
    const std::int64_t file = 4096 + format.payloadBytes;
    Filled filled = fill(format, 5);
    std::unique_ptr<KvDiskStore> store = open(format, 3 * file);
    save(*store, filled, 0, 3);
    EXPECT_EQ(restore(*store, 1).size(), 1u);  // block 0 used: now the newest
    save(*store, filled, 3, 1);                // over budget: block 1 goes
    auto present = [&](int b) { return fs::exists(store->pathOf(nameOf(b))); };
    EXPECT_TRUE(present(0));
    EXPECT_FALSE(present(1));
    EXPECT_TRUE(present(2));
    EXPECT_TRUE(present(3));
    EXPECT_EQ(store->stats().evicted, 1);
    EXPECT_EQ(store->stats().bytes, 3 * file);
    store = open(format, 3 * file);  // the order comes back from the files' times
    save(*store, filled, 4, 1);      // block 2 is now the oldest
    EXPECT_FALSE(present(2));
    EXPECT_TRUE(present(0));
    EXPECT_TRUE(present(3));
    EXPECT_TRUE(present(4));
    store = open(format, 2 * file);  // a smaller budget trims at open
    EXPECT_EQ(store->stats().files, 2);
    EXPECT_FALSE(present(0));
}

TEST_F(KvDiskStoreTest, AFullDiskWarnsOnceStoresNothingAndLeavesNoFile) {
    const KvBlockFormat format = completed(smallFormat());
    Filled filled = fill(format, 3);
    // Writes half the block, then fails as write(2) does on a full disk.
    m_writer = [](const fs::path& path, std::span<const std::byte> bytes) {
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size() / 2));
        return Status::ioError(path.string() + ": No space left on device");
    };
    std::unique_ptr<KvDiskStore> store = open(format);
    save(*store, filled, 0, 3);
    ASSERT_EQ(m_warnings.size(), 1u);
    EXPECT_NE(m_warnings[0].find("No space left on device"), std::string::npos) << m_warnings[0];
    EXPECT_EQ(store->stats().writeFailures, 3);
    EXPECT_EQ(store->stats().writes, 0);
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(m_folder))
        EXPECT_TRUE(entry.is_directory() || entry.path().filename() == "model.txt") << entry.path();
    EXPECT_TRUE(restore(*store, 3).empty());
}

TEST_F(KvDiskStoreTest, ReadsBackOnlyWhenReadingIsExpectedToBeFasterThanRecomputing) {
    const KvBlockFormat format = completed(smallFormat());
    Filled filled = fill(format, 2);
    {
        std::unique_ptr<KvDiskStore> writer = open(format);
        save(*writer, filled, 0, 2);
    }
    KvDiskStoreOptions options;
    options.folder = m_folder;
    options.budgetBytes = std::int64_t(1) << 30;
    Result<std::unique_ptr<KvDiskStore>> store = KvDiskStore::open(options, format, "test");
    ASSERT_TRUE(store);
    KvCache cache = cacheFor(format);
    const SequenceId sequence = cache.newSequence();
    // No rates yet: it reads (and so measures the read rate).
    EXPECT_EQ((*store)->restore(cache, sequence, std::vector{nameOf(0)}), 1u);
    EXPECT_GT((*store)->stats().readBytesPerSecond, 0);
    // A model computing 10^15 tokens a second: no disk competes.
    (*store)->noteCompute(1'000'000'000, 1e-6);
    EXPECT_EQ((*store)->restore(cache, sequence, std::vector{nameOf(1)}), 0u);
    EXPECT_EQ((*store)->stats().skippedBlocks, 1);
    // Decode steps (fewer tokens than a block) do not count as prefill.
    (*store)->noteCompute(1, 1e9);
    EXPECT_EQ((*store)->restore(cache, sequence, std::vector{nameOf(1)}), 0u);
    // A model computing one token a day: every disk wins.
    (*store)->noteCompute(format.blockSize, 1e20);
    EXPECT_EQ((*store)->restore(cache, sequence, std::vector{nameOf(1)}), 1u);
}

TEST_F(KvDiskStoreTest, SurveyCountsEachFormatAndTrimRemovesTheOldestFirst) {
    const KvBlockFormat a = completed(smallFormat());
    const KvBlockFormat b = completed(smallFormat(true));
    Filled fa = fill(a, 3), fb = fill(b, 2);
    std::unique_ptr<KvDiskStore> sa = open(a);
    save(*sa, fa, 0, 3);
    std::unique_ptr<KvDiskStore> sb = open(b);
    save(*sb, fb, 0, 2);
    Result<std::vector<KvDiskGroup>> groups = KvDiskStore::survey(m_folder);
    ASSERT_TRUE(groups);
    ASSERT_EQ(groups->size(), 2u);
    std::int64_t blocks = 0, bytes = 0;
    for (const KvDiskGroup& g : *groups) {
        EXPECT_EQ(g.model, "test");
        EXPECT_LE(g.oldest, g.newest);
        blocks += g.blocks;
        bytes += g.bytes;
    }
    EXPECT_EQ(blocks, 5);
    EXPECT_EQ(bytes, 3 * (4096 + a.payloadBytes) + 2 * (4096 + b.payloadBytes));
    // Keep the newest 2 of b's: a's three (written first) go.
    Result<std::int64_t> removed = KvDiskStore::trim(m_folder, 2 * (4096 + b.payloadBytes));
    ASSERT_TRUE(removed);
    EXPECT_EQ(*removed, 3 * (4096 + a.payloadBytes));
    EXPECT_FALSE(fs::exists(sa->pathOf(nameOf(0))));
    EXPECT_TRUE(fs::exists(sb->pathOf(nameOf(1))));
    ASSERT_TRUE(KvDiskStore::trim(m_folder, 0));
    groups = KvDiskStore::survey(m_folder);
    ASSERT_TRUE(groups);
    EXPECT_TRUE(groups->empty());
    EXPECT_TRUE(KvDiskStore::survey(m_folder / "absent")->empty());
}

}  // namespace
}  // namespace iris::inference
