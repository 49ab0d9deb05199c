// The request bodies of /v1/chat/completions and /v1/completions read without a server: every
// field OpenAI clients send, and errors that name the field at fault.
#include "app/serve/openai_request.h"

#include <random>

#include <gtest/gtest.h>

#include "agent/clients/openai_protocol.h"

namespace iris::app::serve {
namespace {

TEST(OpenAiRequest, ReadsAChatRequestWithEverySamplingField) {
    const std::string body = R"({"model": "x", "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "hi "}, {"type": "text", "text": "there"}]},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "click", "arguments": "{\"x\": 1}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "done"}],
      "max_tokens": 12, "stop": "END", "temperature": 0.5, "top_p": 0.9, "top_k": 7,
      "min_p": 0.1, "seed": 42, "presence_penalty": 0.5, "frequency_penalty": -0.5,
      "repetition_penalty": 1.1, "stream": true, "stream_options": {"include_usage": true}})";
    Result<ChatCompletionRequest> request = parseChatCompletionRequest(body);
    ASSERT_TRUE(request) << request.status().message();
    const agent::ChatRequest& chat = request->chat;
    ASSERT_EQ(chat.messages.size(), 4u);
    EXPECT_EQ(chat.messages[0].role, "system");
    ASSERT_EQ(chat.messages[1].content.size(), 2u);
    EXPECT_EQ(chat.messages[1].content[1].text, "there");
    ASSERT_EQ(chat.messages[2].toolCalls.size(), 1u);
    EXPECT_EQ(chat.messages[2].toolCalls[0].name, "click");
    EXPECT_EQ(chat.messages[2].toolCalls[0].arguments, R"({"x": 1})");
    EXPECT_EQ(chat.messages[3].toolCallId, "c1");
    const GenerationSettings& s = request->settings;
    EXPECT_EQ(s.maxTokens, 12);
    EXPECT_EQ(s.stop, std::vector<std::string>{"END"});
    EXPECT_FLOAT_EQ(s.sampling.temperature, 0.5f);
    EXPECT_FLOAT_EQ(s.sampling.topP, 0.9f);
    EXPECT_EQ(s.sampling.topK, 7);
    EXPECT_FLOAT_EQ(s.sampling.minP, 0.1f);
    EXPECT_EQ(s.sampling.seed, 42u);
    EXPECT_FLOAT_EQ(s.sampling.presencePenalty, 0.5f);
    EXPECT_FLOAT_EQ(s.sampling.frequencyPenalty, -0.5f);
    EXPECT_FLOAT_EQ(s.sampling.repetitionPenalty, 1.1f);
    EXPECT_TRUE(s.stream);
    EXPECT_TRUE(s.includeUsage);
    EXPECT_FALSE(request->parseToolCalls);
}

TEST(OpenAiRequest, DefaultsAreOpenAisAndMaxCompletionTokensWins) {
    Result<ChatCompletionRequest> request = parseChatCompletionRequest(
        R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 5,
            "max_completion_tokens": 9, "stop": ["a", "b"]})");
    ASSERT_TRUE(request) << request.status().message();
    EXPECT_EQ(request->settings.maxTokens, 9);
    EXPECT_EQ(request->settings.stop, (std::vector<std::string>{"a", "b"}));
    EXPECT_FLOAT_EQ(request->settings.sampling.temperature, 1.0f);
    EXPECT_FLOAT_EQ(request->settings.sampling.topP, 1.0f);
    EXPECT_EQ(request->settings.sampling.topK, 0);
    EXPECT_FLOAT_EQ(request->settings.sampling.minP, 0.0f);
    EXPECT_FALSE(request->settings.stream);
    Result<ChatCompletionRequest> bare =
        parseChatCompletionRequest(R"({"messages": [{"role": "user", "content": "x"}]})");
    ASSERT_TRUE(bare);
    EXPECT_FALSE(bare->settings.maxTokens.has_value());  // the rest of the context
}

