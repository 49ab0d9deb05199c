// LocalEngineClient on a tiny random Qwen2 model with a byte-level vocabulary, against the engine
// driven directly (Session::generate on a separately loaded engine) with a prompt written out by
// hand: same tokens, same text, prefix reuse across turns, clients sharing one scheduler from
// several threads, stop strings that never leak into the stream, and the errors a caller can
// meet.
#include "agent/clients/local_engine_client.h"

#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/inference/models/scratch_dir.h"
#include "tests/inference/models/tiny_model.h"

namespace iris::agent {
namespace {

namespace fs = std::filesystem;

class LocalEngineClientTest : public ::testing::Test {
protected:
    void SetUp() override {
        inference::testing::TinyModelSpec spec;
        spec.vocab = 288;
        spec.withTokenizer = true;
        spec.weightScale = 0.5f;
        spec.seed = 3;
        const std::vector<std::byte> bytes = inference::testing::makeTinyModel(spec);
        m_model = m_dir / "tiny.gguf";
        std::ofstream(m_model, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    }

    static inference::EngineOptions options() {
        inference::EngineOptions o;
        o.threads = 2;
        o.kvType = kernels::TensorType::F32;
        o.contextSize = 512;
        return o;
    }

    // What the engine itself answers for `prompt` in a fresh session (greedy).
    inference::GenerateResult reference(const std::string& prompt, std::int64_t maxTokens,
                                        std::vector<std::string> stop = {}) {
        Result<std::unique_ptr<inference::Engine>> engine =
            inference::Engine::load(m_model, options());
        EXPECT_TRUE(engine) << engine.status().message();
        auto session = std::move(*(*engine)->newSession());
        inference::GenerateRequest request;
        request.prompt = (*engine)->tokenizer().encode(prompt, true);
        request.sampling.temperature = 0.0f;
        request.maxTokens = maxTokens;
        request.stopStrings = std::move(stop);
        Result<inference::GenerateResult> result = session->generate(request);
        EXPECT_TRUE(result) << result.status().message();
        return std::move(*result);
    }

    std::unique_ptr<LocalEngineClient> client() {
        Result<std::unique_ptr<LocalEngineClient>> c = LocalEngineClient::open(m_model, options());
        EXPECT_TRUE(c) << c.status().message();
        return c ? std::move(*c) : nullptr;
    }

    inference::testing::ScratchDir m_scratch{"iris_local_client"};
    const fs::path m_dir = m_scratch.path();
    fs::path m_model;
};

constexpr const char* kSystem =
    "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
    "assistant.<|im_end|>\n";

TEST_F(LocalEngineClientTest, AnswersLikeTheEngineWithTheTemplatedPromptAndReusesThePrefix) {
    const auto local = client();
    ASSERT_TRUE(local);
    EXPECT_EQ(local->describe(), "local tiny.gguf");
    ChatRequest request;
    request.messages.push_back(ChatMessage::text("user", "hello"));
    request.maxTokens = 12;
    std::string streamed;
    const Result<ChatResponse> first = local->complete(request, [&](std::string_view d) {
        streamed += d;
        return true;
    });
    ASSERT_TRUE(first) << first.status().message();

    const std::string prompt1 =
        std::string(kSystem) + "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n";
    const inference::GenerateResult expected1 = reference(prompt1, 12);
    EXPECT_EQ(first->text, expected1.text);
    EXPECT_EQ(streamed, expected1.text);
    EXPECT_EQ(first->completionTokens, int(expected1.tokens.size()));
    EXPECT_EQ(first->promptTokens, int(expected1.promptTokens));
    EXPECT_EQ(first->finishReason,
              expected1.stop == inference::StopReason::MaxTokens ? "length" : "stop");
    EXPECT_EQ(first->model, "tiny.gguf");
    EXPECT_GT(first->latencyMs, 0.0);

    // The next turn: the whole first turn is a shared prefix.
    request.messages.push_back(ChatMessage::text("assistant", first->text));
    request.messages.push_back(ChatMessage::text("user", "more"));
    const Result<ChatResponse> second = local->complete(request);
    ASSERT_TRUE(second) << second.status().message();
    const std::string prompt2 = prompt1 + first->text +
                                "<|im_end|>\n<|im_start|>user\nmore<|im_end|>\n"
                                "<|im_start|>assistant\n";
    const inference::GenerateResult expected2 = reference(prompt2, 12);
    EXPECT_EQ(second->text, expected2.text);
    EXPECT_EQ(second->promptTokens, int(expected2.promptTokens));
    // The prefix cache keeps whole KV blocks: at least every full block of the first prompt.
    const std::int64_t block = local->engine().options().kvBlockSize;
    const auto firstPrompt = std::int64_t(local->engine().tokenizer().encode(prompt1, true).size());
    EXPECT_GE(local->lastReusedTokens(), firstPrompt / block * block);
    EXPECT_GT(local->lastReusedTokens(), 0);
}

// Three clients of one scheduler, each on its own thread and all at once, two turns each: every
// answer is the one a fresh Session on a separately loaded engine gives for the same prompt.
TEST_F(LocalEngineClientTest, ClientsSharingASchedulerAnswerFromSeveralThreadsAsEachAlone) {
    constexpr int kClients = 3;
    inference::EngineOptions shared = options();
    shared.maxSessions = kClients;
    Result<std::unique_ptr<inference::Engine>> engine = inference::Engine::load(m_model, shared);
    ASSERT_TRUE(engine) << engine.status().message();
    Result<std::unique_ptr<inference::Scheduler>> started =
        inference::Scheduler::start(std::move(*engine));
    ASSERT_TRUE(started) << started.status().message();
    const std::shared_ptr<inference::Scheduler> scheduler = std::move(*started);

    const std::vector<std::string> questions = {"hello", "abc", "what is on the screen?"};
    struct Turns {
        Result<ChatResponse> first = Status::internal("not run");
        Result<ChatResponse> second = Status::internal("not run");
    };
    std::vector<Turns> answers(kClients);
    std::vector<std::thread> threads;
    for (int i = 0; i < kClients; ++i) {
        threads.emplace_back([&, i] {
            const auto client = LocalEngineClient::attach(scheduler, "tiny.gguf");
            ChatRequest request;
            request.messages.push_back(ChatMessage::text("user", questions[i]));
            request.maxTokens = 10;
            answers[i].first = client->complete(request);
            if (!answers[i].first) return;
            request.messages.push_back(ChatMessage::text("assistant", answers[i].first->text));
            request.messages.push_back(ChatMessage::text("user", "more"));
            answers[i].second = client->complete(request);
        });
    }
    for (std::thread& thread : threads)
        thread.join();

    for (int i = 0; i < kClients; ++i) {
        SCOPED_TRACE("client " + std::to_string(i) + ": " + questions[i]);
        ASSERT_TRUE(answers[i].first) << answers[i].first.status().message();
        ASSERT_TRUE(answers[i].second) << answers[i].second.status().message();
        const std::string prompt1 = std::string(kSystem) + "<|im_start|>user\n" + questions[i] +
                                    "<|im_end|>\n<|im_start|>assistant\n";
        const inference::GenerateResult expected1 = reference(prompt1, 10);
        EXPECT_EQ(answers[i].first->text, expected1.text);
        EXPECT_EQ(answers[i].first->completionTokens, int(expected1.tokens.size()));
        const std::string prompt2 = prompt1 + answers[i].first->text +
                                    "<|im_end|>\n<|im_start|>user\nmore<|im_end|>\n"
                                    "<|im_start|>assistant\n";
        const inference::GenerateResult expected2 = reference(prompt2, 10);
        EXPECT_EQ(answers[i].second->text, expected2.text);
        EXPECT_EQ(answers[i].second->promptTokens, int(expected2.promptTokens));
    }
    EXPECT_EQ(scheduler->stats().requests, 2 * kClients);
}

TEST_F(LocalEngineClientTest, AStopStringEndsTheAnswerAndNeverReachesTheStream) {
    const std::string prompt =
        std::string(kSystem) + "<|im_start|>user\nabc<|im_end|>\n<|im_start|>assistant\n";
    const inference::GenerateResult full = reference(prompt, 16);
    ASSERT_GE(full.text.size(), 6u) << "pick another seed: this model ends too early";
    // Two bytes from the middle of the answer, cut where they first occur.
    const std::string stop = full.text.substr(4, 2);
    const std::string expected = full.text.substr(0, full.text.find(stop));

    const auto local = client();
    ASSERT_TRUE(local);
    ChatRequest request;
    request.messages.push_back(ChatMessage::text("user", "abc"));
    request.maxTokens = 16;
    request.stop = {stop};
    std::string streamed;
    const Result<ChatResponse> response = local->complete(request, [&](std::string_view d) {
        streamed += d;
        return true;
    });
    ASSERT_TRUE(response) << response.status().message();
    EXPECT_EQ(response->text, expected);
    EXPECT_EQ(streamed, expected);
    EXPECT_EQ(response->finishReason, "stop");
}

TEST_F(LocalEngineClientTest, PassesToolsThroughTheTemplate) {
    const auto local = client();
    ASSERT_TRUE(local);
    ChatRequest request;
    request.messages.push_back(ChatMessage::text("user", "Press OK"));
    request.tools.push_back({"click", "Click at a point", R"({"type":"object"})"});
    const Result<std::string> prompt = renderPrompt(local->engine().chatTemplate(), request);
    ASSERT_TRUE(prompt) << prompt.status().message();
    EXPECT_NE(prompt->find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"click\", "
                           "\"description\": \"Click at a point\", \"parameters\": {\"type\": "
                           "\"object\"}}}\n</tools>"),
              std::string::npos)
        << *prompt;

