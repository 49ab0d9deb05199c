// The serving scheduler against the one-session engine (Session::generate on a separately loaded
// copy of the same file, one request at a time, nothing shared): the same greedy tokens for 1, 4
// and 64 concurrent requests, with and without prefix-cache hits, under a KV pool so small that
// sequences are preempted, in small prefill chunks, with images at M-RoPE positions (the tower
// run a stage per step while other sequences decode), and on MiniMax-M3 with its sparse
// attention. Then the prefix cache's naming and eviction, and the
// scheduler's refusals and cancellation.
#include "inference/scheduler.h"

#include <atomic>
#include <functional>
#include <future>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "tests/inference/device_sampling.h"
#include "tests/inference/models/minimax_m3_reference.h"
#include "tests/inference/models/scratch_dir.h"
#include "tests/inference/models/tiny_model.h"
#include "tests/inference/vision/tiny_m3_mmproj.h"
#include "tests/inference/vision/tiny_mmproj.h"

namespace iris::inference {
namespace {

namespace fs = std::filesystem;
using kernels::TensorType;

std::vector<std::int32_t> randomTokens(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::int32_t> out(n);
    for (std::int32_t& t : out)
        t = std::int32_t(rng() % 256);  // bytes: every tiny vocabulary has them
    return out;
}

GenerateRequest greedy(std::vector<std::int32_t> prompt, std::int64_t n) {
    GenerateRequest r;
    r.prompt = std::move(prompt);
    r.maxTokens = n;
    r.sampling.temperature = 0.0f;
    return r;
}

// What a model file and options load into: both the reference engine and the scheduler's.
struct ModelFiles {
    fs::path model;
    EngineOptions options;
    std::unique_ptr<VisionModel> (*tower)() = nullptr;
};

std::unique_ptr<Engine> loadEngine(const ModelFiles& setup, int sessions) {
    EngineOptions options = setup.options;
    options.maxSessions = sessions;
    Result<std::unique_ptr<Engine>> engine = Engine::load(setup.model, options);
    EXPECT_TRUE(engine) << engine.status().message();
    return engine ? std::move(*engine) : nullptr;
}

// Each request alone on a fresh session of a one-session engine.
std::vector<GenerateResult> referenceRuns(const ModelFiles& setup,
                                          const std::vector<GenerateRequest>& requests) {
    std::unique_ptr<Engine> engine = loadEngine(setup, 1);
    std::vector<GenerateResult> out;
    for (const GenerateRequest& request : requests) {
        Result<std::unique_ptr<Session>> session = engine->newSession();
        EXPECT_TRUE(session);
        Result<GenerateResult> result = (*session)->generate(request);
        EXPECT_TRUE(result) << result.status().message();
        out.push_back(result ? *result : GenerateResult{});
    }
    return out;
}

// All requests submitted at once; their results in order.
std::vector<GenerateResult> scheduled(Scheduler& scheduler,
                                      const std::vector<GenerateRequest>& requests) {
    std::vector<std::shared_ptr<GenerationHandle>> handles;
    for (const GenerateRequest& request : requests) {
        Result<std::shared_ptr<GenerationHandle>> handle = scheduler.submit(request);
        EXPECT_TRUE(handle) << handle.status().message();
        if (handle) handles.push_back(*handle);
    }
    std::vector<GenerateResult> out;
    for (const auto& handle : handles) {
        Result<GenerateResult> result = handle->result();
        EXPECT_TRUE(result) << result.status().message();
        out.push_back(result ? *result : GenerateResult{});
    }
    return out;
}

void expectSameTokens(const std::vector<GenerateResult>& got,
                      const std::vector<GenerateResult>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].tokens, want[i].tokens) << "request " << i;
        EXPECT_EQ(got[i].text, want[i].text) << "request " << i;
        EXPECT_EQ(got[i].stop, want[i].stop) << "request " << i;
        EXPECT_EQ(got[i].promptTokens, want[i].promptTokens) << "request " << i;
    }
}

std::unique_ptr<Scheduler> startScheduler(const ModelFiles& setup, int sessions,
                                          SchedulerOptions options = {}) {
    std::unique_ptr<Engine> engine = loadEngine(setup, sessions);
    if (!engine) return nullptr;
    Result<std::unique_ptr<Scheduler>> scheduler = Scheduler::start(std::move(engine), options);
    EXPECT_TRUE(scheduler) << scheduler.status().message();
    return scheduler ? std::move(*scheduler) : nullptr;
}

class SchedulerTest : public ::testing::TestWithParam<TensorType> {
protected:
    ModelFiles textModel() {
        testing::TinyModelSpec spec;
        spec.vocab = 288;
        spec.withTokenizer = true;
        spec.weightScale = 0.5f;
        spec.seed = 3;
        spec.weightType = GetParam();
        ModelFiles setup;
        setup.model = m_scratch.write("tiny.gguf", testing::makeTinyModel(spec));
        setup.options.threads = 2;
        setup.options.contextSize = 256;
        return setup;
    }

