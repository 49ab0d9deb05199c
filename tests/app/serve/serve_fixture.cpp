#include "tests/app/serve/serve_fixture.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/inference/models/tiny_model.h"
#include "tests/inference/vision/tiny_mmproj.h"

namespace iris::app::serve::testing {

std::vector<std::string> sseData(const std::string& body) {
    std::vector<std::string> data;
    std::size_t at = 0;
    while (at < body.size()) {
        std::size_t end = body.find("\n\n", at);
        if (end == std::string::npos) end = body.size();
        const std::string event = body.substr(at, end - at);
        if (event.starts_with("data: ")) data.push_back(event.substr(6));
        at = end + 2;
    }
    return data;
}

ServeFixture::ServeFixture() {
    inference::testing::TinyModelSpec spec;
    spec.vocab = 288;
    spec.withTokenizer = true;
    spec.weightScale = 0.5f;
    spec.seed = 3;
    modelPath = m_scratch.write("tiny.gguf", inference::testing::makeTinyModel(spec));
}

ServeFixture::~ServeFixture() {
    if (server) server->stop();
}

void ServeFixture::useVisionModel() {
    const inference::testing::TinyModelSpec spec = inference::testing::tinyQwen2VlSpec();
    modelPath = m_scratch.write("tiny-vl.gguf", inference::testing::makeTinyModel(spec));
    inference::testing::TinyMmprojOptions projector;
    projector.projection = 64;
    mmprojPath =
        m_scratch.write("mmproj.gguf", inference::testing::makeTinyMmproj(projector).bytes);
}

inference::EngineOptions ServeFixture::engineOptions() const {
    inference::EngineOptions o;
    o.threads = 2;
    o.kvType = kernels::TensorType::F32;
    o.contextSize = contextSize;
    o.maxSessions = maxSessions;
    o.mmprojPath = mmprojPath;
    return o;
}

void ServeFixture::start(ServerOptions options, inference::SchedulerOptions scheduler,
                         bool loadNow) {
    options.host = "127.0.0.1";
    options.port = 0;
    options.modelName = "tiny.gguf";
    options.logRequests = false;
    server = std::make_unique<OpenAiServer>(options);
    Result<int> bound = server->start();
    ASSERT_TRUE(bound) << bound.status().message();
    port = *bound;
    if (loadNow) load(scheduler);
}

void ServeFixture::load(inference::SchedulerOptions scheduler) {
    Result<std::unique_ptr<inference::Engine>> engine =
        inference::Engine::load(modelPath, engineOptions());
    ASSERT_TRUE(engine) << engine.status().message();
    Result<std::unique_ptr<inference::Scheduler>> started =
        inference::Scheduler::start(std::move(*engine), scheduler);
    ASSERT_TRUE(started) << started.status().message();
    server->setScheduler(std::move(*started));
}

httplib::Client ServeFixture::client() const {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(60, 0);
    client.set_write_timeout(60, 0);
    return client;
}

inference::GenerateResult ServeFixture::reference(const std::string& prompt,
                                                  std::int64_t maxTokens) const {
    Result<std::unique_ptr<inference::Engine>> engine =
        inference::Engine::load(modelPath, engineOptions());
    EXPECT_TRUE(engine) << engine.status().message();
    auto session = std::move(*(*engine)->newSession());
    inference::GenerateRequest request;
    request.prompt = (*engine)->tokenizer().encode(prompt, true);
    request.sampling.temperature = 0.0f;
    request.maxTokens = maxTokens;
    Result<inference::GenerateResult> result = session->generate(request);
    EXPECT_TRUE(result) << result.status().message();
    return std::move(*result);
}

void ServeFixture::useEndlessModel() {
    inference::testing::TinyModelSpec spec;
    spec.vocab = 288;
    spec.withTokenizer = true;
    spec.endless = true;
    spec.seed = 3;
    modelPath = m_scratch.write("endless.gguf", inference::testing::makeTinyModel(spec));
    contextSize = kEndlessContext;
}

std::string asJsonText(const std::string& text) {
    return nlohmann::json::parse(
               nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
        .get<std::string>();
}

std::string qwenChatPrompt(const std::string& user) {
    return "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
           "assistant.<|im_end|>\n<|im_start|>user\n" +
           user + "<|im_end|>\n<|im_start|>assistant\n";
}

}  // namespace iris::app::serve::testing
