// The engine's image path with a stand-in vision tower (a deterministic function of the
// patches): image tokens take the tower's embeddings and M-RoPE positions, greedy generation
// matches the float64 reference decoder fed the same embeddings and positions, prefix reuse
// compares images by hash, each distinct image is encoded once (bounded LRU cache), and the
// errors for missing or mismatched projectors.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

#include <gtest/gtest.h>

#include "inference/engine.h"
#include "inference/gguf/gguf_writer.h"
#include "tests/inference/models/scratch_dir.h"
#include "tests/inference/models/tiny_model.h"
#include "tests/inference/vision/tiny_mmproj.h"

namespace iris::inference {
namespace {

namespace fs = std::filesystem;

// Embedding d of merged token k: a smooth function of the mean of its four patches' values, so
// that different images give different embeddings.
class FakeTower final : public VisionModel {
public:
    explicit FakeTower(std::int64_t width, int* encodes) : m_encodes(encodes) {
        m_config.projectionDim = width;
        m_config.projectorName = "fake";
    }
    const VisionConfig& config() const override { return m_config; }
    Result<std::unique_ptr<VisionEncoding>> beginEncode(
        const ImagePatches& image) const override {
        if (image.patchSize != m_config.patchSize || image.gridH % 2 || image.gridW % 2)
            return Status::invalidArgument("image does not fit the fake tower");
        auto embeddings = std::make_shared<std::vector<float>>();
        return std::make_unique<VisionEncoding>(
            1, [this, &image, embeddings](int, ThreadPool&) { fill(image, *embeddings); },
            [embeddings] { return std::move(*embeddings); });
    }

private:
    void fill(const ImagePatches& image, std::vector<float>& embeddings) const {
        ++*m_encodes;
        const std::int64_t D = m_config.projectionDim, rowValues = image.patchValues();
        embeddings.assign(std::size_t(image.tokenCount() * D), 0.0f);
        for (std::int64_t k = 0; k < image.tokenCount(); ++k) {
            double mean = 0;
            for (std::int64_t i = 0; i < 4 * rowValues; ++i)
                mean += double(image.values[std::size_t(4 * k * rowValues + i)]);
            mean /= double(4 * rowValues);
            for (std::int64_t d = 0; d < D; ++d)
                embeddings[std::size_t(k * D + d)] =
                    float(0.8 * std::sin(7.0 * mean * double(d + 1) + 0.3 * double(k + d)));
        }
    }

    VisionConfig m_config;
    int* m_encodes;
};

RgbImage randomImage(int width, int height, unsigned seed) {
    RgbImage image{width, height, std::vector<std::uint8_t>(std::size_t(width * height * 3))};
    std::mt19937 rng(seed);
    for (std::uint8_t& v : image.pixels)
        v = std::uint8_t(rng() & 0xff);
    return image;
}

class EngineImageTest : public ::testing::Test {
protected:
    fs::path write(const std::string& name, const std::vector<std::byte>& bytes) {
        return m_scratch.write(name, bytes);
    }

    static testing::TinyModelSpec spec() {
        testing::TinyModelSpec s;
        s.arch = "qwen2vl";
        s.vocab = 288;
        s.withTokenizer = true;
        s.withVisionTokens = true;
        s.weightScale = 0.5f;
        s.seed = 5;
        return s;
    }

    std::unique_ptr<Engine> load(EngineOptions options = {}, std::int64_t towerWidth = 64) {
        options.threads = 2;
        options.kvType = kernels::TensorType::F32;
        m_model = write("tiny-vl.gguf", testing::makeTinyModel(spec()));
        Result<std::unique_ptr<Engine>> engine =
            Engine::load(m_model, options, std::make_unique<FakeTower>(towerWidth, &m_encodes));
        EXPECT_TRUE(engine) << engine.status().message();
        return engine ? std::move(*engine) : nullptr;
    }

