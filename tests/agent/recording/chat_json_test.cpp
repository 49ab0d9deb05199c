#include "agent/recording/chat_json.h"

#include <string>

#include <gtest/gtest.h>


namespace iris::agent {
namespace {

TEST(ChatJson, RoundTripsARequestWithImagesAsReferences) {
    auto image = std::make_shared<EncodedImage>();
    image->mimeType = "image/jpeg";
    image->bytes = {0xff, 0xd8, 0xff, 0xe0, 1, 2, 3};
    image->width = 640;
    image->height = 480;

    ChatRequest request;
    request.messages.push_back(ChatMessage::text("system", "Be brief."));
    ChatMessage user = ChatMessage::text("user", "What is on screen?");
    user.content.push_back({"", image});
    request.messages.push_back(user);
    ChatMessage assistant = ChatMessage::text("assistant", "");
    assistant.toolCalls.push_back({"call_1", "click", R"({"x": 1})"});
    request.messages.push_back(assistant);
    ChatMessage tool = ChatMessage::text("tool", "clicked");
    tool.toolCallId = "call_1";
    request.messages.push_back(tool);
    request.tools.push_back({"click", "Clicks", R"({"type":"object"})"});
    request.maxTokens = 77;
    request.temperature = 0.25;
    request.topP = 0.9;
    request.seed = 1234567890123ull;
    request.stop = {"<|im_end|>"};

    const nlohmann::json json = chatRequestToJson(request);
    const auto& reference = json["messages"][1]["content"][1];
    EXPECT_EQ(reference["type"], "image");
    EXPECT_EQ(reference["sha256"], sha256Hex(image->bytes));
    EXPECT_EQ(reference["width"], 640);
    EXPECT_FALSE(json.dump().find("\xff\xd8") != std::string::npos);

    int lookups = 0;
    auto back = chatRequestFromJson(
        nlohmann::json::parse(json.dump()),
        [&](const std::string& sha) -> Result<std::shared_ptr<const EncodedImage>> {
            ++lookups;
            if (sha != sha256Hex(image->bytes)) return Status::notFound("no image " + sha);
            return std::shared_ptr<const EncodedImage>(image);
        });
    ASSERT_TRUE(back) << back.status().message();
    EXPECT_EQ(lookups, 1);
    ASSERT_EQ(back->messages.size(), 4u);
    EXPECT_EQ(back->messages[1].content[1].image, image);
    EXPECT_EQ(back->messages[0].content[0].text, "Be brief.");
    EXPECT_EQ(back->messages[2].toolCalls[0].arguments, R"({"x": 1})");
    EXPECT_EQ(back->messages[3].toolCallId, "call_1");
    EXPECT_EQ(back->tools[0].parametersSchema, R"({"type":"object"})");
    EXPECT_EQ(back->maxTokens, 77);
    EXPECT_EQ(back->temperature, 0.25);
    EXPECT_EQ(back->topP, 0.9);
    EXPECT_EQ(back->seed, 1234567890123ull);
    EXPECT_EQ(back->stop, request.stop);
}

TEST(ChatJson, NamesTheFieldThatIsWrong) {
    const auto noImages =
        [](const std::string& sha) -> Result<std::shared_ptr<const EncodedImage>> {
        return Status::notFound("image " + sha + " is missing");
    };
    auto missingRole = chatRequestFromJson(
        nlohmann::json::parse(R"({"messages":[{"role":"user","content":[]},{"content":[]}]})"),
        noImages);
    EXPECT_EQ(missingRole.status().message(), "messages[1].role: missing");
    auto badType = chatRequestFromJson(
        nlohmann::json::parse(R"({"messages":[{"role":"user","content":[{"type":"video"}]}]})"),
        noImages);
    EXPECT_EQ(badType.status().message(),
              "messages[0].content[0].type: unknown part type \"video\"");
    auto missingImage = chatRequestFromJson(
        nlohmann::json::parse(
            R"({"messages":[{"role":"user","content":[{"type":"image","sha256":"ab"}]}]})"),
        noImages);
    EXPECT_EQ(missingImage.status().message(),
              "messages[0].content[0].sha256: image ab is missing");
    auto badTokens = chatResponseFromJson(nlohmann::json::parse(R"({"prompt_tokens":"many"})"));
    EXPECT_EQ(badTokens.status().message(), "response.prompt_tokens: expected a number");
}

TEST(ChatJson, RoundTripsAResponse) {
    ChatResponse response;
    response.text = "done";
    response.toolCalls.push_back({"", "finish", "{}"});
    response.finishReason = "stop";
    response.model = "qwen";
    response.promptTokens = 12;
    response.completionTokens = 3;
    response.latencyMs = 12.5;
    response.timeToFirstTokenMs = 4.25;
    auto back = chatResponseFromJson(chatResponseToJson(response));
    ASSERT_TRUE(back) << back.status().message();
    EXPECT_EQ(back->text, "done");
    ASSERT_EQ(back->toolCalls.size(), 1u);
    EXPECT_EQ(back->toolCalls[0].name, "finish");
    EXPECT_EQ(back->finishReason, "stop");
    EXPECT_EQ(back->model, "qwen");
    EXPECT_EQ(back->promptTokens, 12);
    EXPECT_EQ(back->completionTokens, 3);
    EXPECT_EQ(back->latencyMs, 12.5);
    EXPECT_EQ(back->timeToFirstTokenMs, 4.25);
}

}  // namespace
}  // namespace iris::agent
