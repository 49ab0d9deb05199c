#pragma once
// Chat templates of the Qwen family, rendered natively (no Jinja interpreter): the text the
// model's own tokenizer.chat_template would produce for the same messages, tools and images.
//
//   Qwen2 / Qwen2.5     ChatML, default system "You are Qwen, created by Alibaba Cloud. You are a
//                       helpful assistant.", tools in <tools></tools>, calls in
//                       <tool_call></tool_call>, tool results as a user turn of
//                       <tool_response></tool_response> blocks
//   Qwen2-VL / 2.5-VL   the same, default system "You are a helpful assistant.", each image as
//   (UI-TARS-1.5)       <|vision_start|><|image_pad|><|vision_end|> where it stands in the content
//   Qwen3               no default system; an empty <think></think> block opens the answer when
//                       thinking is off

#include <string>
#include <vector>

#include "inference/status.h"

namespace iris::inference {

class GgufFile;

enum class ChatTemplateKind { Qwen2, Qwen2Vl, Qwen3 };

// A message's content is text with images at the positions of kImageMarker.
inline constexpr const char* kImageMarker = "<__media__>";

struct ChatToolCall {
    std::string name;
    std::string argumentsJson;  // a JSON object, as the model or the API wrote it
};

struct ChatMessage {
    std::string role;  // system, user, assistant, tool
    std::string content;
    std::vector<ChatToolCall> toolCalls;  // assistant messages
};

struct ChatOptions {
    std::vector<std::string> toolsJson;  // one JSON object per tool (OpenAI "function" schema)
    bool addGenerationPrompt = true;
    bool enableThinking = false;  // Qwen3
};

class ChatTemplate {
public:
    explicit ChatTemplate(ChatTemplateKind kind) : m_kind(kind) {}

    // The kind for a model file: from tokenizer.chat_template when present (the wording of the
    // Qwen templates differs just enough), else from general.architecture. Unsupported when the
    // file is not a Qwen-family model.
    static Result<ChatTemplate> forModel(const GgufFile& file);

    ChatTemplateKind kind() const { return m_kind; }

    // The prompt text; special tokens appear as text ("<|im_start|>") and must be encoded with
    // parseSpecial. InvalidArgument for a tool call whose arguments are not a JSON object or a
    // malformed tool description.
    Result<std::string> render(const std::vector<ChatMessage>& messages,
                               const ChatOptions& options) const;

private:
    ChatTemplateKind m_kind;
};

// JSON re-serialised the way Python's json.dumps(value, ensure_ascii=False) writes it (", " and
// ": " separators, keys in their original order): what the templates' `tojson` filter prints.
Result<std::string> pythonStyleJson(const std::string& json);

}  // namespace iris::inference