    std::shared_ptr<const ImagePatches> image(const Engine& engine, int w, int h, unsigned seed) {
        Result<std::shared_ptr<const ImagePatches>> p =
            engine.prepareImage(randomImage(w, h, seed));
        EXPECT_TRUE(p) << p.status().message();
        return p ? *p : nullptr;
    }

    static GenerateRequest greedy(std::int64_t n) {
        GenerateRequest r;
        r.maxTokens = n;
        r.sampling.temperature = 0.0f;
        return r;
    }

    testing::ScratchDir m_scratch{"iris_engine_image"};
    fs::path m_model;
    int m_encodes = 0;
};

// "<|im_start|>user\n" <vision_start> IMAGE(a) <vision_end> "hi" <vision_start> IMAGE(b)
// <vision_end> "?" "<|im_end|>..." as a request.
GenerateRequest twoImagePrompt(const Engine& engine, std::shared_ptr<const ImagePatches> a,
                               std::shared_ptr<const ImagePatches> b, std::int64_t n) {
    const Tokenizer& t = engine.tokenizer();
    GenerateRequest r;
    r.maxTokens = n;
    r.sampling.temperature = 0.0f;
    auto add = [&](const std::string& text) {
        const std::vector<std::int32_t> ids = t.encode(text, true);
        r.prompt.insert(r.prompt.end(), ids.begin(), ids.end());
    };
    add("<|im_start|>user\n<|vision_start|>");
    r.images.push_back({r.prompt.size(), std::move(a)});
    add("<|vision_end|>hi<|vision_start|>");
    r.images.push_back({r.prompt.size(), std::move(b)});
    add("<|vision_end|>?<|im_end|>\n<|im_start|>assistant\n");
    return r;
}

TEST_F(EngineImageTest, PositionsOfMixedTextAndImagesFollowTheMropeRule) {
    const auto engine = load();
    ASSERT_TRUE(engine);
    // 150x95 -> 140x84: 6x10 patches, 3x5 merged tokens; 61x200 is taller than wide, so the
    // other image's rows outnumber its columns. The rule below reads each grid from the patches.
    const auto a = image(*engine, 150, 95, 1), b = image(*engine, 61, 200, 2);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->gridH / 2, 3);
    ASSERT_EQ(a->gridW / 2, 5);
    const GenerateRequest request = twoImagePrompt(*engine, a, b, 1);
    auto session = std::move(*engine->newSession());
    Result<GenerateResult> result = session->generate(request);
    ASSERT_TRUE(result) << result.status().message();

