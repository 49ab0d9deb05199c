#include "inference/chat_template.h"

#include <cstdio>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/strings.h"
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
        case ChatTemplateKind::MiniMaxM3:
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

// ---- MiniMax-M3 ---------------------------------------------------------------------------------
// The layout is the official chat_template.jinja as ms-swift re-implements it (docs/minimax-m3.md
// section 5); the strings below are its text.

constexpr std::string_view kM3Begin = "]~!b[";
constexpr std::string_view kM3Header = "]~b]";
constexpr std::string_view kM3End = "[e~[";
constexpr std::string_view kM3ThinkOpen = "<mm:think>";
constexpr std::string_view kM3ThinkClose = "</mm:think>";
constexpr std::string_view kM3Identity =
    "Your model version is MiniMax-M3, developed by MiniMax. Knowledge cutoff: January 2026. "
    "Founded in early 2022, MiniMax is a global AI foundation model company committed to "
    "advancing the frontiers of AI towards AGI.";
constexpr std::string_view kM3ThinkingBase =
    "You have a thinking capability that allows you to reason step by step before responding. "
    "When thinking is enabled, wrap your reasoning in <mm:think></mm:think> tags before your "
    "response. When thinking is disabled, begin your response directly after the </mm:think> "
    "prefix. When thinking is adaptive, decide on your own whether to think for the current turn.";
constexpr std::string_view kM3ThinkingEnabled =
    "Current thinking mode: enabled. You MUST think step by step before every response, "
    "including after receiving function/tool results.";
constexpr std::string_view kM3ThinkingDisabled =
    "Current thinking mode: disabled. Do not output any thinking process.";
constexpr std::string_view kM3ThinkingAdaptive =
    "Current thinking mode: adaptive. You are encouraged to think for complex decision-making, "
    "multi-step reasoning, or when analyzing function/tool results.";
constexpr std::string_view kM3DefaultDeveloper = "You are a helpful assistant.";
constexpr std::string_view kM3Image = "]<]image[>[";

std::string m3Tag(std::string_view name, bool closing = false) {
    std::string tag(kMiniMaxNamespace);
    tag += closing ? "</" : "<";
    tag += name;
    tag += '>';
    return tag;
}

// The tool-call example the template puts after the tool list.
std::string m3ToolExample() {
    const auto open = [](std::string_view n) { return m3Tag(n); };
    const auto close = [](std::string_view n) { return m3Tag(n, true); };
    const std::string ns(kMiniMaxNamespace);
    return "\n" + open("tool_call") + "\n" + ns + "<invoke name=\"tool-name-1\">" +
           open("param-1") + "value-1" + close("param-1") + open("param-2") + open("item") +
           open("key-a") + "val-a" + close("key-a") + open("key-b") + "val-b" + close("key-b") +
           close("item") + close("param-2") + close("invoke") + "\n" + ns +
           "<invoke name=\"tool-name-2\">" + open("param-1") + "value-1" + close("param-1") +
           close("invoke") + "\n" + close("tool_call");
}

// The template's to_xml: objects as one element per key (null members left out), arrays as
// <item> elements, booleans as JSON, other scalars as Python's str() prints them.
void appendM3Xml(std::string& out, const Json& value) {
    switch (value.type()) {
        case Json::value_t::object:
            for (const auto& [key, item] : value.items()) {
                if (item.is_null()) continue;
                out += m3Tag(key);
                appendM3Xml(out, item);
                out += m3Tag(key, true);
            }
            return;
        case Json::value_t::array:
            for (const Json& item : value) {
                out += m3Tag("item");
                appendM3Xml(out, item);
                out += m3Tag("item", true);
            }
            return;
        case Json::value_t::string:
            out += value.get<std::string>();
            return;
        case Json::value_t::boolean:
            out += value.get<bool>() ? "true" : "false";
            return;
        case Json::value_t::null:
            return;
        default:
            out += value.dump();  // numbers: 3, 2.5, 3.0, 1e+20 as Python's str() writes them
            return;
    }
}

