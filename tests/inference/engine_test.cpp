// The engine end to end on a tiny random model with a byte-level vocabulary: greedy generation
// against the float64 reference, prefix reuse across turns, stop strings, limits, cancellation,
// and load errors.
#include "inference/engine.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "inference/gguf/gguf_writer.h"
#include "tests/inference/models/scratch_dir.h"
#include "tests/inference/models/tiny_model.h"

namespace iris::inference {
namespace {

namespace fs = std::filesystem;

class EngineTest : public ::testing::Test {
protected:
    fs::path write(const std::string& name, const std::vector<std::byte>& bytes) {
        return m_scratch.write(name, bytes);
    }

    static testing::TinyModelSpec spec() {
        testing::TinyModelSpec s;
        s.vocab = 288;
        s.withTokenizer = true;
        s.weightScale = 0.5f;
        s.seed = 3;
        return s;
    }

    std::unique_ptr<Engine> load(EngineOptions options = {}) {
        options.threads = 2;
        options.kvType = kernels::TensorType::F32;
        const fs::path path = write("tiny.gguf", testing::makeTinyModel(spec()));
        Result<std::unique_ptr<Engine>> engine = Engine::load(path, options);
        EXPECT_TRUE(engine) << engine.status().message();
        return engine ? std::move(*engine) : nullptr;
    }

    static GenerateRequest greedy(std::vector<std::int32_t> prompt, std::int64_t n) {
        GenerateRequest r;
        r.prompt = std::move(prompt);
        r.maxTokens = n;
        r.sampling.temperature = 0.0f;
        return r;
    }

    static EngineOptions withSessions(int n) {
        EngineOptions o;
        o.maxSessions = n;
        return o;
    }
    static EngineOptions withContext(std::int64_t n) {
        EngineOptions o;
        o.contextSize = n;
        return o;
    }