    // Expected positions, written out from qwen25vl.md §3.2.
    std::vector<TokenPosition> expected;
    std::vector<std::int32_t> slots;  // expected cachedTokens: -1 for image tokens
    std::int32_t s = 0;
    std::size_t nextImage = 0;
    for (std::size_t i = 0; i <= request.prompt.size(); ++i) {
        while (nextImage < request.images.size() && request.images[nextImage].offset == i) {
            const ImagePatches& im = *request.images[nextImage++].image;
            const std::int32_t gh = im.gridH / 2, gw = im.gridW / 2;
            for (std::int32_t r = 0; r < gh; ++r) {
                for (std::int32_t c = 0; c < gw; ++c) {
                    expected.push_back({s, s + r, s + c, 0});
                    slots.push_back(-1);
                }
            }
            s += std::max(gh, gw);
        }
        if (i == request.prompt.size()) break;
        expected.push_back({s, s, s, 0});
        slots.push_back(request.prompt[i]);
        ++s;
    }
    EXPECT_EQ(result->promptTokens, std::int64_t(expected.size()));
    EXPECT_EQ(result->imageTokens, a->tokenCount() + b->tokenCount());
    // The prompt's slots (the one generated token was sampled, not run).
    ASSERT_EQ(session->cachedPositions().size(), expected.size());
    EXPECT_EQ(session->cachedPositions(), expected);
    EXPECT_EQ(session->cachedTokens(), slots);
    EXPECT_EQ(session->nextPosition(), s);
    EXPECT_LT(s, std::int32_t(expected.size()));  // positions and slots have parted
}

TEST_F(EngineImageTest, GreedyGenerationWithImagesMatchesTheReferenceDecoder) {
    const auto engine = load();
    ASSERT_TRUE(engine);
    const auto a = image(*engine, 150, 95, 3), b = image(*engine, 100, 60, 4);
    ASSERT_TRUE(a && b);
    const GenerateRequest request = twoImagePrompt(*engine, a, b, 8);
    auto session = std::move(*engine->newSession());
    Result<GenerateResult> result = session->generate(request);
    ASSERT_TRUE(result) << result.status().message();
    EXPECT_EQ(result->imagesEncoded, 2);
    ASSERT_FALSE(result->tokens.empty());

    // The reference gets the same sequence: token ids (0 for image tokens), the fake tower's
    // embeddings for image tokens, and positions by the rule; then continues greedily.
    std::vector<float> ea, eb;
    ThreadPool pool(1);
    ASSERT_TRUE(engine->vision()->encode(*a, pool, ea).isOk());
    ASSERT_TRUE(engine->vision()->encode(*b, pool, eb).isOk());
    std::vector<std::int32_t> tokens;
    std::vector<const float*> embeddings;
    std::vector<std::array<std::int32_t, 4>> positions;
    std::int32_t s = 0;
    std::size_t nextImage = 0;
    for (std::size_t i = 0; i <= request.prompt.size(); ++i) {
        while (nextImage < request.images.size() && request.images[nextImage].offset == i) {
            const ImagePatches& im = *request.images[nextImage].image;
            const std::vector<float>& e = nextImage++ == 0 ? ea : eb;
            const std::int32_t gh = im.gridH / 2, gw = im.gridW / 2;
            for (std::int32_t k = 0; k < gh * gw; ++k) {
                tokens.push_back(0);
                embeddings.push_back(e.data() + k * 64);
                positions.push_back({s, s + k / gw, s + k % gw, 0});
            }
            s += std::max(gh, gw);
        }
        if (i == request.prompt.size()) break;
        tokens.push_back(request.prompt[i]);
        embeddings.push_back(nullptr);
        positions.push_back({s, s, s, 0});
        ++s;
    }
    const std::int64_t V = engine->model().config().vocabSize;
    for (std::size_t i = 0; i <= result->tokens.size(); ++i) {
        const std::vector<double> logits =
            testing::referenceLogits(engine->file(), tokens, positions, embeddings);
        const auto last = logits.end() - V;
        const auto next = std::int32_t(std::max_element(last, logits.end()) - last);
        if (i == result->tokens.size()) {
            if (result->stop == StopReason::EndOfGeneration) {
                EXPECT_TRUE(engine->tokenizer().isEndOfGeneration(next));
            }
            break;
        }
        ASSERT_EQ(result->tokens[i], next) << "token " << i;
        tokens.push_back(next);
        embeddings.push_back(nullptr);
        positions.push_back({s, s, s, 0});
        ++s;
    }
}

TEST_F(EngineImageTest, RepeatedImagesAreReusedAndNeverEncodedTwice) {
    EngineOptions options;
    options.maxSessions = 2;
    const auto engine = load(options);
    ASSERT_TRUE(engine);
    const auto a = image(*engine, 150, 95, 5), b = image(*engine, 100, 60, 6);
    // The same pixels prepared again: a different object with the same hash.
    const auto a2 = image(*engine, 150, 95, 5), c = image(*engine, 150, 95, 7);
    ASSERT_EQ(a->hash, a2->hash);
    ASSERT_NE(a->hash, c->hash);
    auto session = std::move(*engine->newSession());
    Result<GenerateResult> first = session->generate(twoImagePrompt(*engine, a, b, 4));
    ASSERT_TRUE(first);
    EXPECT_EQ(m_encodes, 2);

    // Same images, one more turn: the whole previous prompt is reused, nothing is encoded.
    GenerateRequest again = twoImagePrompt(*engine, a2, b, 4);
    Result<GenerateResult> second = session->generate(again);
    ASSERT_TRUE(second);
    EXPECT_EQ(m_encodes, 2);
    EXPECT_EQ(second->reusedTokens, second->promptTokens - 1);
    EXPECT_EQ(second->tokens, first->tokens);

    // A different first image of the same size: reuse stops where that image starts.
    const std::size_t imageStart = again.images[0].offset;
    Result<GenerateResult> third = session->generate(twoImagePrompt(*engine, c, b, 4));
    ASSERT_TRUE(third);
    EXPECT_EQ(third->reusedTokens, std::int64_t(imageStart));
    EXPECT_EQ(m_encodes, 3);  // c only: b's embeddings came from the cache
    EXPECT_EQ(third->imagesEncoded, 1);

    // A fresh session with the first images: the cache serves both, and the answer matches.
    auto fresh = std::move(*engine->newSession());
    Result<GenerateResult> recomputed = fresh->generate(twoImagePrompt(*engine, a, b, 4));
    ASSERT_TRUE(recomputed);
    EXPECT_EQ(m_encodes, 3);
    EXPECT_EQ(recomputed->reusedTokens, 0);
    EXPECT_EQ(recomputed->tokens, first->tokens);
}

TEST_F(EngineImageTest, TheEmbeddingCacheIsBoundedLeastRecentlyUsedFirst) {
    // 60x60 images become 84x84 (the minimum pixels): 3x3 tokens of 64 floats, 2304 bytes.
    EngineOptions options;
    options.imageCacheBytes = 2 * 2304 + 100;  // room for two
    const auto engine = load(options);
    ASSERT_TRUE(engine);
    const auto a = image(*engine, 60, 60, 8), b = image(*engine, 60, 60, 9),
               c = image(*engine, 60, 60, 10);
    ASSERT_EQ(a->tokenCount(), 9);
    ASSERT_TRUE(engine->imageEmbeddings(*a));
    ASSERT_TRUE(engine->imageEmbeddings(*b));
    ASSERT_TRUE(engine->imageEmbeddings(*a));  // a is now the most recent
    EXPECT_EQ(m_encodes, 2);
    ASSERT_TRUE(engine->imageEmbeddings(*c));  // evicts b
    EXPECT_EQ(engine->cachedImageCount(), 2u);
    bool encoded = true;
    ASSERT_TRUE(engine->imageEmbeddings(*a, &encoded));
    EXPECT_FALSE(encoded);
    ASSERT_TRUE(engine->imageEmbeddings(*b, &encoded));
    EXPECT_TRUE(encoded);
    EXPECT_EQ(m_encodes, 4);

    // An image larger than the whole budget is encoded but not kept.
    EngineOptions none;
    none.imageCacheBytes = 0;
    const auto uncached = load(none);
    ASSERT_TRUE(uncached);
    ASSERT_TRUE(uncached->imageEmbeddings(*a));
    ASSERT_TRUE(uncached->imageEmbeddings(*a));
    EXPECT_EQ(uncached->cachedImageCount(), 0u);
    EXPECT_EQ(m_encodes, 6);
}

TEST_F(EngineImageTest, SplitsATemplatedPromptAtItsPlaceholders) {
    const auto engine = load();
    ASSERT_TRUE(engine);
    const auto a = image(*engine, 60, 60, 11), b = image(*engine, 60, 60, 12);
    const std::vector<std::int32_t> tokens = engine->tokenizer().encode(
        "x<|vision_start|><|image_pad|><|vision_end|>y<|vision_start|><|image_pad|><|vision_end|>",
        true);
    const std::shared_ptr<const ImagePatches> both[] = {a, b};
    Result<GenerateRequest> split =
        Engine::splitAtPlaceholders(tokens, testing::kTinyImagePad, both);
    ASSERT_TRUE(split) << split.status().message();
    const std::vector<std::int32_t> expected = {
        'x', testing::kTinyVisionStart, testing::kTinyVisionEnd,
        'y', testing::kTinyVisionStart, testing::kTinyVisionEnd};
    EXPECT_EQ(split->prompt, expected);
    ASSERT_EQ(split->images.size(), 2u);
    EXPECT_EQ(split->images[0].offset, 2u);
    EXPECT_EQ(split->images[1].offset, 5u);
    EXPECT_EQ(split->images[1].image, b);
    const Result<GenerateRequest> short1 =
        Engine::splitAtPlaceholders(tokens, testing::kTinyImagePad, std::span(both).first(1));
    ASSERT_FALSE(short1);
    EXPECT_EQ(short1.status().message(), "the prompt has 2 image placeholders for 1 images");
}

TEST_F(EngineImageTest, RefusesImagesWithoutAProjectorAndBadOffsets) {
    const fs::path model = write("tiny-vl.gguf", testing::makeTinyModel(spec()));
    EngineOptions options;
    options.threads = 1;
    Result<std::unique_ptr<Engine>> textOnly = Engine::load(model, options);
    ASSERT_TRUE(textOnly);
    EXPECT_FALSE((*textOnly)->hasVision());
    EXPECT_EQ((*textOnly)->prepareImage(randomImage(30, 30, 1)).status().code(),
              StatusCode::Unsupported);

    const auto engine = load();
    ASSERT_TRUE(engine);
    auto session = std::move(*engine->newSession());
    GenerateRequest request = greedy(2);
    request.prompt = {1, 2, 3};
    request.images.push_back({4, image(*engine, 60, 60, 1)});
    const Result<GenerateResult> past = session->generate(request);
    ASSERT_FALSE(past);
    EXPECT_EQ(past.status().code(), StatusCode::InvalidArgument);

    // A session of the text-only engine given the same image.
    auto textSession = std::move(*(*textOnly)->newSession());
    request.images[0].offset = 1;
    const Result<GenerateResult> noTower = textSession->generate(request);
    ASSERT_FALSE(noTower);
    EXPECT_EQ(noTower.status().code(), StatusCode::Unsupported);
    EXPECT_NE(noTower.status().message().find("--mmproj"), std::string::npos);

    // An image that does not fit the context.
    EngineOptions small;
    small.contextSize = 10;
    const auto tight = load(small);
    ASSERT_TRUE(tight);
    auto tightSession = std::move(*tight->newSession());
    request.images[0].image = image(*tight, 150, 95, 1);  // 15 tokens
    EXPECT_EQ(tightSession->generate(request).status().code(), StatusCode::OutOfRange);
}

TEST_F(EngineImageTest, ProjectorErrorsNameTheFilesAndWidths) {
    // A tower whose width is not the language model's.
    const fs::path model = write("tiny-vl.gguf", testing::makeTinyModel(spec()));
    Result<std::unique_ptr<Engine>> wide =
        Engine::load(model, {}, std::make_unique<FakeTower>(96, &m_encodes));
    ASSERT_FALSE(wide);
    EXPECT_NE(wide.status().message().find("96-wide"), std::string::npos)
        << wide.status().message();
    EXPECT_NE(wide.status().message().find("64 wide"), std::string::npos);

    // --mmproj pointing at a language model.
    EngineOptions options;
    options.mmprojPath = model;
    const Result<std::unique_ptr<Engine>> notClip = Engine::load(model, options);
    ASSERT_FALSE(notClip);
    EXPECT_EQ(notClip.status().message(),
              model.string() +
                  ": not a vision projector (general.architecture is 'qwen2vl', expected "
                  "'clip'); pass the model's mmproj GGUF with --mmproj");

    // A projector for a wider language model: named before the tower is read.
    GgufWriter clip;
    clip.set("general.architecture", std::string("clip"));
    clip.set("clip.projector_type", std::string("qwen2.5vl_merger"));
    clip.set("clip.vision.projection_dim", std::uint32_t(3584));
    options.mmprojPath = write("mmproj.gguf", clip.serialize());
    const Result<std::unique_ptr<Engine>> mismatch = Engine::load(model, options);
    ASSERT_FALSE(mismatch);
    EXPECT_EQ(mismatch.status().message(),
              options.mmprojPath.string() + " and " + model.string() +
                  " are not a pair: the projector makes 3584-wide embeddings "
                  "(clip.vision.projection_dim) but the language model is 64 wide "
                  "(embedding_length)");

    options.mmprojPath = m_scratch.path() / "missing-mmproj.gguf";
    EXPECT_FALSE(Engine::load(model, options));
}

// The real Qwen2.5-VL tower from a tiny mmproj file, through EngineOptions::mmprojPath: the
// decoder must continue exactly as the float64 reference fed the tower's own embeddings.
TEST_F(EngineImageTest, ARealProjectorFileDrivesTheSamePath) {
    const fs::path model = write("tiny-vl.gguf", testing::makeTinyModel(spec()));
    testing::TinyMmprojOptions projector;
    projector.projection = 64;
    EngineOptions options;
    options.threads = 2;
    options.kvType = kernels::TensorType::F32;
    options.mmprojPath = write("mmproj.gguf", testing::makeTinyMmproj(projector).bytes);
    Result<std::unique_ptr<Engine>> loaded = Engine::load(model, options);
    ASSERT_TRUE(loaded) << loaded.status().message();
    Engine& engine = **loaded;
    ASSERT_TRUE(engine.hasVision());
    const auto a = image(engine, 224, 168, 21);  // 8x6 merged tokens: several windows
    ASSERT_TRUE(a);
    EXPECT_EQ(a->tokenCount(), 48);
    GenerateRequest request = greedy(6);
    const std::vector<std::int32_t> before = engine.tokenizer().encode("<|vision_start|>", true);
    const std::vector<std::int32_t> after = engine.tokenizer().encode("<|vision_end|>what", true);
    request.prompt = before;
    request.images.push_back({request.prompt.size(), a});
    request.prompt.insert(request.prompt.end(), after.begin(), after.end());
    auto session = std::move(*engine.newSession());
    Result<GenerateResult> result = session->generate(request);
    ASSERT_TRUE(result) << result.status().message();
    EXPECT_EQ(result->imagesEncoded, 1);
    EXPECT_EQ(result->imageTokens, 48);

    std::vector<float> e;
    ThreadPool pool(1);
    ASSERT_TRUE(engine.vision()->encode(*a, pool, e).isOk());
    std::vector<std::int32_t> tokens = before;
    std::vector<const float*> embeddings(before.size(), nullptr);
    std::vector<std::array<std::int32_t, 4>> positions = testing::textPositions(before.size());
    std::int32_t s = std::int32_t(before.size());
    const std::int32_t gh = a->gridH / 2, gw = a->gridW / 2;
    for (std::int32_t k = 0; k < gh * gw; ++k) {
        tokens.push_back(0);
        embeddings.push_back(e.data() + k * 64);
        positions.push_back({s, s + k / gw, s + k % gw, 0});
    }
    s += std::max(gh, gw);
    for (std::int32_t token : after) {
        tokens.push_back(token);
        embeddings.push_back(nullptr);
        positions.push_back({s, s, s, 0});
        ++s;
    }
    const std::int64_t V = engine.model().config().vocabSize;
    for (std::size_t i = 0; i < result->tokens.size(); ++i) {
        const std::vector<double> logits =
            testing::referenceLogits(engine.file(), tokens, positions, embeddings);
        const auto last = logits.end() - V;
        const auto next = std::int32_t(std::max_element(last, logits.end()) - last);
        ASSERT_EQ(result->tokens[i], next) << "token " << i;
        tokens.push_back(next);
        embeddings.push_back(nullptr);
        positions.push_back({s, s, s, 0});
        ++s;
    }
}

}  // namespace
}  // namespace iris::inference