std::string replaceM3Images(const std::string& content) {
    static const std::string marker = kImageMarker;
    std::string out;
    std::size_t from = 0;
    for (std::size_t at; (at = content.find(marker, from)) != std::string::npos;
         from = at + marker.size()) {
        out.append(content, from, at - from);
        out += "]<]start of image[>[]<]image[>[]<]end of image[>[";
    }
    out.append(content, from, std::string::npos);
    return out;
}

// An earlier answer without its reasoning: the text after the last </mm:think>, if any.
std::string_view m3AnswerWithoutReasoning(std::string_view content) {
    const std::size_t close = content.rfind(kM3ThinkClose);
    if (close == std::string_view::npos) return content;
    content.remove_prefix(close + kM3ThinkClose.size());
    while (!content.empty() && (content.front() == '\n' || content.front() == ' '))
        content.remove_prefix(1);
    return content;
}

// OpenAI's {"type": "function", "function": {...}} wrapper removed, as the template's tool list
// shows the function object itself.
const Json& unwrapTool(const Json& tool) {
    if (tool.is_object()) {
        const auto function = tool.find("function");
        if (function != tool.end() && function->is_object()) return *function;
    }
    return tool;
}

// The template's own system block: the identity and the thinking mode.
void appendM3SystemBlock(std::string& out, const ChatOptions& options) {
    out += kM3Header;
    out += "system\n";
    out += kM3Identity;
    out += "\n\n<thinking_instructions>\n";
    out += kM3ThinkingBase;
    out += '\n';
    out += options.adaptiveThinking ? kM3ThinkingAdaptive
           : options.enableThinking ? kM3ThinkingEnabled
                                    : kM3ThinkingDisabled;
    out += "\n</thinking_instructions>";
    out += kM3End;
    out += '\n';
}

// The developer block: the caller's system prompt (`system`, null for the default) and the tools.
Status appendM3DeveloperBlock(std::string& out, const ChatMessage* system,
                              const std::vector<std::string>& toolsJson) {
    out += kM3Header;
    out += "developer\n";
    if (system != nullptr) {
        out += replaceM3Images(system->content);
    } else {
        out += kM3DefaultDeveloper;
    }
    if (!toolsJson.empty()) {
        out +=
            "\n\n# Tools\nYou may call one or more tools to assist with the user query.\n"
            "Here are the tools available in JSONSchema format:\n\n<tools>\n";
        for (std::size_t i = 0; i < toolsJson.size(); ++i) {
            const Json tool = Json::parse(toolsJson[i], nullptr, false);
            if (tool.is_discarded() || !tool.is_object())
                return Status::invalidArgument(
                    "tool description " + std::to_string(i + 1) +
                    ": not a JSON object: " + toolsJson[i].substr(0, 80));
            if (i > 0) out += '\n';
            out += "<tool>";
            appendPython(out, unwrapTool(tool));
            out += "</tool>";
        }
        out += "\n</tools>\n\nTo call tools, wrap all invocations in a single " +
               m3Tag("tool_call") + m3Tag("tool_call", true) +
               " block. Parameter values containing nested objects or arrays are recursively "
               "expanded into XML elements. Example:" +
               m3ToolExample();
    }
    out += kM3End;
    out += '\n';
    return {};
}

// Tool result messages[i]: consecutive results share one tool turn, one <response> per line.
void appendM3ToolResult(std::string& out, const std::vector<ChatMessage>& messages, std::size_t i) {
    if (i == 0 || messages[i - 1].role != "tool") {
        out += kM3Header;
        out += "tool\n";
    } else {
        out += '\n';
    }
    out += "<response>" + replaceM3Images(messages[i].content) + "</response>";
    if (i + 1 == messages.size() || messages[i + 1].role != "tool") {
        out += kM3End;
        out += '\n';
    }
}