    // n requests sharing a `shared`-token prefix, each with its own tail.
    static std::vector<GenerateRequest> requests(std::size_t n, std::size_t shared,
                                                 std::size_t tail, std::int64_t generate) {
        const std::vector<std::int32_t> prefix = randomTokens(shared, 99);
        std::vector<GenerateRequest> out;
        for (std::size_t i = 0; i < n; ++i) {
            std::vector<std::int32_t> prompt = prefix;
            const std::vector<std::int32_t> own = randomTokens(tail + i % 7, unsigned(i + 1));
            prompt.insert(prompt.end(), own.begin(), own.end());
            out.push_back(greedy(std::move(prompt), generate));
        }
        return out;
    }

    testing::ScratchDir m_scratch{"iris_scheduler"};
};

TEST_P(SchedulerTest, SameGreedyTokensAsTheOneSessionEngineFor1_4And64ConcurrentRequests) {
    const ModelFiles setup = textModel();
    const std::vector<GenerateRequest> all = requests(64, 0, 12, 12);
    const std::vector<GenerateResult> want = referenceRuns(setup, all);
    for (std::size_t n : {std::size_t(1), std::size_t(4), std::size_t(64)}) {
        SchedulerOptions options;
        options.prefixCache = false;
        std::unique_ptr<Scheduler> scheduler = startScheduler(setup, int(n), options);
        ASSERT_TRUE(scheduler);
        const std::vector<GenerateRequest> some(all.begin(), all.begin() + std::ptrdiff_t(n));
        expectSameTokens(
            scheduled(*scheduler, some),
            std::vector<GenerateResult>(want.begin(), want.begin() + std::ptrdiff_t(n)));
        EXPECT_EQ(scheduler->stats().prefixHitTokens, 0);
    }
}

TEST_P(SchedulerTest, PrefixCacheHitsAcrossRequestsAndTurnsGiveTheSameTokens) {
    const ModelFiles setup = textModel();
    // 48 shared tokens: three full blocks of 16 that every request after the first finds.
    std::vector<GenerateRequest> first = requests(8, 48, 9, 10);
    std::unique_ptr<Scheduler> scheduler = startScheduler(setup, 8);
    ASSERT_TRUE(scheduler);
    const std::vector<GenerateResult> firstGot = scheduled(*scheduler, first);
    expectSameTokens(firstGot, referenceRuns(setup, first));
    // Submitted together: one computes the shared blocks, the others wait for them.
    EXPECT_EQ(scheduler->stats().prefixHitTokens, 7 * 48);
    // The next turn: each conversation so far plus a new message.
    std::vector<GenerateRequest> second;
    for (std::size_t i = 0; i < first.size(); ++i) {
        GenerateRequest next = first[i];
        next.prompt.insert(next.prompt.end(), firstGot[i].tokens.begin(), firstGot[i].tokens.end());
        const std::vector<std::int32_t> message = randomTokens(5, unsigned(100 + i));
        next.prompt.insert(next.prompt.end(), message.begin(), message.end());
        second.push_back(std::move(next));
    }
    const SchedulerStats before = scheduler->stats();
    const std::vector<GenerateResult> secondGot = scheduled(*scheduler, second);
    expectSameTokens(secondGot, referenceRuns(setup, second));
    const SchedulerStats after = scheduler->stats();
    EXPECT_EQ(after.prefixLookups - before.prefixLookups, 8);
    for (std::size_t i = 0; i < second.size(); ++i) {
        // Every full block of the previous turn (prompt and generated tokens written) is found.
        const std::int64_t previous =
            std::int64_t(first[i].prompt.size() + firstGot[i].tokens.size());
        EXPECT_GE(secondGot[i].reusedTokens, previous / 16 * 16 - 16) << "request " << i;
    }
    EXPECT_GT(after.prefixHitTokens - before.prefixHitTokens, 8 * 48);
}

TEST_P(SchedulerTest, PreemptionUnderATinyKvPoolGivesTheSameTokens) {
    ModelFiles setup = textModel();
    setup.options.contextSize = 96;  // 2 sessions: a pool of 2 x (6 + 1) blocks of 16
    const std::vector<GenerateRequest> all = requests(8, 16, 20, 40);
    SchedulerOptions options;
    options.maxRunning = 8;
    std::unique_ptr<Scheduler> scheduler = startScheduler(setup, 2, options);
    ASSERT_TRUE(scheduler);
    expectSameTokens(scheduled(*scheduler, all), referenceRuns(setup, all));
    const SchedulerStats stats = scheduler->stats();
    EXPECT_GT(stats.preemptions, 0);
    EXPECT_EQ(stats.finished, 8);
    EXPECT_EQ(stats.kvBlocksUsed, 0);  // everything released; named blocks stay cached
}

