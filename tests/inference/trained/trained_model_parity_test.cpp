// Iris's engine against the PyTorch model the tiny computer-use model is trained with
// (scripts/training/model.py, docs/tiny-model.md). data/ holds a small random-weight model
// exported by scripts/training/export.py through iris_pack_gguf (f32 weights), an image, and what
// the torch model computed in float64: the tokenizer's ids, the vision tower's output, the logits
// of the last prompt tokens and a greedy continuation. Regenerate with the command in
// data/reference.json ("command"). Torch is not needed to run this test.
//
// A mismatch in the tokenizer, the patch order, the windows, the 2-D or M-RoPE angles, the
// merger, the image positions or the tensor names shows up here as an O(1) relative error; f32
// rounding over these depths stays below 1e-5 of the largest value (measured: see the
// tolerances below).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "inference/engine.h"
#include "inference/gguf/gguf_file.h"
#include "inference/kv_cache.h"
#include "inference/models/model.h"
#include "inference/vision/image_positions.h"
#include "tests/inference/llama_cpp/parity_checks.h"

namespace iris::inference {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Relative to the largest reference value: f32 products of a few hundred terms through two
// decoder layers and two tower blocks; the measured errors are about 1e-6.
constexpr double kTowerTolerance = 2e-5;
constexpr double kLogitTolerance = 2e-5;

const fs::path& dataDir() {
    static const fs::path dir = fs::path(IRIS_SOURCE_ROOT) / "tests/inference/trained/data";
    return dir;
}

const json& reference() {
    static const json value = [] {
        std::ifstream in(dataDir() / "reference.json");
        return json::parse(in);
    }();
    return value;
}

// Prints the measured error (docs/tiny-model.md quotes it) and checks it.
void expectClose(const char* what, const std::vector<float>& got, const char* key,
                 double tolerance) {
    const double error = testing::relativeError(got, reference()[key].get<std::vector<double>>());
    std::cout << what << ": relative error " << error << '\n';
    EXPECT_LT(error, tolerance);
}

// The prompt's tokens with the image's rows in place of its <|image_pad|> (at `imageAt`), each at
// the KV slot of its index and the position Iris's image_positions gives (M-RoPE); logits for
// the last `withLogits`.
std::vector<TokenInput> promptBatch(const std::vector<std::int32_t>& ids, std::size_t imageAt,
                                    const ImagePatches& patches, const std::vector<float>& rows,
                                    std::int64_t width, std::size_t withLogits) {
    const std::int64_t mergedH = patches.gridH / 2, mergedW = patches.gridW / 2;
    std::vector<TokenPosition> positions;
    for (std::size_t i = 0; i < imageAt; ++i)
        positions.push_back(textPosition(std::int32_t(i)));
    std::int32_t next =
        appendImagePositions(std::int32_t(imageAt), mergedH, mergedW, true, positions);
    for (std::size_t i = imageAt + 1; i < ids.size(); ++i)
        positions.push_back(textPosition(next++));

    std::vector<TokenInput> batch;
    const std::size_t imageTokens = std::size_t(mergedH * mergedW);
    for (std::size_t slot = 0; slot < positions.size(); ++slot) {
        TokenInput in;
        in.slot = std::int64_t(slot);
        in.position = positions[slot];
        in.wantLogits = slot + withLogits >= positions.size();
        if (slot < imageAt) {
            in.token = ids[slot];
        } else if (slot < imageAt + imageTokens) {
            in.embedding = rows.data() + (slot - imageAt) * std::size_t(width);
        } else {
            in.token = ids[slot - imageTokens + 1];
        }
        batch.push_back(in);
    }
    return batch;
}

class TrainedModelParityTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        EngineOptions options;
        options.threads = 2;
        options.mmprojPath = dataDir() / reference()["mmproj"].get<std::string>();
        options.visionPrecision = VisionPrecision::F32;
        options.kvType = kernels::TensorType::F32;
        Result<std::unique_ptr<Engine>> engine =
            Engine::load(dataDir() / reference()["model"].get<std::string>(), options);
        ASSERT_TRUE(engine) << engine.status().message();
        s_engine = std::move(*engine).release();
    }
    static void TearDownTestSuite() {
        delete s_engine;
        s_engine = nullptr;
    }

    static std::shared_ptr<const ImagePatches> image() {
        std::ifstream in(dataDir() / reference()["image"].get<std::string>(), std::ios::binary);
        const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
        Result<std::shared_ptr<const ImagePatches>> patches = s_engine->prepareImage(bytes);
        EXPECT_TRUE(patches) << patches.status().message();
        return patches ? *patches : nullptr;
    }

    static Engine* s_engine;
};