// An earlier answer keeps no reasoning: the template writes the bare </mm:think> prefix.
Status appendM3AssistantTurn(std::string& out, const ChatMessage& m) {
    out += kM3Header;
    out += "ai\n";
    out += kM3ThinkClose;
    const std::string_view answer = m3AnswerWithoutReasoning(m.content);
    out += answer;
    if (!m.toolCalls.empty()) {
        if (!answer.empty()) out += '\n';
        out += m3Tag("tool_call");
        for (const ChatToolCall& call : m.toolCalls) {
            const Json arguments = Json::parse(call.argumentsJson, nullptr, false);
            if (arguments.is_discarded() || !arguments.is_object())
                return Status::invalidArgument(
                    "tool call '" + call.name +
                    "' arguments: not a JSON object: " + call.argumentsJson.substr(0, 80));
            out += '\n';
            out += kMiniMaxNamespace;
            out += "<invoke name=\"" + call.name + "\">";
            appendM3Xml(out, arguments);
            out += m3Tag("invoke", true);
        }
        out += '\n' + m3Tag("tool_call", true);
    }
    out += kM3End;
    out += '\n';
    return {};
}

Result<std::string> renderMiniMaxM3(const std::vector<ChatMessage>& messages,
                                    const ChatOptions& options) {
    std::string out(kM3Begin);
    appendM3SystemBlock(out, options);

    // The caller's system prompt (or a leading developer message) goes into the developer block.
    const bool leadingSystem = !messages.empty() && (messages.front().role == "system" ||
                                                     messages.front().role == "developer");
    IRIS_RETURN_IF_ERROR(appendM3DeveloperBlock(out, leadingSystem ? &messages.front() : nullptr,
                                                options.toolsJson));

    for (std::size_t i = leadingSystem ? 1 : 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "tool") {
            appendM3ToolResult(out, messages, i);
        } else if (m.role == "assistant") {
            IRIS_RETURN_IF_ERROR(appendM3AssistantTurn(out, m));
        } else {
            // user; a later system message becomes a developer turn (the system role is the
            // template's own block).
            out += kM3Header;
            out += m.role == "system" ? std::string("developer") : m.role;
            out += '\n';
            out += replaceM3Images(m.content);
            out += kM3End;
            out += '\n';
        }
    }
    if (options.addGenerationPrompt) {
        out += kM3Header;
        out += "ai\n";
        if (!options.adaptiveThinking) out += options.enableThinking ? kM3ThinkOpen : kM3ThinkClose;
    }
    return out;
}

// ---- MiniMax-M3 output parser -------------------------------------------------------------------

constexpr std::size_t kMaxM3Depth = 32;       // nested parameter elements
constexpr std::size_t kMaxM3NameBytes = 256;  // tool, parameter and element names

// A short quotation of model text for an error message (bytes, not characters: the caller's
// text may be any bytes, and whoever shows errors repairs UTF-8).
std::string quoted(std::string_view s) {
    constexpr std::size_t kMax = 40;
    std::string out = "'";
    for (char c : s.substr(0, kMax))
        out += c == '\n' ? ' ' : c;
    if (s.size() > kMax) out += "...";
    return out + "'";
}

// The type a JSON Schema gives (the first non-null one of a list); empty when none is known.
std::string schemaType(const Json* schema) {
    if (schema == nullptr || !schema->is_object()) return {};
    const auto type = schema->find("type");
    if (type == schema->end()) return {};
    if (type->is_string()) return type->get<std::string>();
    if (type->is_array()) {
        for (const Json& t : *type)
            if (t.is_string() && t.get<std::string>() != "null") return t.get<std::string>();
    }
    return {};
}

const Json* schemaMember(const Json* schema, const char* member, std::string_view name) {
    if (schema == nullptr || !schema->is_object()) return nullptr;
    const auto it = schema->find(member);
    if (it == schema->end() || !it->is_object()) return nullptr;
    if (name.empty()) return &*it;  // "items"
    const auto property = it->find(std::string(name));
    return property == it->end() ? nullptr : &*property;
}