    testing::ScratchDir m_scratch{"iris_engine"};
};

TEST_F(EngineTest, GreedyGenerationMatchesTheReferenceModel) {
    const auto engine = load();
    ASSERT_TRUE(engine);
    auto session = std::move(*engine->newSession());
    const std::vector<std::int32_t> prompt =
        engine->tokenizer().encode("<|im_start|>user\nhello<|im_end|>", true);
    ASSERT_EQ(prompt.front(), testing::kTinyImStart);
    Result<GenerateResult> result = session->generate(greedy(prompt, 24));
    ASSERT_TRUE(result) << result.status().message();
    EXPECT_EQ(result->promptTokens, std::int64_t(prompt.size()));

    // The reference continues the same way, stopping where the engine saw end of generation.
    std::vector<std::int32_t> tokens = prompt;
    const std::int64_t V = engine->model().config().vocabSize;
    for (std::size_t i = 0; i <= result->tokens.size(); ++i) {
        const std::vector<double> logits =
            testing::referenceLogits(engine->file(), tokens, testing::textPositions(tokens.size()));
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
    }
    EXPECT_EQ(result->text, engine->tokenizer().decode(result->tokens));
}

TEST_F(EngineTest, TheNextTurnReusesTheSharedPrefixAndGivesTheSameAnswerAsAFreshSession) {
    const auto engine = load(withSessions(2));
    ASSERT_TRUE(engine);
    auto session = std::move(*engine->newSession());
    const std::vector<std::int32_t> turn1 =
        engine->tokenizer().encode("<|im_start|>user\nabc<|im_end|>", true);
    Result<GenerateResult> first = session->generate(greedy(turn1, 6));
    ASSERT_TRUE(first);
    std::vector<std::int32_t> turn2 = turn1;
    turn2.insert(turn2.end(), first->tokens.begin(), first->tokens.end());
    const std::vector<std::int32_t> more =
        engine->tokenizer().encode("<|im_end|><|im_start|>user\nmore", true);
    turn2.insert(turn2.end(), more.begin(), more.end());

    Result<GenerateResult> second = session->generate(greedy(turn2, 6));
    ASSERT_TRUE(second);
    // Everything the cache held is reused: the prompt and the generated tokens fed back (all but
    // the last generated one, which was sampled but never run through the model).
    EXPECT_EQ(second->reusedTokens, std::int64_t(turn1.size() + first->tokens.size() - 1));

    auto fresh = std::move(*engine->newSession());
    Result<GenerateResult> recomputed = fresh->generate(greedy(turn2, 6));
    ASSERT_TRUE(recomputed);
    EXPECT_EQ(recomputed->reusedTokens, 0);
    EXPECT_EQ(second->tokens, recomputed->tokens);
}

TEST_F(EngineTest, StopsAtStopStringsTokenLimitsAndCancellation) {
    const auto engine = load();
    ASSERT_TRUE(engine);
    auto session = std::move(*engine->newSession());
    const std::vector<std::int32_t> prompt = {1, 2, 3, 4};
    GenerateRequest request = greedy(prompt, 12);
    Result<GenerateResult> full = session->generate(request);
    ASSERT_TRUE(full);
    ASSERT_EQ(full->stop, StopReason::MaxTokens) << "pick another seed: this model ended early";
    EXPECT_EQ(full->tokens.size(), 12u);

    // Stop at the text of the 5th generated token: the text is cut before it.
    const std::string before = engine->tokenizer().decode(std::span(full->tokens).first(4));
    const std::string stop(engine->tokenizer().tokenToPiece(full->tokens[4]));
    request.stopStrings = {stop};
    Result<GenerateResult> stopped = session->generate(request);
    ASSERT_TRUE(stopped);
    EXPECT_EQ(stopped->stop, StopReason::StopString);
    EXPECT_EQ(stopped->text, full->text.substr(0, full->text.find(stop)));
    EXPECT_LE(stopped->text.size(), before.size());

    request.stopStrings.clear();
    int calls = 0;
    request.onToken = [&](std::int32_t, std::string_view) { return ++calls < 3; };
    Result<GenerateResult> cancelled = session->generate(request);
    ASSERT_TRUE(cancelled);
    EXPECT_EQ(cancelled->stop, StopReason::Cancelled);
    EXPECT_EQ(cancelled->tokens.size(), 3u);
}

TEST_F(EngineTest, RefusesAPromptLongerThanTheContext) {
    const auto engine = load(withContext(16));
    ASSERT_TRUE(engine);
    auto session = std::move(*engine->newSession());
    const Result<GenerateResult> result =
        session->generate(greedy(std::vector<std::int32_t>(17, 5), 4));
    ASSERT_FALSE(result);
    EXPECT_EQ(result.status().code(), StatusCode::OutOfRange);
    EXPECT_EQ(result.status().message(),
              "the prompt has 17 tokens, more than the context of 16 (raise the context size)");
    // Generation that reaches the context's end stops there.
    const Result<GenerateResult> filled =
        session->generate(greedy(std::vector<std::int32_t>(12, 5), 100));
    ASSERT_TRUE(filled);
    EXPECT_EQ(filled->stop, StopReason::ContextFull);
}

// This process's resident memory, from /proc/self/statm.
std::int64_t residentBytes() {
    std::ifstream statm("/proc/self/statm");
    std::int64_t size = 0, resident = 0;
    statm >> size >> resident;
    return resident * sysconf(_SC_PAGESIZE);
}

// A context of 1,048,576 tokens: its KV pool is reserved, not written, so loading it costs a
// small part of its size in memory, and the answer is the one of a 256-token context.
TEST_F(EngineTest, AMillionTokenContextCostsMemoryOnlyForWhatItHolds) {
    const std::int64_t before = residentBytes();
    const auto engine = load(withContext(std::int64_t(1) << 20));
    ASSERT_TRUE(engine);
    const auto reserved = std::int64_t(engine->cache().bytes());
    ASSERT_GE(reserved, std::int64_t(64) << 20) << "too small a pool to tell";
    auto session = std::move(*engine->newSession());
    const Result<GenerateResult> got = session->generate(greedy({5, 6, 7, 8, 9}, 12));
    ASSERT_TRUE(got) << got.status().message();
    const std::int64_t grown = residentBytes() - before;
    EXPECT_LT(grown, reserved / 8) << grown << " bytes resident for a pool of " << reserved;

    const auto small = load(withContext(256));
    ASSERT_TRUE(small);
    const Result<GenerateResult> want =
        std::move(*small->newSession())->generate(greedy({5, 6, 7, 8, 9}, 12));
    ASSERT_TRUE(want);
    EXPECT_EQ(got->tokens, want->tokens);
}

// The template a catalogue names for a model wins over the one its file implies (a qwen2 file
// here, which would render ChatML with Qwen2's default system message).
TEST_F(EngineTest, AChatTemplateInTheOptionsReplacesTheFiles) {
    EXPECT_EQ(load()->chatTemplate().kind(), ChatTemplateKind::Qwen2);
    EngineOptions options;
    options.chatTemplate = ChatTemplateKind::Qwen3;
    EXPECT_EQ(load(options)->chatTemplate().kind(), ChatTemplateKind::Qwen3);
    for (ChatTemplateKind kind : {ChatTemplateKind::Qwen2, ChatTemplateKind::Qwen2Vl,
                                  ChatTemplateKind::Qwen3, ChatTemplateKind::MiniMaxM3})
        EXPECT_EQ(chatTemplateKindFromName(chatTemplateKindName(kind)), kind);
    EXPECT_EQ(chatTemplateKindFromName("qwen2.5-vl"), std::nullopt);
}

TEST_F(EngineTest, LoadErrorsNameTheFileAndWhatIsWrong) {
    const Result<std::unique_ptr<Engine>> missing =
        Engine::load(m_scratch.path() / "nope.gguf", {});
    EXPECT_EQ(missing.status().code(), StatusCode::IoError);

    GgufWriter unknown;
    unknown.set("general.architecture", std::string("mamba"));
    const fs::path unknownPath = write("mamba.gguf", unknown.serialize());
    const Result<std::unique_ptr<Engine>> unsupported = Engine::load(unknownPath, {});
    EXPECT_EQ(unsupported.status().code(), StatusCode::Unsupported);
    std::string known;  // the list grows as architectures are added
    for (const std::string& name : supportedArchitectures())
        known += (known.empty() ? "" : ", ") + name;
    EXPECT_NE(known.find("qwen2, qwen2vl, qwen3"), std::string::npos) << known;
    EXPECT_EQ(
        unsupported.status().message(),
        unknownPath.string() + ": architecture 'mamba' is not supported (Iris runs " + known + ")");

    testing::TinyModelSpec noVocab = spec();
    noVocab.withTokenizer = false;
    const fs::path noVocabPath = write("novocab.gguf", testing::makeTinyModel(noVocab));
    const Result<std::unique_ptr<Engine>> noTokenizer = Engine::load(noVocabPath, {});
    ASSERT_FALSE(noTokenizer);
    EXPECT_NE(noTokenizer.status().message().find("tokenizer.ggml"), std::string::npos)
        << noTokenizer.status().message();

    // A weight in a type Iris has no kernels for.
    testing::TinyModelSpec base = spec();
    std::vector<std::byte> bytes = testing::makeTinyModel(base);
    Result<GgufFile> parsed = GgufFile::parse(bytes, "x");
    ASSERT_TRUE(parsed);
    GgufWriter odd;
    for (const auto& [key, value] : parsed->metadata())
        odd.set(key, value);
    for (const GgufTensor& t : parsed->tensors()) {
        if (t.name == "blk.0.ffn_up.weight") {
            const std::vector<std::byte> iq(std::size_t(
                kernels::rowBytes(kernels::TensorType::IQ4_NL, t.shape[0]) * t.shape[1]));
            ASSERT_TRUE(odd.addTensor(t.name, kernels::TensorType::IQ4_NL, t.shape, iq).isOk());
        } else {
            ASSERT_TRUE(odd.addTensor(t.name, t.type, t.shape, t.data).isOk());
        }
    }
    const fs::path oddPath = write("odd.gguf", odd.serialize());
    const Result<std::unique_ptr<Engine>> oddType = Engine::load(oddPath, {});
    EXPECT_EQ(oddType.status().code(), StatusCode::Unsupported);
    EXPECT_EQ(
        oddType.status().message(),
        oddPath.string() +
            ": tensor 'blk.0.ffn_up.weight' has type iq4_nl, which Iris cannot compute with yet");
}

}  // namespace
}  // namespace iris::inference