Engine* TrainedModelParityTest::s_engine = nullptr;

TEST_F(TrainedModelParityTest, TokenizerGivesThePythonTokenizersIds) {
    ASSERT_NE(s_engine, nullptr);
    for (const json& c : reference()["tokenizer_cases"]) {
        const std::string text = c["text"].get<std::string>();
        EXPECT_EQ(s_engine->tokenizer().encode(text, /*parseSpecial=*/true),
                  c["ids"].get<std::vector<std::int32_t>>())
            << text;
    }
    EXPECT_EQ(s_engine->tokenizer().encode(reference()["prompt"].get<std::string>(), true),
              reference()["ids"].get<std::vector<std::int32_t>>());
}

TEST_F(TrainedModelParityTest, VisionTowerMatchesTorch) {
    ASSERT_NE(s_engine, nullptr);
    const std::shared_ptr<const ImagePatches> patches = image();
    ASSERT_NE(patches, nullptr);
    EXPECT_EQ(patches->gridH, reference()["grid"][0].get<std::int64_t>());
    EXPECT_EQ(patches->gridW, reference()["grid"][1].get<std::int64_t>());
    Result<std::shared_ptr<const std::vector<float>>> rows = s_engine->imageEmbeddings(*patches);
    ASSERT_TRUE(rows) << rows.status().message();
    expectClose("tower", **rows, "tower", kTowerTolerance);
}

// The decoder on the prompt with the tower's rows in place of <|image_pad|>, through
// Model::forward.
TEST_F(TrainedModelParityTest, LogitsOfThePromptMatchTorch) {
    ASSERT_NE(s_engine, nullptr);
    const std::shared_ptr<const ImagePatches> patches = image();
    ASSERT_NE(patches, nullptr);
    Result<std::shared_ptr<const std::vector<float>>> rows = s_engine->imageEmbeddings(*patches);
    ASSERT_TRUE(rows);
    const std::vector<std::int32_t> ids = reference()["ids"].get<std::vector<std::int32_t>>();
    const std::size_t imageAt = reference()["image_at"].get<std::size_t>();

    Result<GgufFile> file = GgufFile::open(dataDir() / reference()["model"].get<std::string>());
    ASSERT_TRUE(file) << file.status().message();
    Result<std::unique_ptr<Model>> model = createModel(*file);
    ASSERT_TRUE(model) << model.status().message();
    std::vector<TokenInput> batch =
        promptBatch(ids, imageAt, *patches, **rows, (*model)->config().hiddenSize, 4);
    Result<KvCache> cache = KvCache::create((*model)->kvCacheOptions(
        std::int64_t(batch.size() / 16 + 2), 16, kernels::TensorType::F32));
    ASSERT_TRUE(cache) << cache.status().message();
    const SequenceId sequence = cache->newSequence();
    ASSERT_TRUE(cache->extend(sequence, std::int64_t(batch.size())).isOk());
    for (TokenInput& in : batch)
        in.sequence = sequence;
    ThreadPool pool(2);
    std::vector<float> logits;
    const Status status = (*model)->forward(batch, *cache, pool, logits);
    ASSERT_TRUE(status.isOk()) << status.message();
    expectClose("logits", logits, "last_logits", kLogitTolerance);
}

// The whole path the agent takes: one <|image_pad|> expanded by splitAtPlaceholders, a session,
// greedy decoding until <|im_end|>.
TEST_F(TrainedModelParityTest, GreedyAnswerMatchesTorch) {
    ASSERT_NE(s_engine, nullptr);
    const std::shared_ptr<const ImagePatches> patches = image();
    ASSERT_NE(patches, nullptr);
    const std::vector<std::int32_t> ids = reference()["ids"].get<std::vector<std::int32_t>>();
    const std::optional<std::int32_t> pad = s_engine->tokenizer().findToken("<|image_pad|>");
    ASSERT_TRUE(pad.has_value());
    const std::vector<std::shared_ptr<const ImagePatches>> images{patches};
    Result<GenerateRequest> request = Engine::splitAtPlaceholders(ids, *pad, images);
    ASSERT_TRUE(request) << request.status().message();
    request->sampling.temperature = 0.0f;
    request->maxTokens = reference()["greedy_max_tokens"].get<std::int64_t>();
    Result<std::unique_ptr<Session>> session = s_engine->newSession();
    ASSERT_TRUE(session);
    Result<GenerateResult> result = (*session)->generate(*request);
    ASSERT_TRUE(result) << result.status().message();
    EXPECT_EQ(result->tokens, reference()["greedy"].get<std::vector<std::int32_t>>());
}

}  // namespace
}  // namespace iris::inference