TEST_P(SchedulerTest, SmallPrefillChunksGiveTheSameTokens) {
    const ModelFiles setup = textModel();
    const std::vector<GenerateRequest> all = requests(4, 40, 30, 8);
    SchedulerOptions options;
    options.stepTokens = 5;
    options.prefixCache = false;
    std::unique_ptr<Scheduler> scheduler = startScheduler(setup, 4, options);
    ASSERT_TRUE(scheduler);
    expectSameTokens(scheduled(*scheduler, all), referenceRuns(setup, all));
    EXPECT_GT(scheduler->stats().steps, (40 + 30) * 4 / 5);
}

TEST_P(SchedulerTest, StreamsTheResultTextAndStopsAtStopStrings) {
    const ModelFiles setup = textModel();
    std::vector<GenerateRequest> all = requests(3, 0, 10, 24);
    const std::vector<GenerateResult> plain = referenceRuns(setup, all);
    // A stop string made of the middle of the first answer's text.
    ASSERT_GE(plain[0].text.size(), 6u);
    all[0].stopStrings = {plain[0].text.substr(plain[0].text.size() / 2, 2)};
    const std::vector<GenerateResult> want = referenceRuns(setup, all);
    ASSERT_EQ(want[0].stop, StopReason::StopString);
    std::unique_ptr<Scheduler> scheduler = startScheduler(setup, 3);
    ASSERT_TRUE(scheduler);
    std::vector<GenerateResult> got;
    for (const GenerateRequest& request : all) {
        std::string streamed;
        GenerateRequest r = request;
        r.onToken = [&](std::int32_t, std::string_view text) {
            streamed += text;
            return true;
        };
        Result<GenerateResult> result = scheduler->generate(r);
        ASSERT_TRUE(result) << result.status().message();
        // What streamed is a prefix of the text; never past a stop string.
        EXPECT_EQ(result->text.substr(0, streamed.size()), streamed);
        got.push_back(*result);
    }
    expectSameTokens(got, want);
}

// Sampling's first half on the model's device gives the tokens sampling from all logits gives:
// greedy and seeded chains with top-k, top-p, min-p and penalties, 8 requests at once; one
// request whose chain needs every logit (top-k off) sends those steps down the logits path.
TEST_P(SchedulerTest, SamplingOnTheDeviceDrawsTheSameTokensAsFromAllLogits) {
    const ModelFiles setup = textModel();
    std::vector<GenerateRequest> all = requests(8, 6, 10, 16);
    for (std::size_t i = 0; i < all.size(); ++i) {
        SamplingParams& p = all[i].sampling;
        p = {.temperature = i == 0 ? 0.0f : 0.6f + 0.1f * float(i),
             .topK = i == 7 ? 0 : 40,
             .topP = 0.9f,
             .minP = 0.02f,
             .seed = std::uint64_t(i)};
        if (i % 2 == 1) {
            p.repetitionPenalty = 1.3f;
            p.frequencyPenalty = 0.2f;
        }
    }
    std::unique_ptr<Scheduler> plain = startScheduler(setup, 8);
    ASSERT_TRUE(plain);
    const std::vector<GenerateResult> want = scheduled(*plain, all);
    std::unique_ptr<Engine> engine = loadEngine(setup, 8);
    ASSERT_TRUE(engine);
    std::atomic<int> calls = 0;
    engine->wrapModel([&calls](std::unique_ptr<Model> model) {
        return std::make_unique<testing::SimulatedDeviceModel>(std::move(model), calls);
    });
    Result<std::unique_ptr<Scheduler>> device = Scheduler::start(std::move(engine));
    ASSERT_TRUE(device) << device.status().message();
    expectSameTokens(scheduled(**device, all), want);
    EXPECT_GT(calls.load(), 0);
    // Without the request that needs every logit, every step takes the candidates' path.
    all.pop_back();
    calls = 0;
    const std::vector<GenerateResult> seven = scheduled(**device, all);
    expectSameTokens(seven, std::vector<GenerateResult>(want.begin(), want.end() - 1));
    std::size_t longest = 0;
    for (const GenerateResult& r : seven)
        longest = std::max(longest, r.tokens.size());
    EXPECT_GT(longest, 0u);
    EXPECT_GE(std::size_t(calls.load()), longest);  // a step per token of the longest, at least
}

// The one-session engine (Session::generate) on a model sampling on its device draws what it
// draws from all logits, for the same seeded chains.
TEST_P(SchedulerTest, SessionsSampleOnTheDeviceToo) {
    const ModelFiles setup = textModel();
    std::vector<GenerateRequest> all = requests(4, 6, 10, 16);
    for (std::size_t i = 0; i < all.size(); ++i) {
        all[i].sampling = {.temperature = i == 0 ? 0.0f : 0.9f,
                           .topK = 20,
                           .topP = 0.9f,
                           .minP = 0.02f,
                           .repetitionPenalty = 1.2f,
                           .seed = std::uint64_t(i)};
    }
    const std::vector<GenerateResult> want = referenceRuns(setup, all);
    std::unique_ptr<Engine> engine = loadEngine(setup, 1);
    ASSERT_TRUE(engine);
    std::atomic<int> calls = 0;
    engine->wrapModel([&calls](std::unique_ptr<Model> model) {
        return std::make_unique<testing::SimulatedDeviceModel>(std::move(model), calls);
    });
    std::vector<GenerateResult> got;
    std::size_t tokens = 0;
    for (const GenerateRequest& request : all) {
        Result<std::unique_ptr<Session>> session = engine->newSession();
        ASSERT_TRUE(session);
        Result<GenerateResult> result = (*session)->generate(request);
        ASSERT_TRUE(result) << result.status().message();
        tokens += result->tokens.size();
        got.push_back(*result);
    }
    expectSameTokens(got, want);
    EXPECT_GT(tokens, 0u);
    EXPECT_GE(std::size_t(calls.load()), tokens);  // the prompt's and each fed token's step
}