class M3OutputParser {
public:
    M3OutputParser(std::string_view text, const std::map<std::string, Json, std::less<>>& tools,
                   MiniMaxM3Output& out)
        : m_text(text), m_end(text.size()), m_tools(tools), m_out(out) {}

    void run() {
        std::string_view text = m_text;
        std::size_t size = text.size();
        // The end-of-message token, should the caller have kept it.
        if (trim(text).ends_with(kM3End)) size = text.rfind(kM3End);
        std::string content;
        std::size_t from = 0;
        const std::size_t close = text.substr(0, size).find(kM3ThinkClose);
        const std::size_t open = text.substr(0, size).find(kM3ThinkOpen);
        if (open != std::string_view::npos && (close == std::string_view::npos || open < close)) {
            content.append(text.substr(0, open));
            const std::size_t bodyAt = open + kM3ThinkOpen.size();
            if (close == std::string_view::npos) {
                m_out.reasoning = std::string(trim(text.substr(bodyAt, size - bodyAt)));
                error(open, "<mm:think> is not closed by </mm:think> (the answer was cut off?)");
                from = size;
            } else {
                m_out.reasoning = std::string(trim(text.substr(bodyAt, close - bodyAt)));
                from = close + kM3ThinkClose.size();
            }
        } else if (close != std::string_view::npos) {
            // A bare </mm:think>: the generation prompt opened the reasoning (or the model wrote
            // an empty one).
            m_out.reasoning = std::string(trim(text.substr(0, close)));
            from = close + kM3ThinkClose.size();
        }

        const std::string callOpen = m3Tag("tool_call");
        const std::string callClose = m3Tag("tool_call", true);
        while (from < size) {
            const std::size_t at = text.substr(0, size).find(callOpen, from);
            if (at == std::string_view::npos) {
                content.append(text.substr(from, size - from));
                break;
            }
            content.append(text.substr(from, at - from));
            const std::size_t bodyAt = at + callOpen.size();
            std::size_t blockEnd = text.substr(0, size).find(callClose, bodyAt);
            // A block cut off by the end of generation keeps the calls it completed.
            from = blockEnd == std::string_view::npos ? size : blockEnd + callClose.size();
            if (blockEnd == std::string_view::npos) blockEnd = size;
            parseBlock(bodyAt, blockEnd);
        }
        m_out.content = std::string(trim(content));
    }

private:
    bool startsWith(std::size_t at, std::string_view s) const {
        return at <= m_end && m_text.substr(at, m_end - at).starts_with(s);
    }
    std::size_t find(std::string_view s, std::size_t from) const {
        if (from > m_end) return std::string_view::npos;
        return m_text.substr(0, m_end).find(s, from);
    }
    std::size_t skipSpace(std::size_t at) const {
        while (at < m_end && isAsciiSpace(m_text[at]))
            ++at;
        return at;
    }
    std::string_view rest(std::size_t at) const {
        return at < m_end ? m_text.substr(at, m_end - at) : std::string_view();
    }
    void error(std::size_t at, const std::string& message) {
        m_out.errors.push_back("byte " + std::to_string(at) + ": " + message);
    }
    std::nullopt_t fail(std::size_t at, const std::string& message) {
        error(at, message);
        return std::nullopt;
    }

    void parseBlock(std::size_t at, std::size_t end) {
        m_end = end;
        const std::string invoke = std::string(kMiniMaxNamespace) + "<invoke";
        const std::string invokeClose = m3Tag("invoke", true);
        while (true) {
            at = skipSpace(at);
            if (at >= m_end) break;
            if (!startsWith(at, invoke)) {
                error(at, "expected " + invoke + " name=\"...\"> in the tool-call block, found " +
                              quoted(rest(at)));
                const std::size_t next = find(invoke, at + 1);
                if (next == std::string_view::npos) break;
                at = next;
                continue;
            }
            const std::size_t start = at;
            if (std::optional<ChatToolCall> call = parseInvoke(at)) {
                m_out.toolCalls.push_back(std::move(*call));
            } else {
                // Resume after this call's end, or at the next call.
                const std::size_t close = find(invokeClose, start);
                const std::size_t next = find(invoke, start + 1);
                if (close != std::string_view::npos &&
                    (next == std::string_view::npos || close < next)) {
                    at = close + invokeClose.size();
                } else if (next != std::string_view::npos) {
                    at = next;
                } else {
                    break;
                }
            }
        }
        m_end = m_text.size();
    }

