#pragma once
// The OpenAI chat-completions wire format, without any I/O: the request body for a ChatRequest,
// and the response read back either whole (stream=false) or as the chunks of a stream. Errors
// name the event number and byte offset (streams) or the JSON field (bodies).
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/clients/chat.h"
#include "agent/clients/sse_parser.h"
#include "base/status.h"

namespace iris::agent {

// Standard base64 (RFC 4648, with padding).
std::string base64Encode(std::span<const std::uint8_t> bytes);
// Its inverse. Padding may be left out; InvalidArgument names the byte offset of the first
// character outside the alphabet, misplaced padding or a length no encoding has.
Result<std::vector<std::uint8_t>> base64Decode(std::string_view text);

// A tool as OpenAI describes it: {"type":"function","function":{name, description,
// parameters}}. InvalidArgument when parametersSchema is not a JSON object (empty means {}).
Result<std::string> openAiToolJson(const ToolDefinition& tool);

// The JSON body of POST /chat/completions. Images become data URLs in image_url parts; tools
// are "function" tools. InvalidArgument names the message, part or tool that cannot be sent.
Result<std::string> chatCompletionBody(const ChatRequest& request, const std::string& model,
                                       bool stream);

// A whole (non-streamed) chat.completion object. Corrupt when it is not one; IoError with the
// server's message for an {"error": ...} body.
Result<ChatResponse> parseChatCompletion(std::string_view body);

// Folds the events of a streamed answer (chat.completion.chunk objects, then [DONE]) into a
// ChatResponse. Not thread-safe; one per response.
class ChatCompletionStream {
public:
    // Tool calls with an index at or above this are refused as corrupt.
    static constexpr int kMaxToolCalls = 256;

    // Takes one event; `textDelta` receives the content it adds (often empty). Corrupt for a
    // malformed chunk, IoError for an error the server reports inside the stream.
    Status onEvent(const SseEvent& event, std::string& textDelta);

    bool sawDone() const { return m_done; }  // the [DONE] sentinel arrived
    bool sawFinishReason() const { return !m_response.finishReason.empty(); }
    int events() const { return m_events; }

    // The answer so far: text, tool calls in index order, finish reason, usage, model.
    ChatResponse response() const;

private:
    Status chunk(const SseEvent& event, std::string& textDelta);

    ChatResponse m_response;
    std::map<int, ToolCall> m_toolCalls;
    bool m_done = false;
    int m_events = 0;
};

}  // namespace iris::agent
