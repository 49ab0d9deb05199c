// The SSE parser split at every byte, and the OpenAI wire format without a network: base64 against
// RFC 4648's vectors, the request body, and streamed chunks folded into an answer.
#include "agent/clients/sse_parser.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/clients/openai_protocol.h"

namespace iris::agent {
namespace {

std::vector<SseEvent> parseInChunks(std::string_view stream, std::size_t chunk) {
    SseParser parser;
    std::vector<SseEvent> events;
    for (std::size_t i = 0; i < stream.size(); i += chunk)
        EXPECT_TRUE(parser.feed(stream.substr(i, chunk), events).isOk());
    return events;
}

TEST(SseParser, ReadsEventsWhereverTheStreamIsSplit) {
    // \r\n, \r and \n endings, a comment, a multi-line event, a named event, an id, a field
    // without a colon, a value without the optional space, a UTF-8 character and a BOM.
    const std::string stream =
        "\xEF\xBB\xBF: keep-alive\r\n"
        "data: {\"a\":1}\r\n\r\n"
        "event: error\rdata:two\rdata: lines\r\r"
        "id: 7\ndata\n\n"
        "retry: 100\ndata: caf\xC3\xA9 \xE2\x9C\x93\n\n"
        ": only a comment\n\n"
        "data: [DONE]\n\n"
        "data: unfinished";
    for (std::size_t chunk = 1; chunk <= stream.size(); ++chunk) {
        SCOPED_TRACE("chunks of " + std::to_string(chunk) + " bytes");
        const std::vector<SseEvent> events = parseInChunks(stream, chunk);
        ASSERT_EQ(events.size(), 5u);
        EXPECT_EQ(events[0].data, "{\"a\":1}");
        EXPECT_EQ(events[0].type, "message");
        EXPECT_EQ(events[0].number, 1);
        EXPECT_EQ(events[0].offset, stream.find("data: {"));
        EXPECT_EQ(events[1].type, "error");
        EXPECT_EQ(events[1].data, "two\nlines");
        EXPECT_EQ(events[1].offset, stream.find("event: error"));
        EXPECT_EQ(events[2].data, "");
        EXPECT_EQ(events[2].id, "7");
        EXPECT_EQ(events[3].data, "caf\xC3\xA9 \xE2\x9C\x93");
        EXPECT_EQ(events[3].id, "7");  // the last id stays until another one comes
        EXPECT_EQ(events[4].data, "[DONE]");
        EXPECT_EQ(events[4].number, 5);
    }
    SseParser parser;
    std::vector<SseEvent> events;
    ASSERT_TRUE(parser.feed(stream, events).isOk());
    EXPECT_TRUE(parser.hasPartialEvent());
    EXPECT_EQ(parser.bytesSeen(), stream.size());
}

TEST(SseParser, ACrAtTheEndOfAChunkAndALfAtTheStartOfTheNextAreOneLineEnd) {
    SseParser parser;
    std::vector<SseEvent> events;
    ASSERT_TRUE(parser.feed("data: a\r", events).isOk());
    ASSERT_TRUE(parser.feed("\ndata: b\r", events).isOk());
    ASSERT_TRUE(parser.feed("\n\r", events).isOk());
    ASSERT_TRUE(parser.feed("\n", events).isOk());
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].data, "a\nb");
    EXPECT_FALSE(parser.hasPartialEvent());
}

TEST(SseParser, RefusesAnEventThatNeverEnds) {
    SseParser parser;
    std::vector<SseEvent> events;
    const std::string line = "data: " + std::string(1 << 20, 'x') + "\n";
    Status status;
    for (int i = 0; i < 20 && status.isOk(); ++i)
        status = parser.feed(line, events);
    ASSERT_FALSE(status.isOk());
    EXPECT_EQ(status.code(), StatusCode::Corrupt);
    EXPECT_NE(status.message().find("an event longer than"), std::string::npos);
    EXPECT_FALSE(parser.feed("\n\n", events).isOk());  // stays failed
    EXPECT_TRUE(events.empty());
}

TEST(OpenAiProtocol, Base64MatchesTheRfc4648Vectors) {
    const std::pair<std::string, std::string> vectors[] = {{"", ""},
                                                           {"f", "Zg=="},
                                                           {"fo", "Zm8="},
                                                           {"foo", "Zm9v"},
                                                           {"foob", "Zm9vYg=="},
                                                           {"fooba", "Zm9vYmE="},
                                                           {"foobar", "Zm9vYmFy"}};
    for (const auto& [plain, encoded] : vectors) {
        const std::vector<std::uint8_t> bytes(plain.begin(), plain.end());
        EXPECT_EQ(base64Encode(bytes), encoded) << plain;
    }
    // Bytes above 0x7f and zeros (Python's base64.b64encode gives the same).
    const std::vector<std::uint8_t> png = {0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a,
                                           0x1a, 0x0a, 0x00, 0xff, 0x10};
    EXPECT_EQ(base64Encode(png), "iVBORw0KGgoA/xA=");
}