    // NS<invoke name="N"> parameters NS</invoke>, from `at` (at the NS); moves `at` past it.
    std::optional<ChatToolCall> parseInvoke(std::size_t& at) {
        const std::size_t start = at;
        std::size_t p = at + kMiniMaxNamespace.size() + std::string_view("<invoke").size();
        const std::size_t nameKey = p;
        p = skipSpace(p);
        if (p == nameKey || !startsWith(p, "name"))
            return fail(p, "expected name=\"...\" in <invoke, found " + quoted(rest(p)));
        p = skipSpace(p + 4);
        if (!startsWith(p, "=")) return fail(p, "expected = after <invoke name");
        p = skipSpace(p + 1);
        if (p >= m_end || (m_text[p] != '"' && m_text[p] != '\''))
            return fail(p, "expected a quoted tool name, found " + quoted(rest(p)));
        const char quote = m_text[p];
        const std::size_t nameAt = p + 1;
        std::size_t nameEnd = nameAt;
        while (nameEnd < m_end && m_text[nameEnd] != quote && m_text[nameEnd] != '\n' &&
               nameEnd - nameAt <= kMaxM3NameBytes)
            ++nameEnd;
        if (nameEnd >= m_end || m_text[nameEnd] != quote)
            return fail(nameAt, "the tool name is not closed by " + std::string(1, quote) +
                                    " (or is longer than " + std::to_string(kMaxM3NameBytes) +
                                    " bytes)");
        ChatToolCall call;
        call.name = std::string(m_text.substr(nameAt, nameEnd - nameAt));
        if (trim(call.name).empty()) return fail(nameAt, "empty tool name");
        p = skipSpace(nameEnd + 1);
        if (!startsWith(p, ">"))
            return fail(
                p, "expected > after <invoke name=\"" + call.name + "\", found " + quoted(rest(p)));
        ++p;

        const auto tool = m_tools.find(call.name);
        const Json* parameters = tool == m_tools.end() ? nullptr : &tool->second;
        const std::string invokeClose = m3Tag("invoke", true);
        Json arguments = Json::object();
        while (true) {
            p = skipSpace(p);
            if (startsWith(p, invokeClose)) {
                p += invokeClose.size();
                break;
            }
            std::optional<std::string_view> name = openTag(p);
            if (!name) {
                if (p >= m_end)
                    return fail(start, "<invoke name=\"" + call.name + "\"> is not closed by " +
                                           invokeClose);
                return fail(p, "expected a parameter element or " + invokeClose + ", found " +
                                   quoted(rest(p)));
            }
            const std::size_t tagAt = p;
            p += kMiniMaxNamespace.size() + name->size() + 2;
            std::optional<Json> value =
                readValue(p, *name, tagAt, schemaMember(parameters, "properties", *name), 0);
            if (!value) return std::nullopt;
            arguments[std::string(*name)] = std::move(*value);
        }
        call.argumentsJson = arguments.dump(-1, ' ', false, Json::error_handler_t::replace);
        at = p;
        return call;
    }

    // The name of the opening tag NS<name> at `at`, or nullopt when there is none (a closing tag,
    // other text, an unusable name).
    std::optional<std::string_view> openTag(std::size_t at) const {
        if (!startsWith(at, kMiniMaxNamespace)) return std::nullopt;
        const std::size_t lt = at + kMiniMaxNamespace.size();
        if (!startsWith(lt, "<") || startsWith(lt, "</")) return std::nullopt;
        std::size_t end = lt + 1;
        while (end < m_end && m_text[end] != '>' && m_text[end] != '<' && !isAsciiSpace(m_text[end]) &&
               end - lt <= kMaxM3NameBytes)
            ++end;
        if (end >= m_end || m_text[end] != '>' || end == lt + 1) return std::nullopt;
        return m_text.substr(lt + 1, end - lt - 1);
    }

