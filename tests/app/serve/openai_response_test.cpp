// Model answers read back into content, reasoning and tool calls on fixed model text (a tiny
// random model never writes a tool call), and the JSON shapes clients parse.
#include "app/serve/openai_response.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "inference/chat_template.h"

namespace iris::app::serve {
namespace {

using Json = nlohmann::json;

const std::vector<std::string> kTools = {
    R"({"type":"function","function":{"name":"type_text","parameters":{"type":"object","properties":{"text":{"type":"string"}}}}})",
    R"({"type":"function","function":{"name":"click","parameters":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}}}}})"};

TEST(ChatAnswer, QwenToolCallsBecomeToolCallsAndTheRestContent) {
    const std::string text =
        "I will click.\n<tool_call>\n{\"name\": \"click\", \"arguments\": {\"x\": 10, \"y\": 20}}\n"
        "</tool_call>\n<tool_call>\n{\"name\": \"type_text\", \"arguments\": \"{\\\"text\\\": \\\"hi\\\"}\"}\n"
        "</tool_call>";
    const ChatAnswer answer = readChatAnswer(text, true, false, kTools, "abc");
    EXPECT_EQ(answer.content, "I will click.");
    ASSERT_EQ(answer.toolCalls.size(), 2u);
    EXPECT_EQ(answer.toolCalls[0].id, "call_abc_0");
    EXPECT_EQ(answer.toolCalls[0].name, "click");
    EXPECT_EQ(Json::parse(answer.toolCalls[0].arguments), Json::parse(R"({"x": 10, "y": 20})"));
    EXPECT_EQ(answer.toolCalls[1].id, "call_abc_1");
    EXPECT_EQ(answer.toolCalls[1].arguments, R"({"text": "hi"})");  // a quoted object, verbatim
    const Json json = Json::parse(chatCompletionJson({"id", "m", 1}, answer, "tool_calls", {}));
    const Json& message = json["choices"][0]["message"];
    EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "click");
    EXPECT_EQ(message["tool_calls"][0]["type"], "function");
    EXPECT_EQ(json["choices"][0]["finish_reason"], "tool_calls");
}

TEST(ChatAnswer, AnUnclosedLastBlockIsACallAndNoArgumentsAreAnEmptyObject) {
    const ChatAnswer answer =
        readChatAnswer("<tool_call>{\"name\": \"click\"}", true, false, kTools, "x");
    ASSERT_EQ(answer.toolCalls.size(), 1u);
    EXPECT_EQ(answer.toolCalls[0].arguments, "{}");
    // Only calls: content is sent as null.
    const Json json = Json::parse(chatCompletionJson({"id", "m", 1}, answer, "tool_calls", {}));
    EXPECT_TRUE(json["choices"][0]["message"]["content"].is_null());
}

TEST(ChatAnswer, MiniMaxM3CallsAndReasoning) {
    const std::string ns(inference::kMiniMaxNamespace);
    const std::string text = "<mm:think>Type it.</mm:think>\nTyping.\n" + ns + "<tool_call>\n" +
                             ns + "<invoke name=\"type_text\">" + ns + "<text>42" + ns +
                             "</text>" + ns + "</invoke>\n" + ns + "</tool_call>";
    const ChatAnswer answer = readChatAnswer(text, true, true, kTools, "m");
    EXPECT_EQ(answer.reasoning, "Type it.");
    EXPECT_EQ(answer.content, "Typing.");
    ASSERT_EQ(answer.toolCalls.size(), 1u);
    EXPECT_EQ(answer.toolCalls[0].name, "type_text");
    EXPECT_EQ(answer.toolCalls[0].arguments, R"({"text":"42"})");  // the schema says string
    const Json json = Json::parse(chatCompletionJson({"id", "m", 1}, answer, "tool_calls", {}));
    EXPECT_EQ(json["choices"][0]["message"]["reasoning_content"], "Type it.");
    // Without tools offered, MiniMax-M3's reasoning is still split off.
    const ChatAnswer thought = readChatAnswer("a\n</mm:think>\nb", false, true, {}, "m");
    EXPECT_EQ(thought.reasoning, "a");
    EXPECT_EQ(thought.content, "b");
}

TEST(ChatAnswer, TextStaysWholeWhenACallDoesNotParseOrToolsWereNotOffered) {
    const std::string broken = "Hm <tool_call>{\"name\": </tool_call> ok";
    EXPECT_EQ(readChatAnswer(broken, true, false, kTools, "x").content, broken);
    EXPECT_TRUE(readChatAnswer(broken, true, false, kTools, "x").toolCalls.empty());
    const std::string call = "<tool_call>{\"name\": \"click\"}</tool_call>";
    EXPECT_EQ(readChatAnswer(call, false, false, {}, "x").content, call);
    // Plain text is the content byte for byte (no trimming).
    EXPECT_EQ(readChatAnswer("  two words \n", true, false, kTools, "x").content, "  two words \n");
}

TEST(OpenAiResponse, UsageCarriesCachedTokensAndChunksHaveTheirObjects) {
    const ResponseHead head{"chatcmpl-1", "tiny.gguf", 123};
    const Json whole = Json::parse(chatCompletionJson(head, {"hello", {}, {}}, "stop", {7, 2, 5}));
    EXPECT_EQ(whole["object"], "chat.completion");
    EXPECT_EQ(whole["usage"]["prompt_tokens"], 7);
    EXPECT_EQ(whole["usage"]["completion_tokens"], 2);
    EXPECT_EQ(whole["usage"]["total_tokens"], 9);
    EXPECT_EQ(whole["usage"]["prompt_tokens_details"]["cached_tokens"], 5);
    const Json chunk = Json::parse(chatChunkJson(head, contentDeltaJson("he")));
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    EXPECT_EQ(chunk["choices"][0]["delta"]["content"], "he");
    EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
    const Json usage = Json::parse(usageChunkJson(head, "chat.completion.chunk", {7, 2, 5}));
    EXPECT_TRUE(usage["choices"].empty());
    EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 5);
    const Json text = Json::parse(completionJson(head, "abc", "length", {1, 3, 0}));
    EXPECT_EQ(text["object"], "text_completion");
    EXPECT_EQ(text["choices"][0]["text"], "abc");
    EXPECT_EQ(text["choices"][0]["finish_reason"], "length");
    // Invalid UTF-8 from a cut character becomes a replacement character, not an exception.
    const Json cut = Json::parse(completionChunkJson(head, "\xe2\x82"));
    EXPECT_TRUE(cut["choices"][0]["text"].is_string());
}

TEST(OpenAiResponse, ErrorsHaveOpenAisShape) {
    const Json error = Json::parse(errorJson("messages: missing", "invalid_request_error",
                                             "messages"));
    EXPECT_EQ(error["error"]["message"], "messages: missing");
    EXPECT_EQ(error["error"]["type"], "invalid_request_error");
    EXPECT_EQ(error["error"]["param"], "messages");
    EXPECT_TRUE(error["error"]["code"].is_null());
}

}  // namespace
}  // namespace iris::app::serve