TEST(OpenAiProtocol, Base64DecodeInvertsTheRfc4648VectorsAndNamesBadBytes) {
    const std::pair<std::string, std::string> vectors[] = {
        {"", ""},         {"f", "Zg=="},       {"fo", "Zm8="},         {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}, {"fo", "Zm8"}};
    for (const auto& [plain, encoded] : vectors) {
        Result<std::vector<std::uint8_t>> bytes = base64Decode(encoded);
        ASSERT_TRUE(bytes) << encoded << ": " << bytes.status().message();
        EXPECT_EQ(std::string(bytes->begin(), bytes->end()), plain) << encoded;
    }
    // Every byte value round-trips through the encoder.
    std::vector<std::uint8_t> all(256);
    for (int i = 0; i < 256; ++i)
        all[std::size_t(i)] = std::uint8_t(i);
    EXPECT_EQ(*base64Decode(base64Encode(all)), all);
    const std::pair<std::string, std::string> bad[] = {
        {"Zm9v!A==", "byte 4: not a base64 character"},
        {"Zm=v", "byte 2: not a base64 character"},
        {"Z", "1 characters is not the length of any encoding"},
        {"Zm9vY", "5 characters is not the length of any encoding"}};
    for (const auto& [text, message] : bad) {
        Result<std::vector<std::uint8_t>> bytes = base64Decode(text);
        ASSERT_FALSE(bytes) << text;
        EXPECT_NE(bytes.status().message().find(message), std::string::npos)
            << text << ": " << bytes.status().message();
    }
}

TEST(OpenAiProtocol, TheRequestBodyCarriesMessagesImagesToolsAndSampling) {
    ChatRequest request;
    request.messages.push_back(ChatMessage::text("system", "Be brief."));
    ChatMessage user;
    user.role = "user";
    auto image = std::make_shared<EncodedImage>();
    image->mimeType = "image/png";
    image->bytes = {0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0x10};
    user.content.push_back({"What is on screen?", nullptr});
    user.content.push_back({"", image});
    request.messages.push_back(user);
    ChatMessage assistant;
    assistant.role = "assistant";
    assistant.toolCalls.push_back({"call_1", "click", R"({"x":1,"y":2})"});
    request.messages.push_back(assistant);
    ChatMessage tool = ChatMessage::text("tool", "clicked");
    tool.toolCallId = "call_1";
    request.messages.push_back(tool);
    request.tools.push_back({"click", "Click at a point", R"({"type":"object"})"});
    request.maxTokens = 64;
    request.temperature = 0.5;
    request.topP = 0.9;
    request.seed = 42;
    request.stop = {"<|im_end|>"};

    Result<std::string> body = chatCompletionBody(request, "ui-tars", true);
    ASSERT_TRUE(body) << body.status().message();
    const nlohmann::json json = nlohmann::json::parse(*body);
    EXPECT_EQ(json["model"], "ui-tars");
    EXPECT_EQ(json["messages"][0], nlohmann::json({{"role", "system"}, {"content", "Be brief."}}));
    EXPECT_EQ(json["messages"][1]["content"][0],
              nlohmann::json({{"type", "text"}, {"text", "What is on screen?"}}));
    EXPECT_EQ(json["messages"][1]["content"][1]["image_url"]["url"],
              "data:image/png;base64,iVBORw0KGgoA/xA=");
    EXPECT_TRUE(json["messages"][2]["content"].is_null());
    EXPECT_EQ(json["messages"][2]["tool_calls"][0],
              nlohmann::json::parse(R"({"id":"call_1","type":"function",
                  "function":{"name":"click","arguments":"{\"x\":1,\"y\":2}"}})"));
    EXPECT_EQ(json["messages"][3]["tool_call_id"], "call_1");
    EXPECT_EQ(json["tools"][0], nlohmann::json::parse(R"({"type":"function","function":{
        "name":"click","description":"Click at a point","parameters":{"type":"object"}}})"));
    EXPECT_EQ(json["max_tokens"], 64);
    EXPECT_EQ(json["temperature"], 0.5);
    EXPECT_EQ(json["top_p"], 0.9);
    EXPECT_EQ(json["seed"], 42);
    EXPECT_EQ(json["stop"], nlohmann::json::array({"<|im_end|>"}));
    EXPECT_EQ(json["stream"], true);
    EXPECT_EQ(json["stream_options"]["include_usage"], true);

    request.tools[0].parametersSchema = "{not json";
    const Result<std::string> bad = chatCompletionBody(request, "m", false);
    EXPECT_EQ(bad.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(bad.status().message().find("tool 'click'"), std::string::npos);
}

