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
//   MiniMax-M3          ]~!b[ then ]~b]role⏎ ... [e~[⏎ turns (roles system, developer, user, ai,
//                       tool); a fixed system block (identity and thinking mode), the caller's
//                       system prompt and the tools in a developer block, tool calls as
//                       ]<]minimax[>[-prefixed XML (parameters as elements), tool results as
//                       <response></response> lines of one tool turn, each image as
//                       ]<]start of image[>[]<]image[>[]<]end of image[>[, earlier answers
//                       without their reasoning (see docs/minimax-m3.md section 5)

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace iris::inference {

class GgufFile;

enum class ChatTemplateKind { Qwen2, Qwen2Vl, Qwen3, MiniMaxM3 };

// The kinds by name, as the model catalogue and options spell them: "qwen2", "qwen2-vl",
// "qwen3", "minimax-m3".
std::string_view chatTemplateKindName(ChatTemplateKind kind);
std::optional<ChatTemplateKind> chatTemplateKindFromName(std::string_view name);

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
    bool enableThinking = false;  // Qwen3, MiniMax-M3 (thinking mode "enabled" or "disabled")
    // MiniMax-M3 only: thinking mode "adaptive", the model decides per turn whether to think (its
    // template's default). Takes precedence over enableThinking.
    bool adaptiveThinking = false;
};

class ChatTemplate {
public:
    explicit ChatTemplate(ChatTemplateKind kind) : m_kind(kind) {}

    // The kind for a model file: from tokenizer.chat_template when present (the wording of the
    // Qwen templates differs just enough), else from general.architecture. Unsupported when the
    // file is not a Qwen-family model.
    static Result<ChatTemplate> forModel(const GgufFile& file);

    ChatTemplateKind kind() const { return m_kind; }

    // The token text render() writes once per image, which the engine replaces by the image's
    // embeddings: "<|image_pad|>" (Qwen) or "]<]image[>[" (MiniMax-M3).
    std::string_view imagePlaceholder() const;

    // The prompt text; special tokens appear as text ("<|im_start|>") and must be encoded with
    // parseSpecial. InvalidArgument for a tool call whose arguments are not a JSON object or a
    // malformed tool description.
    Result<std::string> render(const std::vector<ChatMessage>& messages,
                               const ChatOptions& options) const;

    // The text that opens a tool call in this template's syntax, naming `toolName` unless it is
    // empty: a server appends it to the generation prompt so that the model's answer is a call
    // (OpenAI's tool_choice "required", or a named function), and reads the answer as this text
    // followed by what was generated. Qwen: `<tool_call>\n{"name": "N", "arguments": `;
    // MiniMax-M3: NS<tool_call>\nNS<invoke name="N">. Both start at a special token, so
    // encoding it apart from the prompt gives the tokens the joined text would.
    std::string toolCallOpening(std::string_view toolName) const;

private:
    ChatTemplateKind m_kind;
};

// MiniMax-M3 writes this special token before every tag of its tool-call XML.
inline constexpr std::string_view kMiniMaxNamespace = "]<]minimax[>[";

// A MiniMax-M3 answer, taken apart. Byte offsets in `errors` count from the start of the text
// given to parseMiniMaxM3Output.
struct MiniMaxM3Output {
    std::string reasoning;  // inside <mm:think>...</mm:think>, trimmed; empty when none
    std::string content;    // the text outside reasoning and tool-call blocks, trimmed
    // In the order written; argumentsJson is compact JSON of an object (invalid UTF-8 in the
    // model's text replaced by U+FFFD). A call whose XML is malformed is left out, with an error.
    std::vector<ChatToolCall> toolCalls;
    std::vector<std::string> errors;  // "byte 57: expected ... (found '...')"
};

// Parses what MiniMax-M3 generated after the generation prompt (without the final [e~[; one
// there is ignored). Reasoning is the text before the first </mm:think>, after an optional
// <mm:think> (with thinking enabled the prompt already opened it). Tool calls are
//   NS<tool_call> NS<invoke name="N"> NS<param>value NS</param> ... NS</invoke> ... NS</tool_call>
// with NS = kMiniMaxNamespace and any whitespace between elements; a value is text, or elements:
// NS<item> children make an array, other names an object. `toolsJson` (the descriptions given to
// render, OpenAI's {"type": "function", "function": {...}} or the bare function object) type the
// values as llama.cpp does: a parameter the schema calls a string is its text verbatim; otherwise
// text that reads as a JSON number, boolean, null, object or array is that value, other text a
// string. Never fails and never throws: any bytes parse, problems become errors.
MiniMaxM3Output parseMiniMaxM3Output(std::string_view text,
                                     const std::vector<std::string>& toolsJson = {});

// JSON re-serialised the way Python's json.dumps(value, ensure_ascii=False) writes it (", " and
// ": " separators, keys in their original order): what the templates' `tojson` filter prints.
Result<std::string> pythonStyleJson(const std::string& json);

}  // namespace iris::inference
