// OSWorld's computer_13 action space (desktop_env/actions.py): JSON objects
// {"action_type": "CLICK", "parameters": {"x": 10, "y": 20}}, or with the parameters at the top
// level; one object, an array of them, or several fenced blocks; or the bare WAIT/DONE/FAIL.
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "agent/actions/key_names.h"
#include "agent/actions/parse_common.h"

namespace iris::agent::detail {
namespace {

std::string upper(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    return out;
}

// Reads one action's parameters; the first problem is kept and names the parameter.
class Parameters {
public:
    explicit Parameters(const nlohmann::json& json) : m_json(json) {}

    bool has(const char* name) const { return m_json.contains(name) && !m_json[name].is_null(); }

    std::optional<double> number(const char* name) {
        if (!has(name)) return fail(name, "missing");
        const nlohmann::json& value = m_json[name];
        if (!value.is_number()) return fail(name, "expected a number");
        return value.get<double>();
    }

    std::optional<int> integer(const char* name, int minimum, int maximum) {
        const std::optional<double> value = number(name);
        if (!value) return std::nullopt;
        if (*value != std::floor(*value) || *value < minimum || *value > maximum)
            return fail(name, "expected an integer from " + std::to_string(minimum) + " to " +
                                  std::to_string(maximum));
        return static_cast<int>(*value);
    }

    std::optional<std::string> string(const char* name) {
        if (!has(name)) return fail(name, "missing");
        const nlohmann::json& value = m_json[name];
        if (!value.is_string()) return fail(name, "expected a string");
        return value.get<std::string>();
    }

    std::optional<Point> point(const ParseOptions& options) {
        const std::optional<double> x = number("x");
        if (!x) return std::nullopt;
        const std::optional<double> y = number("y");
        if (!y) return std::nullopt;
        Result<Point> p = mapPoint(*x, *y, options);
        if (!p) return fail("x", p.status().message());
        return *p;
    }

    // Both coordinates or neither; nullopt inside means "where the pointer is".
    std::optional<std::optional<Point>> optionalPoint(const ParseOptions& options) {
        if (!has("x") && !has("y")) return std::optional<Point>();
        const std::optional<Point> p = point(options);
        if (!p) return std::nullopt;
        return std::optional<Point>(*p);
    }

    std::optional<MouseButton> button() {
        if (!has("button")) return MouseButton::Left;
        const std::optional<std::string> name = string("button");
        if (!name) return std::nullopt;
        const std::string lower = upper(*name);
        if (lower == "LEFT") return MouseButton::Left;
        if (lower == "RIGHT") return MouseButton::Right;
        if (lower == "MIDDLE") return MouseButton::Middle;
        return fail("button", "expected left, right or middle, not '" + snippet(*name) + "'");
    }

    std::optional<std::string> key(const char* name) {
        const std::optional<std::string> text = string(name);
        if (!text) return std::nullopt;
        Result<std::string> key = normalizeKeyName(*text);
        if (!key) return fail(name, key.status().message());
        return *key;
    }

    std::optional<std::vector<std::string>> keys() {
        if (!has("keys")) return fail("keys", "missing");
        const nlohmann::json& value = m_json["keys"];
        if (!value.is_array() || value.empty())
            return fail("keys", "expected a non-empty list of key names");
        std::vector<std::string> keys;
        for (const nlohmann::json& item : value) {
            if (!item.is_string()) return fail("keys", "expected a list of key names");
            Result<std::string> key = normalizeKeyName(item.get<std::string>());
            if (!key) return fail("keys", key.status().message());
            keys.push_back(*key);
        }
        return keys;
    }

    const std::string& error() const { return m_error; }

private:
    std::nullopt_t fail(std::string_view name, std::string_view problem) {
        if (m_error.empty())
            m_error = "parameter '" + std::string(name) + "': " + std::string(problem);
        return std::nullopt;
    }