    // The value of element `name` (opened at `openAt`), from `at` just after its opening tag to
    // its closing tag; moves `at` past the closing tag.
    std::optional<Json> readValue(std::size_t& at, std::string_view name, std::size_t openAt,
                                  const Json* schema, std::size_t depth) {
        if (depth >= kMaxM3Depth)
            return fail(openAt, "parameter elements nested more than " +
                                    std::to_string(kMaxM3Depth) + " deep");
        const std::string close = m3Tag(name, true);
        const std::string type = schemaType(schema);
        std::size_t p = skipSpace(at);
        if (type != "string" && openTag(p)) {
            // Elements: <item> children make an array, other names an object.
            std::vector<std::pair<std::string_view, Json>> children;
            bool allItems = true;
            while (true) {
                p = skipSpace(p);
                if (startsWith(p, close)) {
                    p += close.size();
                    break;
                }
                const std::optional<std::string_view> child = openTag(p);
                if (!child) {
                    if (p >= m_end)
                        return fail(openAt,
                                    "<" + std::string(name) + "> is not closed by " + close);
                    return fail(p,
                                "expected an element or " + close + ", found " + quoted(rest(p)));
                }
                const std::size_t childAt = p;
                p += kMiniMaxNamespace.size() + child->size() + 2;
                const Json* childSchema = type == "array"
                                              ? schemaMember(schema, "items", {})
                                              : schemaMember(schema, "properties", *child);
                std::optional<Json> value = readValue(p, *child, childAt, childSchema, depth + 1);
                if (!value) return std::nullopt;
                allItems = allItems && *child == "item";
                children.emplace_back(*child, std::move(*value));
            }
            at = p;
            if (type == "array" || (type != "object" && allItems)) {
                Json array = Json::array();
                for (auto& [childName, value] : children)
                    array.push_back(std::move(value));
                return array;
            }
            Json object = Json::object();
            for (auto& [childName, value] : children)
                object[std::string(childName)] = std::move(value);
            return object;
        }
        // Text, verbatim up to the closing tag. The namespace token never occurs in a value (it is
        // a special token), so one inside means the closing tag is missing or wrong.
        const std::size_t end = find(close, at);
        const std::size_t stray = find(kMiniMaxNamespace, at);
        if (stray != std::string_view::npos && (end == std::string_view::npos || stray < end))
            return fail(stray, "expected " + close + " to close <" + std::string(name) +
                                   "> opened at byte " + std::to_string(openAt) + ", found " +
                                   quoted(rest(stray)));
        if (end == std::string_view::npos)
            return fail(openAt, "<" + std::string(name) + "> is not closed by " + close);
        const std::string_view raw = m_text.substr(at, end - at);
        at = end + close.size();
        return scalar(raw, type);
    }

    static Json scalar(std::string_view raw, const std::string& type) {
        if (type == "string") return std::string(raw);
        const std::string_view t = trim(raw);
        if (t.empty()) {
            if (type == "object") return Json::object();
            if (type == "array") return Json::array();
            return std::string(raw);
        }
        // Numbers, booleans, null, and objects or arrays written as JSON inline.
        Json value = Json::parse(t.begin(), t.end(), nullptr, false);
        if (!value.is_discarded() && !value.is_string()) return value;
        return std::string(raw);
    }

    std::string_view m_text;
    std::size_t m_end;  // where the block being parsed ends
    const std::map<std::string, Json, std::less<>>& m_tools;
    MiniMaxM3Output& m_out;
};

}  // namespace

