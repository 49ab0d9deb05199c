// `iris serve` as its clients meet it: Iris's own OpenAI client (streamed and whole, with an API
// key), and images in data URLs on a tiny Qwen2.5-VL model, compared with the engine fed the
// prompt written out by hand.
#include <cstdlib>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "agent/clients/openai_client.h"
#include "agent/clients/openai_protocol.h"
#include "tests/app/serve/serve_fixture.h"

namespace iris::app::serve {
namespace {

using Json = nlohmann::json;

class OpenAiServerClientsTest : public ::testing::Test, public testing::ServeFixture {};

TEST_F(OpenAiServerClientsTest, IrissOwnOpenAiClientGetsTheEnginesAnswer) {
    ::setenv("IRIS_SERVE_TEST_KEY", "open-sesame", 1);
    ServerOptions options;
    options.apiKey = "open-sesame";
    start(options);
    const inference::GenerateResult expected = reference(testing::qwenChatPrompt("hello"), 10);
    for (const bool stream : {true, false}) {
        agent::OpenAiSettings settings;
        settings.baseUrl = "http://127.0.0.1:" + std::to_string(port) + "/v1";
        settings.model = "tiny.gguf";
        settings.apiKeyEnv = "IRIS_SERVE_TEST_KEY";
        settings.stream = stream;
        settings.maxRetries = 0;
        agent::OpenAiClient client(settings);
        agent::ChatRequest request;
        request.messages.push_back(agent::ChatMessage::text("user", "hello"));
        request.maxTokens = 10;
        request.temperature = 0;
        std::string streamed;
        Result<agent::ChatResponse> response = client.complete(request, [&](std::string_view t) {
            streamed += t;
            return true;
        });
        ASSERT_TRUE(response) << response.status().message();
        EXPECT_EQ(response->text, testing::asJsonText(expected.text)) << "stream " << stream;
        if (stream) {
            EXPECT_EQ(streamed, testing::asJsonText(expected.text));
        }
        EXPECT_EQ(response->model, "tiny.gguf");
        EXPECT_EQ(response->promptTokens, expected.promptTokens);
        EXPECT_EQ(response->completionTokens, int(expected.tokens.size()));
    }
    ::unsetenv("IRIS_SERVE_TEST_KEY");
}

std::vector<std::uint8_t> randomPng(int width, int height) {
    cv::Mat bgr(height, width, CV_8UC3);
    cv::randu(bgr, cv::Scalar::all(0), cv::Scalar::all(256));
    std::vector<std::uint8_t> bytes;
    cv::imencode(".png", bgr, bytes);
    return bytes;
}

std::string imageChat(const std::string& url, const std::string& text) {
    return Json{{"messages",
                 {{{"role", "user"},
                   {"content",
                    {{{"type", "image_url"}, {"image_url", {{"url", url}}}},
                     {{"type", "text"}, {"text", text}}}}}}},
                {"max_tokens", 5},
                {"temperature", 0}}
        .dump();
}

TEST_F(OpenAiServerClientsTest, AnImageInADataUrlAnswersLikeTheEngine) {
    useVisionModel();
    contextSize = 1024;
    start();
    const std::vector<std::uint8_t> png = randomPng(112, 84);  // 4x3 merged tokens
    auto result = client().Post(
        "/v1/chat/completions",
        imageChat("data:image/png;base64," + agent::base64Encode(png), "where is the button?"),
        "application/json");
    ASSERT_TRUE(result);
    ASSERT_EQ(result->status, 200) << result->body;
    const Json json = Json::parse(result->body);

    // The engine itself, fed the prompt written out by hand with the image in its place.
    Result<std::unique_ptr<inference::Engine>> engine =
        inference::Engine::load(modelPath, engineOptions());
    ASSERT_TRUE(engine) << engine.status().message();
    inference::GenerateRequest direct;
    direct.prompt = (*engine)->tokenizer().encode(
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
        "<|vision_start|>",
        true);
    Result<std::shared_ptr<const inference::ImagePatches>> patches = (*engine)->prepareImage(png);
    ASSERT_TRUE(patches);
    direct.images.push_back({direct.prompt.size(), *patches});
    const std::vector<std::int32_t> tail = (*engine)->tokenizer().encode(
        "<|vision_end|>where is the button?<|im_end|>\n<|im_start|>assistant\n", true);
    direct.prompt.insert(direct.prompt.end(), tail.begin(), tail.end());
    direct.sampling.temperature = 0.0f;
    direct.maxTokens = 5;
    Result<inference::GenerateResult> expected = (*(*engine)->newSession())->generate(direct);
    ASSERT_TRUE(expected) << expected.status().message();
    EXPECT_EQ(json["choices"][0]["message"]["content"], testing::asJsonText(expected->text));
    EXPECT_EQ(json["usage"]["prompt_tokens"], expected->promptTokens);
}

TEST_F(OpenAiServerClientsTest, AnUndecodableImageIs400NamingThePart) {
    useVisionModel();
    contextSize = 1024;
    start();
    const std::vector<std::uint8_t> notAnImage = {1, 2, 3, 4};
    auto result = client().Post(
        "/v1/chat/completions",
        imageChat("data:image/png;base64," + agent::base64Encode(notAnImage), "what?"),
        "application/json");
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 400);
    const Json error = Json::parse(result->body)["error"];
    EXPECT_EQ(error["param"], "messages[0].content[0]") << error.dump();
    EXPECT_NE(error["message"].get<std::string>().find("not a PNG or JPEG"), std::string::npos)
        << error.dump();
}

TEST_F(OpenAiServerClientsTest, ImagesWithoutAProjectorAre400) {
    start();
    auto result = client().Post(
        "/v1/chat/completions",
        imageChat("data:image/png;base64," + agent::base64Encode(randomPng(56, 56)), "what?"),
        "application/json");
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 400);
    EXPECT_NE(result->body.find("--mmproj"), std::string::npos) << result->body;
}

}  // namespace
}  // namespace iris::app::serve