INSTANTIATE_TEST_SUITE_P(Weights, SchedulerTest,
                         ::testing::Values(TensorType::F32, TensorType::Q8_0),
                         [](const auto& param) {
                             return std::string(kernels::tensorTypeInfo(param.param).name);
                         });

// ---- images and MiniMax-M3 ----------------------------------------------------------------------

RgbImage randomImage(int width, int height, unsigned seed) {
    RgbImage image{width, height, std::vector<std::uint8_t>(std::size_t(width * height * 3))};
    std::mt19937 rng(seed);
    for (std::uint8_t& v : image.pixels)
        v = std::uint8_t(rng() & 0xff);
    return image;
}

// text, image, text, for requests that share the image and the text before it.
std::vector<GenerateRequest> imageRequests(const Engine& engine, const std::string& begin,
                                           const std::string& end, std::size_t n) {
    const Tokenizer& t = engine.tokenizer();
    Result<std::shared_ptr<const ImagePatches>> image =
        engine.prepareImage(randomImage(224, 168, 7));
    EXPECT_TRUE(image) << image.status().message();
    std::vector<GenerateRequest> out;
    for (std::size_t i = 0; i < n; ++i) {
        GenerateRequest r = greedy(t.encode("<|im_start|>user\n" + begin, true), 10);
        r.images.push_back({r.prompt.size(), *image});
        const std::vector<std::int32_t> rest =
            t.encode(end + "question " + std::to_string(i) + "?", true);
        r.prompt.insert(r.prompt.end(), rest.begin(), rest.end());
        out.push_back(std::move(r));
    }
    return out;
}

// The first request alone (it fills the prefix cache), then the others together.
std::vector<GenerateResult> firstThenTheRest(Scheduler& scheduler,
                                             const std::vector<GenerateRequest>& requests) {
    std::vector<GenerateResult> got = scheduled(scheduler, {requests.front()});
    for (GenerateResult& r :
         scheduled(scheduler, std::vector<GenerateRequest>(requests.begin() + 1, requests.end())))
        got.push_back(std::move(r));
    return got;
}

TEST(SchedulerImages, MropePositionsAfterImagesStayExactThroughThePrefixCache) {
    testing::ScratchDir scratch("iris_scheduler_vl");
    const testing::TinyModelSpec spec = testing::tinyQwen2VlSpec();
    testing::TinyMmprojOptions projector;
    projector.projection = 64;
    ModelFiles setup;
    setup.model = scratch.write("tiny-vl.gguf", testing::makeTinyModel(spec));
    setup.options.threads = 2;
    setup.options.contextSize = 512;
    setup.options.mmprojPath =
        scratch.write("mmproj.gguf", testing::makeTinyMmproj(projector).bytes);
    std::unique_ptr<Scheduler> scheduler = startScheduler(setup, 4);
    ASSERT_TRUE(scheduler);
    const std::vector<GenerateRequest> all =
        imageRequests(scheduler->engine(), "<|vision_start|>",
                      "<|vision_end|>an image with some text after it: ", 4);
    const std::vector<GenerateResult> want = referenceRuns(setup, all);
    const std::vector<GenerateResult> got = firstThenTheRest(*scheduler, all);
    expectSameTokens(got, want);
    ASSERT_GT(want[0].imageTokens, 16);
    for (std::size_t i = 1; i < got.size(); ++i)  // the image's blocks came from the cache
        EXPECT_GT(got[i].reusedTokens, want[0].imageTokens) << "request " << i;
    EXPECT_EQ(got[0].imagesEncoded, 1);
}

// A tower that runs another, calling `beforeStage` (on the scheduler thread) before each stage.
class ProbedTower final : public VisionModel {
public:
    ProbedTower(std::unique_ptr<VisionModel> inner, std::function<void()> beforeStage)
        : m_inner(std::move(inner)), m_beforeStage(std::move(beforeStage)) {}
    const VisionConfig& config() const override { return m_inner->config(); }
    Result<std::unique_ptr<VisionEncoding>> beginEncode(const ImagePatches& image) const override {
        Result<std::unique_ptr<VisionEncoding>> begun = m_inner->beginEncode(image);
        if (!begun) return begun.status();
        std::shared_ptr<VisionEncoding> inner = std::move(*begun);
        return std::make_unique<VisionEncoding>(
            inner->stages(),
            [this, inner](int, ThreadPool& pool) {
                m_beforeStage();
                inner->advance(pool);
            },
            [inner] { return inner->takeEmbeddings(); });
    }

private:
    std::unique_ptr<VisionModel> m_inner;
    std::function<void()> m_beforeStage;
};

