// The disk tier through the scheduler, each "restart" a new engine and scheduler on the same
// folder: the resumed request gives the same tokens as an uninterrupted one-session run
// (Session::generate, no disk, greedy and sampled), and the saved prefix is read, not
// recomputed — counted in tokens run through the model; on text, on Qwen2-VL with an image at
// M-RoPE positions, and on MiniMax-M3 with its indexer keys. Corrupted files, another model and
// another KV type are never used; a full disk is warned about once and changes nothing else.
#include <algorithm>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "inference/scheduler.h"
#include "tests/inference/models/minimax_m3_reference.h"
#include "tests/inference/models/scratch_dir.h"
#include "tests/inference/models/tiny_model.h"
#include "tests/inference/vision/tiny_m3_mmproj.h"
#include "tests/inference/vision/tiny_mmproj.h"

namespace iris::inference {
namespace {

namespace fs = std::filesystem;
using kernels::TensorType;

constexpr std::int64_t kBlock = 16;  // EngineOptions::kvBlockSize's default

GenerateRequest request(std::vector<std::int32_t> prompt, std::int64_t n, float temperature) {
    GenerateRequest r;
    r.prompt = std::move(prompt);
    r.maxTokens = n;
    r.sampling.temperature = temperature;
    r.sampling.seed = 7;
    return r;
}

std::vector<std::int32_t> byteTokens(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::int32_t> out(n);
    for (std::int32_t& t : out)
        t = std::int32_t(rng() % 256);
    return out;
}

struct Outcome {
    GenerateResult result;
    SchedulerStats stats;
    std::vector<std::string> warnings;
};

class KvDiskTier : public ::testing::Test {
protected:
    void textModel(unsigned seed = 3) {
        testing::TinyModelSpec spec;
        spec.vocab = 288;
        spec.withTokenizer = true;
        spec.endless = true;  // every generation runs to maxTokens: exact token counts
        spec.weightScale = 0.5f;
        spec.seed = seed;
        m_model =
            m_scratch.write("tiny-" + std::to_string(seed) + ".gguf", testing::makeTinyModel(spec));
        m_options.threads = 2;
        m_options.contextSize = 256;
        m_options.kvType = TensorType::F32;
    }

    // The tiny MiniMax-M3 with a tokenizer, a 1024-token context.
    testing::M3Spec m3Model() {
        testing::M3Spec spec;
        spec.vocab = 272;
        spec.seed = 11;
        m_model = m_scratch.write("m3.gguf", testing::makeM3ModelWithTokenizer(spec));
        m_options.threads = 2;
        m_options.contextSize = 1024;
        return spec;
    }

    // KV tiers of one f32 page of `spec` in the pool (each layer's selection pushes the other
    // layer's pages out, every step) and one in host memory (the rest goes to disk), pages
    // poisoned while away. The caller names the disk tier's place.
    void pageTiers(const testing::M3Spec& spec) {
        const std::int64_t page = 2 * kBlock * spec.kvHeads * spec.headDim * 4;
        m_options.kvTiers.computeBytes = page;
        m_options.kvTiers.hostBytes = page;
        m_options.kvTiers.diskBytes = 1 << 20;
        m_options.kvTiers.poisonEvicted = true;
    }

    std::unique_ptr<Engine> load() const {
        Result<std::unique_ptr<Engine>> engine = Engine::load(m_model, m_options);
        EXPECT_TRUE(engine) << engine.status().message();
        return engine ? std::move(*engine) : nullptr;
    }

    // The uninterrupted run: one session, no scheduler, no disk.
    GenerateResult reference(const GenerateRequest& r) const {
        std::unique_ptr<Engine> engine = load();
        Result<std::unique_ptr<Session>> session = engine->newSession();
        EXPECT_TRUE(session);
        Result<GenerateResult> result = (*session)->generate(r);
        EXPECT_TRUE(result) << result.status().message();
        return result ? *result : GenerateResult{};
    }

