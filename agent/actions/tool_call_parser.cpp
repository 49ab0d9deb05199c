// Tool calling: OpenAI-style tool_calls, Qwen/Hermes <tool_call>{"name": ..., "arguments":
// {...}}</tool_call> blocks in the text, and MiniMax-M3's ]<]minimax[>[<tool_call> XML. The tools
// and their JSON Schemas are defined here too, so that what the model is offered and what the
// parser accepts cannot drift apart.
//
// MiniMax-M3 is not a format of its own: its actions are the same tools, offered the same way,
// and its tool-call block (opened by a special token no other model writes) cannot be mistaken
// for Qwen's, so the tools format reads both and the user need not know which model speaks
// which.
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "agent/actions/key_names.h"
#include "agent/actions/parse_common.h"
#include "inference/model_answer.h"

namespace iris::agent {
namespace {

constexpr int kMaxScrollNotches = 1000;
constexpr double kMaxWaitSeconds = 600;

// Reads one call's arguments; the first problem names the argument.
class ToolArguments {
public:
    ToolArguments(const nlohmann::json& json, const ParseOptions* options)
        : m_json(json), m_options(options) {}

    bool has(const char* name) const {
        const auto it = m_json.find(name);
        return it != m_json.end() && !it->is_null();
    }

    std::optional<double> number(const char* name) {
        if (!has(name)) return fail(name, "missing");
        const nlohmann::json& v = *m_json.find(name);
        if (!v.is_number()) return fail(name, "expected a number");
        const double value = v.get<double>();
        if (!std::isfinite(value)) return fail(name, "expected a finite number");
        return value;
    }

    std::optional<int> integer(const char* name, int fallback, int minimum, int maximum) {
        if (!has(name)) return fallback;
        const std::optional<double> value = number(name);
        if (!value) return std::nullopt;
        if (*value != std::floor(*value) || *value < minimum || *value > maximum)
            return fail(name, "expected a whole number from " + std::to_string(minimum) + " to " +
                                  std::to_string(maximum));
        return static_cast<int>(*value);
    }

    std::optional<std::string> string(const char* name, bool required = true) {
        if (!has(name)) {
            if (!required) return std::string();
            return fail(name, "missing");
        }
        const nlohmann::json& v = *m_json.find(name);
        if (!v.is_string()) return fail(name, "expected a string");
        return v.get<std::string>();
    }

    std::optional<Point> point(const char* xName, const char* yName) {
        const std::optional<double> x = number(xName);
        if (!x) return std::nullopt;
        const std::optional<double> y = number(yName);
        if (!y) return std::nullopt;
        Result<Point> p = detail::mapPoint(*x, *y, *m_options);
        if (!p) return fail(xName, p.status().message());
        return *p;
    }

    std::optional<MouseButton> button() {
        if (!has("button")) return MouseButton::Left;
        const std::optional<std::string> name = string("button");
        if (!name) return std::nullopt;
        if (*name == "left") return MouseButton::Left;
        if (*name == "right") return MouseButton::Right;
        if (*name == "middle") return MouseButton::Middle;
        return fail("button", "expected left, right or middle");
    }

    std::optional<std::vector<std::string>> keys() {
        if (!has("keys")) return fail("keys", "missing");
        const nlohmann::json& v = *m_json.find("keys");
        std::vector<std::string> names;
        if (v.is_string()) {
            names.push_back(v.get<std::string>());  // a single key given without the list
        } else if (v.is_array()) {
            for (const nlohmann::json& item : v) {
                if (!item.is_string()) return fail("keys", "expected a list of key names");
                names.push_back(item.get<std::string>());
            }
        } else {
            return fail("keys", "expected a list of key names");
        }
        if (names.empty()) return fail("keys", "expected at least one key");
        std::vector<std::string> keys;
        for (const std::string& name : names) {
            Result<std::string> key = normalizeKeyName(name);
            if (!key) return fail("keys", key.status().message());
            keys.push_back(std::move(*key));
        }
        return keys;
    }