    request.tools[0].parametersSchema = "[1, 2";
    const Result<ChatResponse> bad = local->complete(request);
    EXPECT_EQ(bad.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(bad.status().message().find("tool 'click'"), std::string::npos);
}

TEST_F(LocalEngineClientTest, RefusesImagesWithoutAVisionTower) {
    const auto local = client();
    ASSERT_TRUE(local);
    ChatRequest request;
    request.messages.push_back(ChatMessage::text("user", "What is this?"));
    auto image = std::make_shared<EncodedImage>();
    image->mimeType = "image/png";
    image->bytes = {1, 2, 3};
    request.messages[0].content.push_back({"", image});
    const Result<ChatResponse> response = local->complete(request);
    EXPECT_EQ(response.status().code(), StatusCode::Unsupported);
    EXPECT_EQ(response.status().message(),
              "tiny.gguf: this model has no vision tower loaded (pass --mmproj)");
}

TEST_F(LocalEngineClientTest, CancelsFromTheStreamOrFromCancel) {
    const auto local = client();
    ASSERT_TRUE(local);
    ChatRequest request;
    request.messages.push_back(ChatMessage::text("user", "hello"));
    request.maxTokens = 12;
    const Result<ChatResponse> byCallback =
        local->complete(request, [](std::string_view) { return false; });
    EXPECT_EQ(byCallback.status().code(), StatusCode::Cancelled);

    // Room for many tokens: the scheduler decodes ahead of the stream, and a cancel that arrives
    // after the last token finds the answer already complete.
    ChatRequest longer = request;
    longer.maxTokens = 200;
    const Result<ChatResponse> byCancel = local->complete(longer, [&](std::string_view) {
        local->cancel();  // as another thread would; seen at the next token
        return true;
    });
    EXPECT_EQ(byCancel.status().code(), StatusCode::Cancelled);

    // A cancel with nothing in flight does not spoil the next request.
    local->cancel();
    EXPECT_TRUE(local->complete(request));
}

TEST_F(LocalEngineClientTest, LoadErrorsNameTheFile) {
    const Result<std::unique_ptr<LocalEngineClient>> missing =
        LocalEngineClient::open(m_dir / "absent.gguf", options());
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.status().message().find("absent.gguf"), std::string::npos);
}

}  // namespace
}  // namespace iris::agent