TEST(OpenAiRequest, ReadsToolsAndToolChoice) {
    const std::string tools = R"("tools": [{"type": "function", "function": {"name": "click",
        "description": "Click.", "parameters": {"type": "object", "properties": {"x": {"type": "number"}}}}}])";
    Result<ChatCompletionRequest> request = parseChatCompletionRequest(
        R"({"messages": [{"role": "user", "content": "x"}], )" + tools + "}");
    ASSERT_TRUE(request) << request.status().message();
    ASSERT_EQ(request->chat.tools.size(), 1u);
    EXPECT_EQ(request->chat.tools[0].name, "click");
    EXPECT_EQ(request->chat.tools[0].description, "Click.");
    EXPECT_NE(request->chat.tools[0].parametersSchema.find("\"x\""), std::string::npos);
    EXPECT_TRUE(request->parseToolCalls);
    // tool_choice none: the model is not offered the tools and its text is not read for calls.
    Result<ChatCompletionRequest> none = parseChatCompletionRequest(
        R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "none", )" + tools +
        "}");
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->chat.tools.empty());
    EXPECT_FALSE(none->parseToolCalls);
    EXPECT_FALSE(none->forcedToolCall);
    EXPECT_FALSE(request->forcedToolCall);  // auto
    // required: some call (an empty name); a named function: that one.
    Result<ChatCompletionRequest> required = parseChatCompletionRequest(
        R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required", )" + tools +
        "}");
    ASSERT_TRUE(required);
    EXPECT_EQ(required->forcedToolCall, std::optional<std::string>(""));
    Result<ChatCompletionRequest> named = parseChatCompletionRequest(
        R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "function", "function": {"name": "click"}}, )" +
        tools + "}");
    ASSERT_TRUE(named) << named.status().message();
    EXPECT_EQ(named->forcedToolCall, std::optional<std::string>("click"));
    EXPECT_TRUE(named->parseToolCalls);
}

TEST(OpenAiRequest, DecodesImageDataUrls) {
    const std::vector<std::uint8_t> bytes = {0x89, 'P', 'N', 'G', 0, 1, 2, 255};
    const std::string url = "data:image/png;base64," + agent::base64Encode(bytes);
    Result<ChatCompletionRequest> request = parseChatCompletionRequest(
        R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": ")" +
        url + R"("}}, {"type": "text", "text": "what?"}]}]})");
    ASSERT_TRUE(request) << request.status().message();
    const agent::ContentPart& part = request->chat.messages[0].content[0];
    ASSERT_TRUE(part.isImage());
    EXPECT_EQ(part.image->mimeType, "image/png");
    EXPECT_EQ(part.image->bytes, bytes);
}

TEST(OpenAiRequest, ReadsTextAndTokenPrompts) {
    Result<CompletionRequest> text = parseCompletionRequest(R"({"prompt": "Once", "max_tokens": 3})");
    ASSERT_TRUE(text) << text.status().message();
    EXPECT_FALSE(text->tokenPrompt);
    EXPECT_EQ(text->promptText, "Once");
    Result<CompletionRequest> single = parseCompletionRequest(R"({"prompt": ["Once"]})");
    ASSERT_TRUE(single);
    EXPECT_EQ(single->promptText, "Once");
    Result<CompletionRequest> ids = parseCompletionRequest(R"({"prompt": [1, 2, 300]})");
    ASSERT_TRUE(ids) << ids.status().message();
    EXPECT_TRUE(ids->tokenPrompt);
    EXPECT_EQ(ids->promptTokens, (std::vector<std::int32_t>{1, 2, 300}));
}