    // A process's life: load, serve `r` with the disk tier on m_folder, shut down.
    Outcome run(const GenerateRequest& r) const {
        Outcome out;
        SchedulerOptions options;
        options.kvDisk.folder = m_folder;
        options.kvDisk.budgetBytes = std::int64_t(1) << 30;
        options.kvDisk.alwaysRead = true;  // a tiny model computes faster than any disk reads
        options.kvDisk.writeFile = m_writer;
        options.kvDisk.onWarning = [&out](const std::string& m) { out.warnings.push_back(m); };
        Result<std::unique_ptr<Scheduler>> scheduler = Scheduler::start(load(), options);
        EXPECT_TRUE(scheduler) << scheduler.status().message();
        if (!scheduler) return out;
        Result<GenerateResult> result = (*scheduler)->generate(r);
        EXPECT_TRUE(result) << result.status().message();
        if (result) out.result = *result;
        out.stats = (*scheduler)->stats();
        return out;
    }

    // The block files in the order they were written (their times only rise).
    std::vector<fs::path> blockFiles() const {
        std::vector<std::pair<fs::file_time_type, fs::path>> files;
        for (const fs::directory_entry& e : fs::recursive_directory_iterator(m_folder)) {
            if (e.path().extension() == ".kv") files.emplace_back(e.last_write_time(), e.path());
        }
        std::sort(files.begin(), files.end());
        std::vector<fs::path> out;
        for (const auto& [time, path] : files)
            out.push_back(path);
        return out;
    }