    std::nullopt_t fail(std::string_view name, std::string_view problem) {
        if (m_error.empty())
            m_error = "argument '" + std::string(name) + "': " + std::string(problem);
        return std::nullopt;
    }
    const std::string& error() const { return m_error; }

private:
    const nlohmann::json& m_json;
    const ParseOptions* m_options;
    std::string m_error;
};

Result<Action> toAction(std::string_view name, const nlohmann::json& json,
                        const ParseOptions& options) {
    ToolArguments a(json, &options);
    std::optional<Action> action;
    if (name == "click") {
        const auto at = a.point("x", "y");
        const auto button = at ? a.button() : std::nullopt;
        const auto clicks = button ? a.integer("clicks", 1, 1, 3) : std::nullopt;
        if (clicks) action = Click{*at, *button, *clicks};
    } else if (name == "double_click") {
        if (const auto at = a.point("x", "y")) action = Click{*at, MouseButton::Left, 2};
    } else if (name == "move_to") {
        if (const auto to = a.point("x", "y")) action = MoveTo{*to};
    } else if (name == "drag") {
        const auto from = a.point("from_x", "from_y");
        const auto to = from ? a.point("to_x", "to_y") : std::nullopt;
        if (to) action = Drag{*from, *to, MouseButton::Left};
    } else if (name == "scroll") {
        std::optional<Point> at;
        bool ok = true;
        if (a.has("x") || a.has("y")) {
            at = a.point("x", "y");
            ok = at.has_value();
        }
        const auto dx =
            ok ? a.integer("dx", 0, -kMaxScrollNotches, kMaxScrollNotches) : std::nullopt;
        const auto dy =
            dx ? a.integer("dy", 0, -kMaxScrollNotches, kMaxScrollNotches) : std::nullopt;
        if (dy && *dx == 0 && *dy == 0) return Status::invalidArgument("dx and dy are both 0");
        if (dy) action = Scroll{at, *dx, *dy};
    } else if (name == "type_text") {
        if (auto text = a.string("text")) action = TypeText{std::move(*text)};
    } else if (name == "press_keys") {
        if (auto keys = a.keys()) action = PressKeys{std::move(*keys)};
    } else if (name == "wait") {
        double seconds = 1.0;
        bool ok = true;
        if (a.has("seconds")) {
            const auto value = a.number("seconds");
            ok = value.has_value();
            if (ok) seconds = *value;
            if (ok && (seconds < 0 || seconds > kMaxWaitSeconds)) {
                a.fail("seconds", "expected a number from 0 to 600");
                ok = false;
            }
        }
        if (ok) action = Wait{seconds};
    } else if (name == "done") {
        if (auto message = a.string("message", false)) action = Done{std::move(*message)};
    } else if (name == "fail") {
        if (auto reason = a.string("reason", false)) action = Fail{std::move(*reason)};
    } else if (name == "navigate") {
        if (auto url = a.string("url")) action = Navigate{std::move(*url)};
    } else if (name == "read_file") {
        if (auto path = a.string("path")) action = ReadFile{std::move(*path)};
    } else if (name == "write_file") {
        auto path = a.string("path");
        auto content = path ? a.string("content") : std::nullopt;
        if (content) action = WriteFile{std::move(*path), std::move(*content)};
    } else if (name == "replace_in_file") {
        auto path = a.string("path");
        auto oldText = path ? a.string("old_text") : std::nullopt;
        auto newText = oldText ? a.string("new_text") : std::nullopt;
        if (newText)
            action = ReplaceInFile{std::move(*path), std::move(*oldText), std::move(*newText)};
    } else {
        return Status::invalidArgument("unknown tool");
    }
    if (!action) return Status::invalidArgument(a.error());
    return std::move(*action);
}

void parseOne(std::string_view name, const nlohmann::json& arguments, const std::string& where,
              const ParseOptions& options, ParsedStep& step) {
    if (!arguments.is_object()) {
        step.errors.push_back(where + ": arguments must be a JSON object");
        return;
    }
    Result<Action> action = toAction(name, arguments, options);
    if (action)
        step.actions.push_back(std::move(*action));
    else
        step.errors.push_back(where + ": " + action.status().message());
}

// Arguments as the OpenAI API carries them: JSON text (empty text: no arguments).
void parseTextArguments(std::string_view name, std::string_view text, const std::string& where,
                        const ParseOptions& options, ParsedStep& step) {
    if (trim(text).empty()) {
        parseOne(name, nlohmann::json::object(), where, options, step);
        return;
    }
    const nlohmann::json arguments =
        nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
    if (arguments.is_discarded()) {
        step.errors.push_back(where + ": arguments are not valid JSON: '" + detail::snippet(text) +
                              "'");
        return;
    }
    parseOne(name, arguments, where, options, step);
}

}  // namespace

namespace detail {
namespace {

// Every tool Iris offers, as the JSON the chat template is given: the M3 parser reads their
// schemas to tell a string parameter ("text": "42") from a number.
const std::vector<std::string>& allToolsJson() {
    static const std::vector<std::string> tools = [] {
        std::vector<std::string> out;
        for (const ToolDefinition& tool : toolDefinitions(true, true)) {
            nlohmann::json json = {{"name", tool.name}, {"description", tool.description}};
            json["parameters"] = nlohmann::json::parse(tool.parametersSchema);
            out.push_back(json.dump());
        }
        return out;
    }();
    return tools;
}

}  // namespace

void parseToolCalls(const ChatResponse& response, const ParseOptions& options, ParsedStep& step) {
    int index = 0;
    for (const ToolCall& call : response.toolCalls) {
        ++index;
        const std::string where =
            "tool call " + std::to_string(index) + " (" + snippet(call.name, 40) + ")";
        parseTextArguments(call.name, call.arguments, where, options, step);
    }
    // The calls written in the text: MiniMax-M3's XML, Qwen's <tool_call> blocks.
    const inference::ModelAnswer answer = inference::parseModelAnswer(response.text, allToolsJson());
    for (const std::string& error : answer.errors)
        step.errors.push_back("MiniMax-M3 answer: " + error);
    for (const inference::AnswerToolCall& call : answer.toolCalls) {
        const std::string where = "tool call " + std::to_string(++index);
        switch (call.problem) {
            case inference::AnswerToolCall::Problem::NotAnObject:
                step.errors.push_back(where + ": not a JSON object: '" + snippet(trim(call.body)) +
                                      "'");
                continue;
            case inference::AnswerToolCall::Problem::MissingName:
                step.errors.push_back(where + ": missing \"name\"");
                continue;
            case inference::AnswerToolCall::Problem::None:
                break;
        }
        parseTextArguments(call.call.name, call.call.argumentsJson,
                           where + " (" + snippet(call.call.name, 40) + ")", options, step);
    }
    const std::string_view said = trim(answer.content);
    if (answer.reasoning.empty()) {
        step.thought = std::string(said);
    } else {
        step.thought =
            said.empty() ? answer.reasoning : answer.reasoning + "\n\n" + std::string(said);
    }
}

}  // namespace detail

std::vector<ToolDefinition> toolDefinitions(bool withFileTools, bool withNavigate) {
    // Coordinates are pixels of the screenshot; the descriptions say so because models otherwise
    // guess a normalised range.
    std::vector<ToolDefinition> tools = {
        {"click", "Click at a point of the screenshot (pixels from its top-left corner).",
         R"({"type": "object", "properties": {
  "x": {"type": "number", "description": "pixels from the left edge"},
  "y": {"type": "number", "description": "pixels from the top edge"},
  "button": {"type": "string", "enum": ["left", "right", "middle"], "default": "left"},
  "clicks": {"type": "integer", "minimum": 1, "maximum": 3, "default": 1}},
 "required": ["x", "y"], "additionalProperties": false})"},
        {"double_click", "Double-click with the left button at a point of the screenshot.",
         R"({"type": "object", "properties": {
  "x": {"type": "number"}, "y": {"type": "number"}},
 "required": ["x", "y"], "additionalProperties": false})"},
        {"move_to", "Move the pointer to a point without clicking (hover).",
         R"({"type": "object", "properties": {
  "x": {"type": "number"}, "y": {"type": "number"}},
 "required": ["x", "y"], "additionalProperties": false})"},
        {"drag", "Press the left button at one point, move to another, release.",
         R"({"type": "object", "properties": {
  "from_x": {"type": "number"}, "from_y": {"type": "number"},
  "to_x": {"type": "number"}, "to_y": {"type": "number"}},
 "required": ["from_x", "from_y", "to_x", "to_y"], "additionalProperties": false})"},
        {"scroll",
         "Turn the mouse wheel over a point (or where the pointer is). Positive dy scrolls "
         "down towards the end of the page, positive dx to the right; one unit is one notch.",
         R"({"type": "object", "properties": {
  "x": {"type": "number"}, "y": {"type": "number"},
  "dx": {"type": "integer", "default": 0}, "dy": {"type": "integer", "default": 0}},
 "additionalProperties": false})"},
        {"type_text", "Type text at the keyboard focus. A newline presses Enter.",
         R"({"type": "object", "properties": {
  "text": {"type": "string"}},
 "required": ["text"], "additionalProperties": false})"},
        {"press_keys",
         "Press one key, or a chord held in order and released in reverse (['ctrl', 'c']). "
         "Key names: enter, tab, esc, backspace, delete, up, down, left, right, home, end, "
         "pageup, pagedown, ctrl, alt, shift, win, f1-f12, single characters.",
         R"({"type": "object", "properties": {
  "keys": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
 "required": ["keys"], "additionalProperties": false})"},
        {"wait", "Wait for the screen to change, then look again.",
         R"({"type": "object", "properties": {
  "seconds": {"type": "number", "minimum": 0, "maximum": 600, "default": 1}},
 "additionalProperties": false})"},
        {"done", "The task is complete. Say briefly what was done.",
         R"({"type": "object", "properties": {
  "message": {"type": "string"}},
 "additionalProperties": false})"},
        {"fail", "The task cannot be done. Say why.",
         R"({"type": "object", "properties": {
  "reason": {"type": "string"}},
 "additionalProperties": false})"},
    };
    if (withNavigate) {
        tools.push_back({"navigate", "Load a URL in the browser, or a path of the web project.",
                         R"({"type": "object", "properties": {
  "url": {"type": "string"}},
 "required": ["url"], "additionalProperties": false})"});
    }
    if (withFileTools) {
        tools.push_back({"read_file", "Read a file of the web project (path relative to its root).",
                         R"({"type": "object", "properties": {
  "path": {"type": "string"}},
 "required": ["path"], "additionalProperties": false})"});
        tools.push_back({"write_file",
                         "Create or overwrite a file of the web project with the given content.",
                         R"({"type": "object", "properties": {
  "path": {"type": "string"}, "content": {"type": "string"}},
 "required": ["path", "content"], "additionalProperties": false})"});
        tools.push_back({"replace_in_file",
                         "Replace text in a file of the web project. old_text must occur exactly "
                         "once; include enough surrounding lines to make it unique.",
                         R"({"type": "object", "properties": {
  "path": {"type": "string"}, "old_text": {"type": "string"}, "new_text": {"type": "string"}},
 "required": ["path", "old_text", "new_text"], "additionalProperties": false})"});
    }
    return tools;
}

}  // namespace iris::agent
