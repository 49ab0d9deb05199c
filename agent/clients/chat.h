#pragma once
// A model conversation as data, independent of who answers it (the local engine, an
// OpenAI-compatible server, a recording). Images are encoded bytes (PNG or JPEG), shared so that a
// history of screenshots is not copied for every request.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace iris::agent {

struct EncodedImage {
    std::string mimeType;  // "image/png" or "image/jpeg"
    std::vector<std::uint8_t> bytes;
    int width = 0;
    int height = 0;
};

struct ContentPart {
    std::string text;                           // a text part when image is null
    std::shared_ptr<const EncodedImage> image;  // an image part otherwise
    bool isImage() const { return image != nullptr; }
};

// A function the model called: OpenAI's tool_calls entry, or Qwen's <tool_call> JSON.
struct ToolCall {
    std::string id;         // may be empty (Qwen's format has none)
    std::string name;
    std::string arguments;  // a JSON object as text, exactly as the model produced it
};

struct ChatMessage {
    std::string role;  // "system", "user", "assistant", "tool"
    std::vector<ContentPart> content;
    std::vector<ToolCall> toolCalls;  // assistant messages that called tools
    std::string toolCallId;           // tool messages: the call they answer

    static ChatMessage text(std::string role, std::string text) {
        ChatMessage m;
        m.role = std::move(role);
        m.content.push_back({std::move(text), nullptr});
        return m;
    }
};

// A function offered to the model (OpenAI "tools" with type "function").
struct ToolDefinition {
    std::string name;
    std::string description;
    std::string parametersSchema;  // a JSON Schema object as text
};

struct ChatRequest {
    std::vector<ChatMessage> messages;
    std::vector<ToolDefinition> tools;
    int maxTokens = 1024;
    double temperature = 0.0;
    double topP = 1.0;
    std::optional<std::uint64_t> seed;
    std::vector<std::string> stop;
};

struct ChatResponse {
    std::string text;  // the assistant's content (empty when it only called tools)
    std::vector<ToolCall> toolCalls;
    std::string finishReason;  // "stop", "length", "tool_calls", "cancelled"
    std::string model;         // what the server says it ran
    int promptTokens = 0;
    int completionTokens = 0;
    double latencyMs = 0;           // request sent -> last byte
    double timeToFirstTokenMs = 0;  // request sent -> first streamed text (0 when not streamed)
};

}  // namespace iris::agent