MiniMaxM3Output parseMiniMaxM3Output(std::string_view text,
                                     const std::vector<std::string>& toolsJson) {
    MiniMaxM3Output out;
    // Tool name -> its parameters' JSON Schema; descriptions that cannot be read type nothing.
    std::map<std::string, Json, std::less<>> tools;
    for (const std::string& json : toolsJson) {
        const Json tool = Json::parse(json, nullptr, false);
        if (tool.is_discarded()) continue;
        const Json& function = unwrapTool(tool);
        if (!function.is_object()) continue;
        const auto name = function.find("name");
        const auto parameters = function.find("parameters");
        if (name == function.end() || !name->is_string() || parameters == function.end()) continue;
        tools.emplace(name->get<std::string>(), *parameters);
    }
    M3OutputParser(text, tools, out).run();
    return out;
}

Result<std::string> pythonStyleJson(const std::string& json) {
    const Json value = Json::parse(json, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded())
        return Status::invalidArgument("not valid JSON: " + json.substr(0, 80));
    std::string out;
    appendPython(out, value);
    return out;
}

std::string_view ChatTemplate::imagePlaceholder() const {
    return m_kind == ChatTemplateKind::MiniMaxM3 ? kM3Image : std::string_view("<|image_pad|>");
}

std::string_view chatTemplateKindName(ChatTemplateKind kind) {
    switch (kind) {
        case ChatTemplateKind::Qwen2:
            return "qwen2";
        case ChatTemplateKind::Qwen2Vl:
            return "qwen2-vl";
        case ChatTemplateKind::Qwen3:
            return "qwen3";
        case ChatTemplateKind::MiniMaxM3:
            return "minimax-m3";
    }
    return "?";
}

std::optional<ChatTemplateKind> chatTemplateKindFromName(std::string_view name) {
    for (ChatTemplateKind kind : {ChatTemplateKind::Qwen2, ChatTemplateKind::Qwen2Vl,
                                  ChatTemplateKind::Qwen3, ChatTemplateKind::MiniMaxM3}) {
        if (name == chatTemplateKindName(kind)) return kind;
    }
    return std::nullopt;
}

Result<ChatTemplate> ChatTemplate::forModel(const GgufFile& file) {
    Result<std::string> arch = file.getString("general.architecture");
    if (arch && *arch == "minimax-m3") return ChatTemplate(ChatTemplateKind::MiniMaxM3);
    if (Result<std::string> text = file.getString("tokenizer.chat_template")) {
        // MiniMax-M3's template names its namespace token; M2's uses <minimax:tool_call> and
        // <think>, a different format.
        if (text->find(kMiniMaxNamespace) != std::string::npos &&
            text->find("]~b]") != std::string::npos)
            return ChatTemplate(ChatTemplateKind::MiniMaxM3);
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
    if (!arch) return arch.status();
    if (*arch == "qwen2") return ChatTemplate(ChatTemplateKind::Qwen2);
    if (*arch == "qwen2vl") return ChatTemplate(ChatTemplateKind::Qwen2Vl);
    if (*arch == "qwen3") return ChatTemplate(ChatTemplateKind::Qwen3);
    return Status::unsupported(file.name() + ": no chat template for architecture '" + *arch + "'");
}

Result<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                         const ChatOptions& options) const {
    if (m_kind == ChatTemplateKind::MiniMaxM3) return renderMiniMaxM3(messages, options);
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

std::string ChatTemplate::toolCallOpening(std::string_view toolName) const {
    if (m_kind == ChatTemplateKind::MiniMaxM3) {
        std::string out = m3Tag("tool_call") + "\n";
        if (!toolName.empty())
            out += std::string(kMiniMaxNamespace) + "<invoke name=\"" + std::string(toolName) + "\">";
        return out;
    }
    std::string out = "<tool_call>\n";
    if (!toolName.empty())
        out += "{\"name\": " + Json(std::string(toolName)).dump() + ", \"arguments\": ";
    return out;
}

}  // namespace iris::inference