SseEvent event(std::string data, int number = 1, std::size_t offset = 0) {
    SseEvent e;
    e.data = std::move(data);
    e.number = number;
    e.offset = offset;
    return e;
}

TEST(OpenAiProtocol, StreamedChunksFoldIntoTextToolCallsAndUsage) {
    ChatCompletionStream stream;
    std::string delta, text;
    const char* chunks[] = {
        R"({"model":"m1","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})",
        R"({"choices":[{"index":0,"delta":{"content":"Hel"}}]})",
        R"({"choices":[{"index":0,"delta":{"content":"lo"}}]})",
        R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"type","arguments":"{}"}}]}}]})",
        R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"click","arguments":"{\"x\":"}}]}}]})",
        R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"3}"}}]}}]})",
        R"({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})",
        R"({"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}})",
        "[DONE]",
        R"({"choices":[{"index":0,"delta":{"content":"ignored after DONE"}}]})"};
    for (const char* chunk : chunks) {
        ASSERT_TRUE(stream.onEvent(event(chunk), delta).isOk()) << chunk;
        text += delta;
    }
    EXPECT_TRUE(stream.sawDone());
    const ChatResponse response = stream.response();
    EXPECT_EQ(text, "Hello");
    EXPECT_EQ(response.text, "Hello");
    EXPECT_EQ(response.model, "m1");
    EXPECT_EQ(response.finishReason, "tool_calls");
    EXPECT_EQ(response.promptTokens, 11);
    EXPECT_EQ(response.completionTokens, 7);
    ASSERT_EQ(response.toolCalls.size(), 2u);
    EXPECT_EQ(response.toolCalls[0].id, "a");
    EXPECT_EQ(response.toolCalls[0].name, "click");
    EXPECT_EQ(response.toolCalls[0].arguments, R"({"x":3})");
    EXPECT_EQ(response.toolCalls[1].name, "type");
}

TEST(OpenAiProtocol, BadChunksNameTheEventAndOffset) {
    std::string delta;
    ChatCompletionStream malformed;
    Status status = malformed.onEvent(event("{\"choices\": [", 4, 312), delta);
    EXPECT_EQ(status.code(), StatusCode::Corrupt);
    EXPECT_EQ(status.message().rfind("event 4 (byte 312): malformed JSON", 0), 0u)
        << status.message();

    ChatCompletionStream wrongType;
    status = wrongType.onEvent(event(R"({"choices":[{"delta":{"content":5}}]})", 2, 9), delta);
    EXPECT_EQ(status.message(), "event 2 (byte 9): choices[0].delta.content is not a string");

    ChatCompletionStream farIndex;
    status = farIndex.onEvent(event(R"({"choices":[{"delta":{"tool_calls":[{"index":100000}]}}]})"),
                              delta);
    EXPECT_EQ(status.code(), StatusCode::Corrupt);

    ChatCompletionStream serverError;
    status = serverError.onEvent(
        event(R"({"error":{"message":"model overloaded","type":"server_error"}})", 3, 40), delta);
    EXPECT_EQ(status.code(), StatusCode::IoError);
    EXPECT_EQ(status.message(),
              "event 3 (byte 40): the server reported an error: model overloaded (type "
              "server_error)");
}

TEST(OpenAiProtocol, AWholeResponseIsReadLikeAStreamedOne) {
    const Result<ChatResponse> response = parseChatCompletion(R"({
        "model":"m2","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",
        "content":"Done.","tool_calls":[{"id":"c","type":"function",
        "function":{"name":"done","arguments":{"ok":true}}}]}}],
        "usage":{"prompt_tokens":3,"completion_tokens":2}})");
    ASSERT_TRUE(response) << response.status().message();
    EXPECT_EQ(response->text, "Done.");
    EXPECT_EQ(response->model, "m2");
    EXPECT_EQ(response->finishReason, "stop");
    EXPECT_EQ(response->promptTokens, 3);
    ASSERT_EQ(response->toolCalls.size(), 1u);
    EXPECT_EQ(response->toolCalls[0].arguments, R"({"ok":true})");

    EXPECT_EQ(parseChatCompletion("<html>").status().code(), StatusCode::Corrupt);
    EXPECT_EQ(parseChatCompletion(R"({"choices":[]})").status().message(),
              "the response has no choices");
}

}  // namespace
}  // namespace iris::agent