// An image request B, then a text request A; B's first tower stage waits until A is submitted,
// so A is admitted by the second stage at the latest. A step runs between every two stages, and
// A decodes in each: the tokens generated, read before each stage, grow from stage to stage.
// Both answers are still the one-session engine's.
TEST(SchedulerImages, TheTowerRunsAStageAtATimeWhileOtherSequencesDecode) {
    testing::ScratchDir scratch("iris_scheduler_stages");
    const testing::TinyModelSpec spec = testing::tinyQwen2VlSpec();
    testing::TinyMmprojOptions projector;
    projector.projection = 64;
    ModelFiles setup;
    setup.model = scratch.write("tiny-vl.gguf", testing::makeTinyModel(spec));
    setup.options.threads = 2;
    setup.options.contextSize = 512;
    setup.options.visionPrecision = VisionPrecision::F32;  // the probed tower's, below
    setup.options.mmprojPath =
        scratch.write("mmproj.gguf", testing::makeTinyMmproj(projector).bytes);
    Result<GgufFile> projectorFile = GgufFile::open(setup.options.mmprojPath);
    ASSERT_TRUE(projectorFile) << projectorFile.status().message();
    Result<std::unique_ptr<VisionModel>> tower = VisionModel::load(*projectorFile);
    ASSERT_TRUE(tower) << tower.status().message();

    std::atomic<Scheduler*> running{nullptr};
    std::vector<std::int64_t> generatedBeforeStage;
    std::promise<void> textSubmitted;
    std::shared_future<void> textSubmittedFuture = textSubmitted.get_future().share();
    auto probed = std::make_unique<ProbedTower>(std::move(*tower), [&] {
        if (generatedBeforeStage.empty()) textSubmittedFuture.wait();
        generatedBeforeStage.push_back(running.load()->stats().generatedTokens);
    });
    EngineOptions options = setup.options;
    options.maxSessions = 2;
    Result<std::unique_ptr<Engine>> engine = Engine::load(setup.model, options, std::move(probed));
    ASSERT_TRUE(engine) << engine.status().message();
    Result<std::unique_ptr<Scheduler>> scheduler = Scheduler::start(std::move(*engine));
    ASSERT_TRUE(scheduler) << scheduler.status().message();
    running = scheduler->get();

    const GenerateRequest image = imageRequests((*scheduler)->engine(), "<|vision_start|>",
                                                "<|vision_end|>what is in it?", 1)[0];
    const GenerateRequest text = greedy(randomTokens(20, 4), 40);
    const std::vector<GenerateResult> want = referenceRuns(setup, {image, text});
    Result<std::shared_ptr<GenerationHandle>> imageHandle = (*scheduler)->submit(image);
    ASSERT_TRUE(imageHandle) << imageHandle.status().message();
    Result<std::shared_ptr<GenerationHandle>> textHandle = (*scheduler)->submit(text);
    ASSERT_TRUE(textHandle) << textHandle.status().message();
    textSubmitted.set_value();
    const Result<GenerateResult> imageResult = (*imageHandle)->result();
    const Result<GenerateResult> textResult = (*textHandle)->result();
    ASSERT_TRUE(imageResult && textResult);
    expectSameTokens({*imageResult, *textResult}, want);
    ASSERT_EQ(want[1].tokens.size(), 40u) << "the text request must outlast the encode";

    // The patch embedding, 4 blocks, the projector. A reads its prompt in the step after stage 1
    // at the latest, and decodes a token in each step after that.
    ASSERT_EQ(generatedBeforeStage.size(), std::size_t(projector.blocks + 2));
    for (std::size_t stage = 2; stage < generatedBeforeStage.size(); ++stage)
        EXPECT_GT(generatedBeforeStage[stage], generatedBeforeStage[stage - 1]) << stage;
    EXPECT_EQ(imageResult->imagesEncoded, 1);
}

