// `iris kv du` and `iris kv gc` on a folder holding blocks of two KV formats, written by the
// store itself (inference/kv_disk_store.h): what du counts, and what gc leaves.
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app/cli/engine_commands.h"
#include "base/temporary_folder.h"
#include "inference/kv_disk_store.h"

namespace iris::app {
namespace {

namespace fs = std::filesystem;

// Runs `iris kv WORDS...`; the exit code, and what it printed in `out`.
int kv(std::vector<std::string> words, std::string& out) {
    words.insert(words.begin(), "iris");
    std::vector<char*> argv;
    for (std::string& word : words)
        argv.push_back(word.data());
    argv.push_back(nullptr);
    std::ostringstream captured;
    std::streambuf* saved = std::cout.rdbuf(captured.rdbuf());
    const int code = runKv(int(words.size()), argv.data());
    std::cout.rdbuf(saved);
    out = captured.str();
    return code;
}

// `blocks` blocks of one layer of 2 x 4 f32 values per token, 4 tokens a block.
void saveBlocks(const fs::path& folder, int headDim, int blocks) {
    inference::KvCacheOptions o;
    o.layers = 1;
    o.kvHeads = 2;
    o.headDim = headDim;
    o.blockSize = 4;
    o.blocks = blocks;
    o.type = kernels::TensorType::F32;
    Result<inference::KvCache> cache = inference::KvCache::create(o);
    ASSERT_TRUE(cache);
    const inference::SequenceId sequence = cache->newSequence();
    ASSERT_TRUE(cache->extend(sequence, std::int64_t(blocks) * o.blockSize).isOk());
    inference::KvDiskStoreOptions options;
    options.folder = folder;
    options.budgetBytes = std::int64_t(1) << 30;
    Result<std::unique_ptr<inference::KvDiskStore>> store = inference::KvDiskStore::open(
        options, inference::KvBlockFormat::of(*cache, Sha256::hash(std::string_view("m"))),
        "m.gguf");
    ASSERT_TRUE(store) << store.status().message();
    for (int b = 0; b < blocks; ++b)
        (*store)->save(Sha256::hash(std::to_string(b)), *cache,
                       cache->blockTable(sequence)[std::size_t(b)]);
}

TEST(KvCommand, DuCountsEachFormatAndGcTrimsOrClears) {
    Result<TemporaryFolder> scratch = TemporaryFolder::create("iris_kv_command");
    ASSERT_TRUE(scratch);
    const std::string folder = (scratch->path() / "kv").string();
    saveBlocks(folder, 4, 3);  // 4096 + 4 * 2 * 2 * 4 * 4 = 4352 bytes each
    saveBlocks(folder, 8, 2);  // 4096 + 512 = 4608 bytes each
    std::string out;
    ASSERT_EQ(kv({"du", "--dir", folder}, out), 0);
    EXPECT_NE(out.find("m.gguf\n  3 blocks, "), std::string::npos) << out;
    EXPECT_NE(out.find("m.gguf\n  2 blocks, "), std::string::npos) << out;
    EXPECT_NE(out.find(": 5 blocks, "), std::string::npos) << out;
    EXPECT_NE(out.find("in 2 formats"), std::string::npos) << out;

    // Keep 0.0000084 GiB (9019 bytes): the two newest blocks (the second format's, 9216 bytes) do
    // not fit, one does.
    ASSERT_EQ(kv({"gc", "--dir", folder, "--max-gb", "0.0000084"}, out), 0);
    EXPECT_NE(out.find("removed "), std::string::npos) << out;
    ASSERT_EQ(kv({"du", "--dir", folder}, out), 0);
    EXPECT_NE(out.find(": 1 blocks, "), std::string::npos) << out;

    ASSERT_EQ(kv({"gc", "--dir", folder, "--all"}, out), 0);
    ASSERT_EQ(kv({"du", "--dir", folder}, out), 0);
    EXPECT_NE(out.find(": 0 blocks, "), std::string::npos) << out;
    EXPECT_EQ(kv({"gc", "--dir", folder}, out), 2) << "neither --max-gb nor --all";
    EXPECT_EQ(kv({"gc", "--dir", folder, "--all", "--max-gb", "1"}, out), 2);
    EXPECT_EQ(kv({"gc", "--dir", folder, "--max-gb", "-1"}, out), 2);
}

}  // namespace
}  // namespace iris::app
