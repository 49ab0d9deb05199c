#pragma once
// The JSON the server answers with, without any I/O: chat.completion and text_completion objects,
// their streamed chunks, usage, OpenAI-style errors, and a model's answer read back into content,
// reasoning and tool calls.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/clients/chat.h"
#include "inference/engine.h"

namespace iris::app::serve {

struct Usage {
    std::int64_t promptTokens = 0;
    std::int64_t completionTokens = 0;
    std::int64_t cachedTokens = 0;  // of promptTokens, those whose K/V came from the prefix cache
};

// What the API returns for the generated text.
struct ChatAnswer {
    std::string content;    // "" with tool calls and nothing else said: sent as null
    std::string reasoning;  // MiniMax-M3's reasoning, sent as reasoning_content
    std::vector<agent::ToolCall> toolCalls;
};

// With `parseToolCalls` (tools were offered) or for MiniMax-M3 (`miniMax`, whose reasoning is
// split off), the text read by inference::parseModelAnswer with `toolsJson` typing M3's
// parameters; calls get ids "call_<idPrefix>_<n>". When any call does not parse, the whole text
// is the content and there are no calls, so that nothing the model wrote is lost. Otherwise the
// content is the text as generated.
ChatAnswer readChatAnswer(std::string_view text, bool parseToolCalls, bool miniMax,
                          const std::vector<std::string>& toolsJson, std::string_view idPrefix);

// "stop", "length" or "tool_calls" (a finished answer with calls).
const char* finishReason(inference::StopReason reason, bool toolCalls);

// One response's fixed parts.
struct ResponseHead {
    std::string id;  // chatcmpl-... or cmpl-...
    std::string model;
    std::int64_t created = 0;  // Unix seconds
};

std::string chatCompletionJson(const ResponseHead& head, const ChatAnswer& answer,
                               const char* finishReason, const Usage& usage);
// A chat.completion.chunk: `delta` is a JSON object's text ({"content": "..."}), or the final
// chunk's empty delta with its finish reason.
std::string chatChunkJson(const ResponseHead& head, std::string_view deltaJson,
                          const char* finishReason = nullptr);
// The delta objects: the first chunk's role and a text piece.
std::string roleDeltaJson();
std::string contentDeltaJson(std::string_view text);
// A streamed piece of reasoning ({"reasoning_content": "..."}), and one whole tool call at
// `index` of the answer's calls ({"tool_calls": [{"index", "id", "type", "function"}]}).
std::string reasoningDeltaJson(std::string_view text);
std::string toolCallDeltaJson(const agent::ToolCall& call, int index);
// The last chunk of a stream whose request asked for stream_options.include_usage: no choices.
std::string usageChunkJson(const ResponseHead& head, const char* object, const Usage& usage);

std::string completionJson(const ResponseHead& head, std::string_view text,
                           const char* finishReason, const Usage& usage);
std::string completionChunkJson(const ResponseHead& head, std::string_view text,
                                const char* finishReason = nullptr);

// {"error": {"message", "type", "param", "code"}}; empty param and code are null.
std::string errorJson(std::string_view message, std::string_view type, std::string_view param = {},
                      std::string_view code = {});

}  // namespace iris::app::serve