// Each bad body, the field its error names, and words of the message.
TEST(OpenAiRequest, ErrorsNameTheField) {
    const struct {
        const char* body;
        const char* field;
        const char* words;
    } cases[] = {
        {"{not json", "body", "not valid JSON"},
        {"[1, 2]", "body", "expected a JSON object"},
        {"{}", "messages", "missing"},
        {R"({"messages": []})", "messages", "non-empty array"},
        {R"({"messages": [{"content": "x"}]})", "messages[0].role", "missing"},
        {R"({"messages": [{"role": "robot", "content": "x"}]})", "messages[0].role", "robot"},
        {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content", "expected"},
        {R"({"messages": [{"role": "user", "content": [{"type": "audio"}]}]})",
         "messages[0].content[0].type", "audio"},
        {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}]}]})",
         "messages[0].content[0].image_url.url", "data URL"},
        {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@@"}}]}]})",
         "messages[0].content[0].image_url.url", "byte 0: not a base64 character"},
        {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})",
         "temperature", "expected a number"},
        {R"({"messages": [{"role": "user", "content": "x"}], "top_p": 2})", "top_p", "from"},
        {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", "max_tokens",
         "from 1"},
        {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 1.5})", "max_tokens",
         "integer"},
        {R"({"messages": [{"role": "user", "content": "x"}], "stop": [1]})", "stop[0]",
         "expected a string"},
        {R"({"messages": [{"role": "user", "content": "x"}], "n": 2})", "n", "from 1 to 1"},
        {R"({"messages": [{"role": "user", "content": "x"}], "stream": "yes"})", "stream",
         "true or false"},
        {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {}}]})",
         "tools[0].function.name", "missing"},
        {R"({"messages": [{"role": "user", "content": "x"}], "tools": {}})", "tools",
         "expected an array"},
        {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "always"})",
         "tool_choice", "expected none, auto, required"},
        {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})",
         "tool_choice", "no tools"},
        {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required", "tools": []})",
         "tool_choice", "empty"},
        {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "code"}, "tools": [{"type": "function", "function": {"name": "f"}}]})",
         "tool_choice.type", "function"},
        {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "function", "function": {}}, "tools": [{"type": "function", "function": {"name": "f"}}]})",
         "tool_choice.function.name", "missing"},
        {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "function", "function": {"name": "g"}}, "tools": [{"type": "function", "function": {"name": "f"}}]})",
         "tool_choice.function.name", "no tool named 'g'"},
    };
    for (const auto& c : cases) {
        Result<ChatCompletionRequest> request = parseChatCompletionRequest(c.body);
        ASSERT_FALSE(request) << c.body;
        EXPECT_EQ(request.status().code(), StatusCode::InvalidArgument) << c.body;
        EXPECT_EQ(errorField(request.status().message()), c.field)
            << c.body << " -> " << request.status().message();
        EXPECT_NE(request.status().message().find(c.words), std::string::npos)
            << c.body << " -> " << request.status().message();
    }
    Result<CompletionRequest> prompt = parseCompletionRequest(R"({"prompt": [1, "x"]})");
    ASSERT_FALSE(prompt);
    EXPECT_EQ(errorField(prompt.status().message()), "prompt[1]");
    Result<CompletionRequest> nested = parseCompletionRequest(R"({"prompt": [[1], [2]]})");
    ASSERT_FALSE(nested);
    EXPECT_EQ(errorField(nested.status().message()), "prompt[0]");
}

}  // namespace
}  // namespace iris::app::serve

namespace iris::app::serve {
namespace {

// Fuzz-style (tests/fuzz/openai_request_fuzz.cpp is the libFuzzer target): valid bodies cut,
// bytes flipped, JSON tokens spliced in; each must parse or fail with a field named, never throw.
TEST(OpenAiRequest, SurvivesRandomMutationsOfValidBodies) {
    const std::vector<std::string> seeds = {
        R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgoA/xA="}}]}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}], "max_tokens": 3, "stop": ["x"], "temperature": 0.5, "seed": 1, "stream": true, "stream_options": {"include_usage": true}})",
        R"({"prompt": [1, 2, 3], "max_completion_tokens": 2, "top_k": 4, "min_p": 0.5})",
        R"({"messages": [{"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "c", "arguments": {"a": 1}}}]}]})"};
    const std::vector<std::string> splices = {"null", "[]", "{}", "\"", "-1", "1e999", "true",
                                              "\"data:,\"", "[[1]]", ",", ":", "\xff"};
    std::mt19937 rng(7);
    int parsed = 0;
    for (int i = 0; i < 4000; ++i) {
        std::string body = seeds[rng() % seeds.size()];
        for (int edits = 1 + int(rng() % 3); edits > 0; --edits) {
            const std::size_t at = rng() % (body.size() + 1);
            switch (rng() % 4) {
                case 0: body.resize(at); break;
                case 1: if (at < body.size()) body[at] = char(rng()); break;
                case 2: body.insert(at, splices[rng() % splices.size()]); break;
                default: if (at < body.size()) body.erase(at, 1 + rng() % 8); break;
            }
        }
        Result<ChatCompletionRequest> chat = parseChatCompletionRequest(body);
        Result<CompletionRequest> completion = parseCompletionRequest(body);
        parsed += (chat ? 1 : 0) + (completion ? 1 : 0);
        for (const Status& status : {chat.status(), completion.status()}) {
            if (status.isOk()) continue;
            EXPECT_EQ(status.code(), StatusCode::InvalidArgument) << body;
            EXPECT_FALSE(errorField(status.message()).empty()) << body << " -> " << status.message();
        }
    }
    EXPECT_GT(parsed, 100);  // the mutations reach past the JSON parser
}

}  // namespace
}  // namespace iris::app::serve
