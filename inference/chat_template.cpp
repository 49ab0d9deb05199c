#include "inference/chat_template.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "inference/gguf/gguf_file.h"

namespace iris::inference {
namespace {

using Json = nlohmann::ordered_json;

void appendPythonString(std::string& out, const std::string& s) {
    out.push_back('"');
    for (char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char escaped[8];
                    std::snprintf(escaped, sizeof escaped, "\\u%04x",
                                  unsigned(static_cast<unsigned char>(c)));
                    out += escaped;
                } else {
                    out.push_back(c);  // ensure_ascii=False: UTF-8 passes through
                }
        }
    }
    out.push_back('"');
}

void appendPython(std::string& out, const Json& value) {
    switch (value.type()) {
        case Json::value_t::object: {
            out.push_back('{');
            bool first = true;
            for (const auto& [key, item] : value.items()) {
                if (!first) out += ", ";
                first = false;
                appendPythonString(out, key);
                out += ": ";
                appendPython(out, item);
            }
            out.push_back('}');
            return;
        }
        case Json::value_t::array: {
            out.push_back('[');
            for (std::size_t i = 0; i < value.size(); ++i) {
                if (i > 0) out += ", ";
                appendPython(out, value[i]);
            }
            out.push_back(']');
            return;
        }
        case Json::value_t::string:
            appendPythonString(out, value.get<std::string>());
            return;
        case Json::value_t::boolean:
            out += value.get<bool>() ? "true" : "false";
            return;
        case Json::value_t::null:
            out += "null";
            return;
        default:
            out += value.dump();
            return;  // numbers
    }
}

const char* defaultSystem(ChatTemplateKind kind) {
    switch (kind) {
        case ChatTemplateKind::Qwen2:
            return "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";
        case ChatTemplateKind::Qwen2Vl:
            return "You are a helpful assistant.";
        case ChatTemplateKind::Qwen3:
            return nullptr;
    }
    return nullptr;
}

std::string replaceImages(const std::string& content) {
    static const std::string marker = kImageMarker;
    std::string out;
    std::size_t from = 0;
    for (std::size_t at; (at = content.find(marker, from)) != std::string::npos;
         from = at + marker.size()) {
        out.append(content, from, at - from);
        out += "<|vision_start|><|image_pad|><|vision_end|>";
    }
    out.append(content, from, std::string::npos);
    return out;
}

}  // namespace

Result<std::string> pythonStyleJson(const std::string& json) {
    const Json value = Json::parse(json, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded())
        return Status::invalidArgument("not valid JSON: " + json.substr(0, 80));
    std::string out;
    appendPython(out, value);
    return out;
}

Result<ChatTemplate> ChatTemplate::forModel(const GgufFile& file) {
    if (Result<std::string> text = file.getString("tokenizer.chat_template")) {
        if (text->find("<|im_start|>") == std::string::npos) {
            return Status::unsupported(file.name() +
                                       ": tokenizer.chat_template is not a ChatML (Qwen) template");
        }
        if (text->find("<think>") != std::string::npos)
            return ChatTemplate(ChatTemplateKind::Qwen3);
        if (text->find("vision_start") != std::string::npos)
            return ChatTemplate(ChatTemplateKind::Qwen2Vl);
        return ChatTemplate(ChatTemplateKind::Qwen2);
    }
    Result<std::string> arch = file.getString("general.architecture");
    if (!arch) return arch.status();
    if (*arch == "qwen2") return ChatTemplate(ChatTemplateKind::Qwen2);
    if (*arch == "qwen2vl") return ChatTemplate(ChatTemplateKind::Qwen2Vl);
    if (*arch == "qwen3") return ChatTemplate(ChatTemplateKind::Qwen3);
    return Status::unsupported(file.name() + ": no chat template for architecture '" + *arch + "'");
}

Result<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                         const ChatOptions& options) const {
    std::string out;
    const bool leadingSystem = !messages.empty() && messages.front().role == "system";
    const char* fallback = defaultSystem(m_kind);
    if (!options.toolsJson.empty()) {
        out += "<|im_start|>system\n";
        if (leadingSystem) {
            out += messages.front().content;
        } else if (fallback != nullptr) {
            out += fallback;
        }
        if (leadingSystem || fallback != nullptr) out += "\n\n";
        out +=
            "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
        for (const std::string& tool : options.toolsJson) {
            Result<std::string> json = pythonStyleJson(tool);
            if (!json) return json.status().withContext("tool description: ");
            out += "\n" + *json;
        }
        out +=
            "\n</tools>\n\nFor each function call, return a json object with function name and "
            "arguments "
            "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
            "\"arguments\": "
            "<args-json-object>}\n</tool_call><|im_end|>\n";
    } else if (leadingSystem) {
        out += "<|im_start|>system\n" + replaceImages(messages.front().content) + "<|im_end|>\n";
    } else if (fallback != nullptr) {
        out += std::string("<|im_start|>system\n") + fallback + "<|im_end|>\n";
    }

    for (std::size_t i = leadingSystem ? 1 : 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "tool") {
            if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
            out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
            if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
        } else if (m.role == "assistant" && !m.toolCalls.empty()) {
            out += "<|im_start|>assistant";
            if (!m.content.empty()) out += "\n" + m.content;
            for (const ChatToolCall& call : m.toolCalls) {
                Result<std::string> arguments = pythonStyleJson(call.argumentsJson);
                if (!arguments)
                    return arguments.status().withContext("tool call '" + call.name +
                                                          "' arguments: ");
                out += "\n<tool_call>\n{\"name\": \"" + call.name +
                       "\", \"arguments\": " + *arguments + "}\n</tool_call>";
            }
            out += "<|im_end|>\n";
        } else {
            out += "<|im_start|>" + m.role + "\n" + replaceImages(m.content) + "<|im_end|>\n";
        }
    }
    if (options.addGenerationPrompt) {
        out += "<|im_start|>assistant\n";
        if (m_kind == ChatTemplateKind::Qwen3 && !options.enableThinking)
            out += "<think>\n\n</think>\n\n";
    }
    return out;
}

}  // namespace iris::inference