// Six requests with their own images in a KV pool for two: sequences are preempted, some while
// their image is still in the tower; readmitted, they find the encode under way or cached. The
// tokens are still the one-session engine's, and each image is encoded once.
TEST(SchedulerImages, PreemptedImageRequestsGiveTheSameTokens) {
    testing::ScratchDir scratch("iris_scheduler_vl_preempt");
    const testing::TinyModelSpec spec = testing::tinyQwen2VlSpec();
    testing::TinyMmprojOptions projector;
    projector.projection = 64;
    ModelFiles setup;
    setup.model = scratch.write("tiny-vl.gguf", testing::makeTinyModel(spec));
    setup.options.threads = 2;
    setup.options.contextSize = 112;  // 2 sessions: a pool of 2 x (7 + 1) blocks of 16
    setup.options.mmprojPath =
        scratch.write("mmproj.gguf", testing::makeTinyMmproj(projector).bytes);
    SchedulerOptions options;
    options.maxRunning = 6;
    std::unique_ptr<Scheduler> scheduler = startScheduler(setup, 2, options);
    ASSERT_TRUE(scheduler);
    const Engine& engine = scheduler->engine();
    std::vector<GenerateRequest> all;
    for (unsigned i = 0; i < 6; ++i) {
        Result<std::shared_ptr<const ImagePatches>> image =
            engine.prepareImage(randomImage(224, 168, 20 + i));
        ASSERT_TRUE(image) << image.status().message();
        GenerateRequest r = greedy(engine.tokenizer().encode("<|vision_start|>", true), 36);
        r.images.push_back({r.prompt.size(), *image});
        const std::vector<std::int32_t> rest =
            engine.tokenizer().encode("<|vision_end|>describe it " + std::to_string(i), true);
        r.prompt.insert(r.prompt.end(), rest.begin(), rest.end());
        all.push_back(std::move(r));
    }
    const std::vector<GenerateResult> got = scheduled(*scheduler, all);
    expectSameTokens(got, referenceRuns(setup, all));
    EXPECT_GT(scheduler->stats().preemptions, 0);
    int encoded = 0;
    for (const GenerateResult& result : got)
        encoded += result.imagesEncoded;
    EXPECT_EQ(encoded, 6);
}

TEST(SchedulerMiniMaxM3, SparseAttentionIndexerKeysComeAlongWithCachedBlocks) {
    testing::ScratchDir scratch("iris_scheduler_m3");
    testing::M3Spec spec;
    spec.vocab = 272;
    spec.seed = 11;
    ModelFiles setup;
    setup.model = scratch.write("m3.gguf", testing::makeM3ModelWithTokenizer(spec));
    setup.options.threads = 2;
    setup.options.contextSize = 1024;
    setup.options.mmprojPath = scratch.write("m3-mmproj.gguf", testing::makeTinyM3Mmproj({}).bytes);
    std::unique_ptr<Scheduler> scheduler = startScheduler(setup, 4);
    ASSERT_TRUE(scheduler);
    // Long enough that MSA selects 2 of many 16-token blocks (top-k 2, one local block).
    std::string text;
    for (int i = 0; i < 6; ++i)
        text += "block " + std::to_string(i) + " of a long shared preamble. ";
    const VisionConfig& vision = scheduler->engine().vision()->config();
    const std::vector<GenerateRequest> all =
        imageRequests(scheduler->engine(), text + vision.imageBegin, vision.imageEnd, 4);
    const std::vector<GenerateResult> want = referenceRuns(setup, all);
    const std::vector<GenerateResult> got = firstThenTheRest(*scheduler, all);
    expectSameTokens(got, want);
    ASSERT_GT(want[0].promptTokens, 5 * 16);
    for (std::size_t i = 1; i < got.size(); ++i)
        EXPECT_GT(got[i].reusedTokens, std::int64_t(text.size()) / 2) << "request " << i;
}

// ---- refusals, cancellation ---------------------------------------------------------------------

class SchedulerLimits : public ::testing::Test {
protected:
    void SetUp() override {
        testing::TinyModelSpec spec;
        spec.vocab = 288;
        spec.withTokenizer = true;
        m_setup.model = m_scratch.write("tiny.gguf", testing::makeTinyModel(spec));
        m_setup.options.threads = 2;
        m_setup.options.contextSize = 64;
    }
    testing::ScratchDir m_scratch{"iris_scheduler_limits"};
    ModelFiles m_setup;
};