    const nlohmann::json& m_json;
    std::string m_error;
};

// One computer_13 action; an error message (without location) when it does not parse.
Result<Action> parseOne(const nlohmann::json& json, const ParseOptions& options) {
    if (!json.is_object()) return Status::invalidArgument("expected a JSON object");
    const auto type = json.find("action_type");
    if (type == json.end() || !type->is_string())
        return Status::invalidArgument("missing \"action_type\"");
    const std::string name = upper(type->get<std::string>());
    const auto nested = json.find("parameters");
    const bool hasNested = nested != json.end() && nested->is_object();
    if (nested != json.end() && !nested->is_object() && !nested->is_null())
        return Status::invalidArgument(name + ": \"parameters\" must be an object");
    Parameters p(hasNested ? *nested : json);
    std::optional<Action> action;

    if (name == "MOVE_TO") {
        if (const auto to = p.point(options)) action = MoveTo{*to};
    } else if (name == "CLICK") {
        const auto at = p.optionalPoint(options);
        const auto button = at ? p.button() : std::nullopt;
        std::optional<int> count = 1;
        if (button && p.has("num_clicks")) count = p.integer("num_clicks", 1, 3);
        if (at && button && count) action = Click{*at, *button, *count};
    } else if (name == "RIGHT_CLICK" || name == "DOUBLE_CLICK") {
        if (const auto at = p.optionalPoint(options)) {
            action = name == "RIGHT_CLICK" ? Click{*at, MouseButton::Right, 1}
                                           : Click{*at, MouseButton::Left, 2};
        }
    } else if (name == "MOUSE_DOWN") {
        if (const auto button = p.button()) action = MouseDown{*button};
    } else if (name == "MOUSE_UP") {
        if (const auto button = p.button()) action = MouseUp{*button};
    } else if (name == "DRAG_TO") {
        if (const auto to = p.point(options)) action = Drag{std::nullopt, *to, MouseButton::Left};
    } else if (name == "SCROLL") {
        constexpr int kMaxNotches = 1000;
        if (!p.has("dx") && !p.has("dy"))
            return Status::invalidArgument("SCROLL: parameter 'dy' (or 'dx'): missing");
        std::optional<int> dx = 0, dy = 0;
        if (p.has("dx")) dx = p.integer("dx", -kMaxNotches, kMaxNotches);
        if (dx && p.has("dy")) dy = p.integer("dy", -kMaxNotches, kMaxNotches);
        std::optional<std::optional<Point>> at = std::optional<Point>();
        if (dx && dy) at = p.optionalPoint(options);
        // computer_13 runs pyautogui.vscroll(dy): positive is up, the opposite of Scroll.
        if (dx && dy && at) action = Scroll{*at, *dx, -*dy};
    } else if (name == "TYPING") {
        if (auto text = p.string("text")) action = TypeText{std::move(*text)};
    } else if (name == "PRESS") {
        if (auto key = p.key("key")) action = PressKeys{{std::move(*key)}};
    } else if (name == "KEY_DOWN") {
        if (auto key = p.key("key")) action = KeyDown{std::move(*key)};
    } else if (name == "KEY_UP") {
        if (auto key = p.key("key")) action = KeyUp{std::move(*key)};
    } else if (name == "HOTKEY") {
        if (auto keys = p.keys()) action = PressKeys{std::move(*keys)};
    } else if (name == "WAIT") {
        action = Wait{};
    } else if (name == "FAIL") {
        action = Fail{};
    } else if (name == "DONE") {
        action = Done{};
    } else {
        return Status::invalidArgument("unknown action_type '" + snippet(name) + "'");
    }
    if (!action) return Status::invalidArgument(name + ": " + p.error());
    return std::move(*action);
}

// WAIT, DONE or FAIL on their own, in a fence or as the last line.
std::optional<Action> specialToken(std::string_view text) {
    text = trim(text);
    const std::size_t lastLine = text.rfind('\n');
    if (lastLine != std::string_view::npos) text = trim(text.substr(lastLine + 1));
    if (text.size() >= 6 && text.substr(0, 3) == "```" && text.substr(text.size() - 3) == "```")
        text = trim(text.substr(3, text.size() - 6));
    if (text == "WAIT") return Action(Wait{});
    if (text == "DONE") return Action(Done{});
    if (text == "FAIL") return Action(Fail{});
    return std::nullopt;
}

}  // namespace

std::optional<Action> specialTokenAction(std::string_view text) {
    return specialToken(text);
}

void parseComputer13(std::string_view text, const ParseOptions& options, ParsedStep& step) {
    const std::size_t firstCode = text.find_first_of("`{[");
    step.thought = std::string(trim(text.substr(0, firstCode)));
    const std::vector<nlohmann::json> values = extractJson(text);
    if (values.empty()) {
        if (std::optional<Action> token = specialToken(text)) {
            step.thought.clear();
            step.actions.push_back(std::move(*token));
        } else {
            step.errors.push_back(
                "no JSON action found (expected {\"action_type\": ..., "
                "\"parameters\": {...}} or WAIT, DONE, FAIL)");
        }
        return;
    }
    int index = 0;
    for (const nlohmann::json& value : values) {
        const auto handle = [&](const nlohmann::json& item) {
            ++index;
            Result<Action> action = parseOne(item, options);
            if (action)
                step.actions.push_back(std::move(*action));
            else
                step.errors.push_back("action " + std::to_string(index) + ": " +
                                      action.status().message());
        };
        if (value.is_array()) {
            for (const nlohmann::json& item : value)
                handle(item);
        } else {
            handle(value);
        }
    }
}

}  // namespace iris::agent::detail