    testing::ScratchDir m_scratch{"iris_kv_tier"};
    fs::path m_folder = m_scratch.path() / "kv";
    fs::path m_model;
    EngineOptions m_options;
    std::function<Status(const fs::path&, std::span<const std::byte>)> m_writer;
};

void expectSame(const GenerateResult& got, const GenerateResult& want, const std::string& what) {
    EXPECT_EQ(got.tokens, want.tokens) << what;
    EXPECT_EQ(got.text, want.text) << what;
    EXPECT_EQ(got.stop, want.stop) << what;
}

TEST_F(KvDiskTier, ARestartedEngineReadsTheSavedPrefixAndGivesTheSameTokens) {
    textModel();
    const std::int64_t prompt = 100, n = 12;
    for (float temperature : {0.0f, 0.8f}) {  // sampling: sensitive to every logit
        const std::string what = "temperature " + std::to_string(temperature);
        const GenerateRequest r = request(byteTokens(std::size_t(prompt), 5), n, temperature);
        const GenerateResult want = reference(r);
        ASSERT_EQ(want.stop, StopReason::MaxTokens);
        fs::remove_all(m_folder);
        const Outcome first = run(r);
        expectSame(first.result, want, what);
        // Blocks fully computed: the prompt and the generated tokens fed back (all but the last).
        const std::int64_t saved = (prompt + n - 1) / kBlock;
        EXPECT_EQ(first.stats.disk.writes, saved) << what;
        EXPECT_EQ(first.stats.disk.hitBlocks, 0) << what;
        EXPECT_EQ(first.stats.forwardTokens, prompt + n - 1) << what;

        const Outcome resumed = run(r);  // "after a restart"
        expectSame(resumed.result, want, what);
        const std::int64_t restored = (prompt - 1) / kBlock * kBlock;  // the last token computed
        EXPECT_EQ(resumed.result.reusedTokens, restored) << what;
        EXPECT_EQ(resumed.stats.disk.hitTokens, restored) << what;
        EXPECT_EQ(resumed.stats.disk.rejected, 0) << what;
        EXPECT_EQ(resumed.stats.forwardTokens, prompt - restored + n - 1) << what;
        EXPECT_EQ(resumed.stats.disk.writes, saved - restored / kBlock) << what;
        EXPECT_TRUE(first.warnings.empty() && resumed.warnings.empty()) << what;
    }
}

TEST_F(KvDiskTier, ACorruptedBlockIsRejectedAndRecomputedFromThere) {
    textModel();
    const std::int64_t prompt = 90, n = 6;
    const GenerateRequest r = request(byteTokens(std::size_t(prompt), 9), n, 0.0f);
    const GenerateResult want = reference(r);
    run(r);
    const std::vector<fs::path> files = blockFiles();
    ASSERT_GE(files.size(), 5u);
    {
        std::fstream third(files[2], std::ios::in | std::ios::out | std::ios::binary);
        third.seekp(4096 + 7);
        third.put('\x5a');  // the byte was a float's; any change fails the checksum
    }
    const Outcome resumed = run(r);
    expectSame(resumed.result, want, "corrupted");
    EXPECT_EQ(resumed.stats.disk.rejected, 1);
    EXPECT_EQ(resumed.stats.disk.hitBlocks, 2);
    EXPECT_EQ(resumed.stats.forwardTokens, prompt - 2 * kBlock + n - 1);
    EXPECT_TRUE(fs::exists(files[2])) << "recomputed and saved again";
    EXPECT_EQ(run(r).stats.disk.hitTokens, (prompt - 1) / kBlock * kBlock);
}

TEST_F(KvDiskTier, AnotherModelOrKvTypeNeverUsesTheSavedBlocks) {
    textModel();
    const GenerateRequest r = request(byteTokens(70, 13), 5, 0.0f);
    run(r);
    m_options.kvType = TensorType::F16;
    Outcome f16 = run(r);
    expectSame(f16.result, reference(r), "f16 KV");
    EXPECT_EQ(f16.stats.disk.hitBlocks, 0);
    EXPECT_EQ(f16.stats.disk.rejected, 0);  // its own folder: nothing even looked at
    m_options.kvType = TensorType::F32;
    textModel(4);  // same shapes, other weights: another header
    Outcome other = run(r);
    expectSame(other.result, reference(r), "other model");
    EXPECT_EQ(other.stats.disk.hitBlocks, 0);
    EXPECT_EQ(other.stats.forwardTokens, 70 + 5 - 1);
}

TEST_F(KvDiskTier, AFullDiskIsWarnedAboutOnceAndGenerationGoesOn) {
    textModel();
    m_writer = [](const fs::path& path, std::span<const std::byte>) {
        return Status::ioError(path.string() + ": No space left on device");
    };
    const GenerateRequest r = request(byteTokens(80, 17), 20, 0.0f);
    const Outcome full = run(r);
    expectSame(full.result, reference(r), "full disk");
    ASSERT_EQ(full.warnings.size(), 1u);
    EXPECT_NE(full.warnings[0].find("No space left"), std::string::npos) << full.warnings[0];
    EXPECT_EQ(full.stats.disk.writeFailures, (80 + 20 - 1) / kBlock);
    EXPECT_EQ(full.stats.disk.writes, 0);
    EXPECT_TRUE(blockFiles().empty());
}

// The image's slots are read back with the text around them: the vision tower does not run, and
// the M-RoPE positions after the image (in the block names) line up.
TEST_F(KvDiskTier, Qwen2VlWithAnImageResumesFromDiskWithoutTheVisionTower) {
    const testing::TinyModelSpec spec = testing::tinyQwen2VlSpec();
    testing::TinyMmprojOptions projector;
    projector.projection = 64;
    m_model = m_scratch.write("tiny-vl.gguf", testing::makeTinyModel(spec));
    m_options.threads = 2;
    m_options.contextSize = 512;
    m_options.mmprojPath = m_scratch.write("mmproj.gguf", testing::makeTinyMmproj(projector).bytes);
    std::unique_ptr<Engine> engine = load();
    RgbImage image{224, 168, std::vector<std::uint8_t>(std::size_t(224 * 168 * 3))};
    std::mt19937 rng(7);
    for (std::uint8_t& v : image.pixels)
        v = std::uint8_t(rng() & 0xff);
    Result<std::shared_ptr<const ImagePatches>> patches = engine->prepareImage(image);
    ASSERT_TRUE(patches) << patches.status().message();
    const Tokenizer& t = engine->tokenizer();
    GenerateRequest r = request(t.encode("<|im_start|>user\n<|vision_start|>", true), 10, 0.0f);
    r.images.push_back({r.prompt.size(), *patches});
    const std::vector<std::int32_t> rest =
        t.encode("<|vision_end|>what does this image show, in a few words?", true);
    r.prompt.insert(r.prompt.end(), rest.begin(), rest.end());
    engine.reset();
    const GenerateResult want = reference(r);
    const Outcome first = run(r);
    expectSame(first.result, want, "first");
    EXPECT_EQ(first.result.imagesEncoded, 1);
    const Outcome resumed = run(r);
    expectSame(resumed.result, want, "resumed");
    EXPECT_EQ(resumed.result.imagesEncoded, 0);
    ASSERT_GT(want.imageTokens, kBlock);
    EXPECT_GT(resumed.result.reusedTokens, want.imageTokens);
    EXPECT_EQ(resumed.stats.disk.hitTokens, resumed.result.reusedTokens);
}

TEST_F(KvDiskTier, MiniMaxM3IndexerKeysComeBackFromDisk) {
    m3Model();
    // Long enough that sparse attention selects some of many 16-token blocks.
    const std::int64_t prompt = 150, n = 8;
    const GenerateRequest r = request(byteTokens(std::size_t(prompt), 21), n, 0.0f);
    const GenerateResult want = reference(r);
    const Outcome first = run(r);
    expectSame(first.result, want, "first");
    const Outcome resumed = run(r);
    expectSame(resumed.result, want, "resumed");
    EXPECT_EQ(resumed.stats.disk.hitTokens, (prompt - 1) / kBlock * kBlock);
    EXPECT_EQ(resumed.stats.disk.rejected, 0);
}

// KV tiers (inference/kv_tiers.h) under the scheduler with the disk store: most of the sparse
// layers' K/V out of the pool (poisoned while away), blocks saved from and restored into
// pages the tiers manage; the same greedy tokens as the plain uninterrupted run.
TEST_F(KvDiskTier, MiniMaxM3WithKvTiersGivesTheSameTokens) {
    const testing::M3Spec spec = m3Model();
    const GenerateRequest r = request(byteTokens(150, 23), 12, 0.0f);
    const GenerateResult want = reference(r);
    pageTiers(spec);
    m_options.kvTiers.diskFolder = (m_scratch.path() / "spill").string();
    const Outcome first = run(r);
    expectSame(first.result, want, "first");
    EXPECT_GT(first.stats.tiers.fetched, 0);
    EXPECT_GT(first.stats.tiers.fetchedFromDisk, 0);
    EXPECT_GT(first.stats.tiers.evicted, 0);
    const Outcome resumed = run(r);
    expectSame(resumed.result, want, "resumed");
    EXPECT_GT(resumed.stats.disk.hitTokens, 0);
}

TEST_F(KvDiskTier, MiniMaxM3KvTiersOnAFullDiskWarnOnceAndGiveTheSameTokens) {
    if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
    const testing::M3Spec spec = m3Model();
    const GenerateRequest r = request(byteTokens(150, 23), 12, 0.0f);
    const GenerateResult want = reference(r);
    pageTiers(spec);
    m_options.kvTiers.diskFile = "/dev/full";  // every spill write fails with ENOSPC
    const Outcome out = run(r);
    expectSame(out.result, want, "full disk");
    EXPECT_EQ(out.stats.tiers.diskWriteFailures, 1);
    EXPECT_EQ(std::count_if(out.warnings.begin(), out.warnings.end(),
                            [](const std::string& w) {
                                return w.find("/dev/full") != std::string::npos;
                            }),
              1);
}

}  // namespace
}  // namespace iris::inference
