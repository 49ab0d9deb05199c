#pragma once
// The bodies of POST /v1/chat/completions and /v1/completions read into typed requests, without
// any I/O, so that they can be tested and fuzzed without sockets. Errors are InvalidArgument and
// start with the path of the field at fault ("messages[2].content[0].image_url.url: ..."), which
// the server reports as the error's "param".
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/clients/chat.h"
#include "base/status.h"
#include "inference/sampler.h"

namespace iris::app::serve {

// What both endpoints share: how much to generate, how to sample, how to answer.
struct GenerationSettings {
    std::optional<std::int64_t> maxTokens;  // max_tokens / max_completion_tokens; unset: the
                                            // rest of the context
    std::vector<std::string> stop;
    // OpenAI's defaults where it has them (temperature 1, top_p 1), the rest off; seed from the
    // request or drawn per request.
    inference::SamplingParams sampling;
    bool stream = false;
    bool includeUsage = false;  // stream_options.include_usage
};

struct ChatCompletionRequest {
    agent::ChatRequest chat;  // messages (images as decoded data-URL bytes) and tools
    bool parseToolCalls = false;  // tools offered and tool_choice is not "none"
    // tool_choice "required" (an empty name) or {"type": "function", "function": {"name": N}}:
    // the answer is made to open a call (inference::ChatTemplate::toolCallOpening).
    std::optional<std::string> forcedToolCall;
    GenerationSettings settings;
};

struct CompletionRequest {
    std::string promptText;                // when the prompt is text
    std::vector<std::int32_t> promptTokens;  // when it is token ids
    bool tokenPrompt = false;
    GenerationSettings settings;
};

Result<ChatCompletionRequest> parseChatCompletionRequest(std::string_view body);
Result<CompletionRequest> parseCompletionRequest(std::string_view body);

// The bytes of a data URL ("data:image/png;base64,..."); `field` names it in errors. Other URLs
// are refused: the server fetches nothing on a client's behalf.
Result<std::vector<std::uint8_t>> decodeDataUrl(std::string_view url, const std::string& field);

// The field path an error message of these parsers starts with ("messages[0].role"), or "" when
// the message names none.
std::string errorField(std::string_view message);

}  // namespace iris::app::serve