TEST_F(SchedulerLimits, RefusesWhatCanNeverRunWithBothNumbers) {
    std::unique_ptr<Scheduler> scheduler = startScheduler(m_setup, 2);
    ASSERT_TRUE(scheduler);
    Result<std::shared_ptr<GenerationHandle>> tooLong =
        scheduler->submit(greedy(randomTokens(65, 1), 4));
    ASSERT_FALSE(tooLong);
    EXPECT_EQ(tooLong.status().code(), StatusCode::OutOfRange);
    EXPECT_NE(tooLong.status().message().find("65"), std::string::npos);
    EXPECT_NE(tooLong.status().message().find("64"), std::string::npos);
    Result<std::shared_ptr<GenerationHandle>> badToken = scheduler->submit(greedy({1, 2, 288}, 4));
    ASSERT_FALSE(badToken);
    EXPECT_EQ(badToken.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(badToken.status().message().find("288"), std::string::npos);
}

TEST_F(SchedulerLimits, AFullQueueSaysUnavailableAndCancellationEndsRequestsAtTheNextStep) {
    SchedulerOptions options;
    options.maxRunning = 1;
    options.maxWaiting = 2;
    std::unique_ptr<Scheduler> scheduler = startScheduler(m_setup, 1, options);
    ASSERT_TRUE(scheduler);
    std::vector<std::shared_ptr<GenerationHandle>> handles;
    Status refused;
    for (int i = 0; i < 8 && refused.isOk(); ++i) {
        GenerateRequest r = greedy(randomTokens(8, unsigned(i)), 1000);  // runs to the context
        Result<std::shared_ptr<GenerationHandle>> h = scheduler->submit(r);
        if (h)
            handles.push_back(*h);
        else
            refused = h.status();
    }
    EXPECT_EQ(refused.code(), StatusCode::Unavailable) << refused.message();
    // Cancelled from this thread while the scheduler thread runs or queues them.
    for (const auto& handle : handles)
        handle->cancel();
    for (const auto& handle : handles) {
        Result<GenerateResult> result = handle->result();
        ASSERT_TRUE(result) << result.status().message();
        EXPECT_TRUE(result->stop == StopReason::Cancelled ||
                    result->stop == StopReason::ContextFull ||
                    result->stop == StopReason::EndOfGeneration);
    }
    const SchedulerStats stats = scheduler->stats();
    EXPECT_EQ(stats.running + stats.waiting, 0);
}

// The limit holds at every moment, also while the scheduler thread is inside a step: a request it
// has taken from the submit queue into its waiting line still counts. (Once, for the length of a
// step, it counted in neither, and a request over the limit got in: the server's 429 test saw a
// 200 about one run in fifty.)
TEST_F(SchedulerLimits, TheWaitingLimitHoldsWhileTheSchedulerSteps) {
    testing::TinyModelSpec spec;
    spec.vocab = 288;
    spec.withTokenizer = true;
    spec.endless = true;  // the running request never ends by itself
    m_setup.model = m_scratch.write("endless.gguf", testing::makeTinyModel(spec));
    m_setup.options.contextSize = 1 << 14;
    SchedulerOptions options;
    options.maxRunning = 1;
    options.maxWaiting = 1;
    std::unique_ptr<Scheduler> scheduler = startScheduler(m_setup, 1, options);
    ASSERT_TRUE(scheduler);
    const std::int64_t endless = m_setup.options.contextSize - 16;
    Result<std::shared_ptr<GenerationHandle>> running =
        scheduler->submit(greedy(randomTokens(8, 1), endless));
    ASSERT_TRUE(running);
    while (scheduler->stats().running == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // Each round queues one request behind the running one and then tries to queue more while
    // the scheduler steps; the window was one step long, so it takes rounds to hit it surely.
    int accepted = 0;
    for (int round = 0; round < 20; ++round) {
        Result<std::shared_ptr<GenerationHandle>> waiting =
            scheduler->submit(greedy(randomTokens(8, 2), 4));
        ASSERT_TRUE(waiting) << waiting.status().message();
        std::vector<std::shared_ptr<GenerationHandle>> extra;
        for (int attempt = 0; attempt < 100; ++attempt) {
            Result<std::shared_ptr<GenerationHandle>> more =
                scheduler->submit(greedy(randomTokens(8, 3), 4));
            if (more) {
                ++accepted;
                extra.push_back(*more);
            } else {
                EXPECT_EQ(more.status().code(), StatusCode::Unavailable);
            }
            std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
        // Cancelled, they leave the line at the next step (result() waits for that).
        (*waiting)->cancel();
        for (const auto& handle : extra)
            handle->cancel();
        ASSERT_TRUE((*waiting)->result());
        for (const auto& handle : extra)
            ASSERT_TRUE(handle->result());
    }
    EXPECT_EQ(accepted, 0) << "submitted over maxWaiting while the first request still ran";
    (*running)->cancel();
    ASSERT_TRUE((*running)->result());
    EXPECT_EQ((*running)->result()->stop, StopReason::Cancelled);
}

TEST_F(SchedulerLimits, ShutdownEndsWhatRunsAndRefusesNewRequests) {
    std::unique_ptr<Scheduler> scheduler = startScheduler(m_setup, 1);
    ASSERT_TRUE(scheduler);
    Result<std::shared_ptr<GenerationHandle>> running =
        scheduler->submit(greedy(randomTokens(8, 3), 1000));
    ASSERT_TRUE(running);
    scheduler->shutdown();
    ASSERT_TRUE((*running)->result());
    Result<std::shared_ptr<GenerationHandle>> late =
        scheduler->submit(greedy(randomTokens(8, 4), 4));
    ASSERT_FALSE(late);
    EXPECT_EQ(late.status().code(), StatusCode::Unavailable);
}

// ---- the prefix cache's blocks ------------------------------------------------------------------

KvCache smallCache(std::int64_t blocks) {
    KvCacheOptions o;
    o.layers = 1;
    o.kvHeads = 1;
    o.headDim = 4;
    o.blockSize = 4;
    o.blocks = blocks;
    o.type = TensorType::F32;
    Result<KvCache> cache = KvCache::create(o);
    EXPECT_TRUE(cache);
    return std::move(*cache);
}

Sha256Digest nameOf(int i) {
    return Sha256::hash("block " + std::to_string(i));
}

// The step-cut rule on the two workloads its comment names, in prompt tokens' worth of time.
TEST(SchedulerSteps, AStepEndsAtAPromptEndOnlyWhereThatLowersTheFirstTokenTimes) {
    // Four agents started on one 1500-token system prompt (stepTokens 512): the first one's last
    // 281 tokens end its prompt with 231 of the step left; three prompts of about 300 tokens each
    // are behind it and nothing decodes yet. Its first token comes 231 tokens sooner; each of the
    // three waits for one more step of 1 decode token and the overhead.
    EXPECT_TRUE(endStepAtPromptEnd(231, 3, 1, 16));
    // Ten 50-token prompts behind 64 decoding sequences: one more step costs each of the nine
    // behind 64 + 1 decode tokens and the overhead, more than the 398 tokens the first one saves.
    EXPECT_FALSE(endStepAtPromptEnd(398, 9, 65, 16));
    // Nothing behind: the rest of the budget would be unused either way.
    EXPECT_FALSE(endStepAtPromptEnd(0, 0, 1, 16));
    // At the balance the step goes on (fewer steps for the same sum), and past it, it ends.
    EXPECT_FALSE(endStepAtPromptEnd(2 * (3 + 16), 2, 3, 16));
    EXPECT_TRUE(endStepAtPromptEnd(2 * (3 + 16) + 1, 2, 3, 16));
    // An overhead of 0 turns the rule off.
    EXPECT_FALSE(endStepAtPromptEnd(500, 1, 0, 0));
}

TEST(PrefixCache, NamedBlocksOutliveTheirSequenceAndAreEvictedLeastRecentlyReleasedFirst) {
    KvCache cache = smallCache(4);
    const SequenceId a = cache.newSequence(), b = cache.newSequence();
    ASSERT_TRUE(cache.extend(a, 4).isOk());
    ASSERT_TRUE(cache.extend(b, 4).isOk());
    cache.nameBlock(a, 0, nameOf(0));
    cache.nameBlock(b, 0, nameOf(1));
    const std::int32_t blockA = cache.blockTable(a)[0], blockB = cache.blockTable(b)[0];
    cache.release(a);  // released first: evicted first
    cache.release(b);
    EXPECT_EQ(cache.cachedBlocks(), 2);
    EXPECT_EQ(cache.freeBlocks(), 4);
    EXPECT_EQ(cache.findBlock(nameOf(0)), blockA);
    // A new sequence takes b's block by name: it is no longer idle.
    const SequenceId c = cache.newSequence();
    cache.appendCached(c, blockB);
    EXPECT_EQ(cache.length(c), 4);
    EXPECT_EQ(cache.cachedBlocks(), 1);
    // Three blocks wanted, two free: a's cached block is evicted, b's (held by c) is not.
    const SequenceId d = cache.newSequence();
    ASSERT_TRUE(cache.extend(d, 12).isOk());
    EXPECT_EQ(cache.evictions(), 1);
    EXPECT_EQ(cache.findBlock(nameOf(0)), -1);
    EXPECT_EQ(cache.findBlock(nameOf(1)), blockB);
    EXPECT_FALSE(cache.extend(d, 16).isOk());  // the pool is full
}

TEST(PrefixCache, AFirstNameStaysAndAWrittenBlockLosesItsName) {
    KvCache cache = smallCache(4);
    const SequenceId a = cache.newSequence(), b = cache.newSequence();
    ASSERT_TRUE(cache.extend(a, 4).isOk());
    ASSERT_TRUE(cache.extend(b, 4).isOk());
    cache.nameBlock(a, 0, nameOf(0));
    cache.nameBlock(b, 0, nameOf(0));  // the same content computed twice: the first keeps it
    EXPECT_EQ(cache.findBlock(nameOf(0)), cache.blockTable(a)[0]);
    cache.truncate(a, 2);  // a session going back into the block and writing other tokens
    ASSERT_TRUE(cache.extend(a, 4).isOk());
    EXPECT_EQ(cache.findBlock(nameOf(0)), -1);
}

TEST(PrefixCache, BlockNamesCoverTheParentTheTokensTheImagesAndThePositions) {
    std::vector<SlotItem> items = {{1, -1, {}}, {2, -1, {}}};
    std::vector<TokenPosition> positions = {textPosition(0), textPosition(1)};
    const Sha256Digest base = blockName({}, items, positions);
    EXPECT_EQ(base, blockName({}, items, positions));
    EXPECT_NE(base, blockName(nameOf(0), items, positions));
    std::vector<SlotItem> other = items;
    other[1].token = 3;
    EXPECT_NE(base, blockName({}, other, positions));
    std::vector<TokenPosition> shifted = {textPosition(0), {1, 2, 1, 0}};
    EXPECT_NE(base, blockName({}, items, shifted));
    std::vector<SlotItem> imageA = {{-1, 0, nameOf(1)}, {-1, 1, nameOf(1)}};
    std::vector<SlotItem> imageB = {{-1, 0, nameOf(2)}, {-1, 1, nameOf(2)}};
    EXPECT_NE(blockName({}, imageA, positions), blockName({}, imageB, positions));
}

}  // namespace
}  // namespace iris::inference
