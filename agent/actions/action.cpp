#include "agent/actions/action.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include <nlohmann/json.hpp>

#include "agent/actions/parse_common.h"

namespace iris::agent {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
    using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// Shortest readable form: 640 for 640.0, 640.5 for 640.5.
std::string formatNumber(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.6g", value);
    return buffer;
}

std::string formatPoint(const Point& p) {
    return formatNumber(p.x) + ", " + formatNumber(p.y);
}

// A quoted, escaped and (for logs and prompts) shortened string: snippet() keeps it printable
// and valid UTF-8; quotes and backslashes are escaped first so the quotation stays unambiguous.
std::string quoteText(std::string_view text, std::size_t maxBytes = 120) {
    std::string escaped;
    escaped.reserve(text.size());
    for (const char c : text) {
        if (c == '"' || c == '\\') escaped += '\\';
        escaped += c;
    }
    return '"' + detail::snippet(escaped, maxBytes) + '"';
}

std::string joinKeys(const std::vector<std::string>& keys) {
    std::string out;
    for (const std::string& key : keys) {
        if (!out.empty()) out += '+';
        out += key;
    }
    return out;
}

Status fieldError(std::string_view field, std::string_view problem) {
    return Status::invalidArgument("action JSON: field '" + std::string(field) +
                                   "': " + std::string(problem));
}

// Typed field readers: each names the field when it is missing or of the wrong kind.
class Fields {
public:
    explicit Fields(const nlohmann::json& json) : m_json(json) {}

    bool has(const char* name) const { return m_json.contains(name); }

    Result<double> number(const char* name) const {
        const auto it = m_json.find(name);
        if (it == m_json.end()) return fieldError(name, "missing");
        if (!it->is_number()) return fieldError(name, "expected a number");
        const double value = it->get<double>();
        if (!std::isfinite(value)) return fieldError(name, "expected a finite number");
        return value;
    }

    Result<int> integer(const char* name, int minimum, int maximum) const {
        const auto it = m_json.find(name);
        if (it == m_json.end()) return fieldError(name, "missing");
        if (!it->is_number_integer()) return fieldError(name, "expected an integer");
        constexpr auto kLargest =
            static_cast<unsigned long long>(std::numeric_limits<long long>::max());
        const long long value =
            it->is_number_unsigned()
                ? static_cast<long long>(std::min(it->get<unsigned long long>(), kLargest))
                : it->get<long long>();
        if (value < minimum || value > maximum)
            return fieldError(name, "expected an integer from " + std::to_string(minimum) + " to " +
                                        std::to_string(maximum));
        return static_cast<int>(value);
    }

    Result<std::string> string(const char* name) const {
        const auto it = m_json.find(name);
        if (it == m_json.end()) return fieldError(name, "missing");
        if (!it->is_string()) return fieldError(name, "expected a string");
        return it->get<std::string>();
    }

    Result<std::string> optionalString(const char* name) const {
        if (!has(name)) return std::string();
        return string(name);
    }

    Result<Point> point(const char* xName, const char* yName) const {
        Result<double> x = number(xName);
        if (!x) return x.status();
        Result<double> y = number(yName);
        if (!y) return y.status();
        return Point{*x, *y};
    }

    // Both coordinates or neither.
    Result<std::optional<Point>> optionalPoint(const char* xName, const char* yName) const {
        if (!has(xName) && !has(yName)) return std::optional<Point>();
        Result<Point> p = point(xName, yName);
        if (!p) return p.status();
        return std::optional<Point>(*p);
    }

    Result<MouseButton> button() const {
        if (!has("button")) return MouseButton::Left;
        Result<std::string> name = string("button");
        if (!name) return name.status();
        if (*name == "left") return MouseButton::Left;
        if (*name == "right") return MouseButton::Right;
        if (*name == "middle") return MouseButton::Middle;
        return fieldError("button",
                          "expected \"left\", \"right\" or \"middle\", not " + quoteText(*name));
    }

    Result<std::vector<std::string>> keys() const {
        const auto it = m_json.find("keys");
        if (it == m_json.end()) return fieldError("keys", "missing");
        if (!it->is_array()) return fieldError("keys", "expected an array of strings");
        if (it->empty()) return fieldError("keys", "expected at least one key");
        std::vector<std::string> keys;
        for (const nlohmann::json& key : *it) {
            if (!key.is_string() || key.get_ref<const std::string&>().empty())
                return fieldError("keys", "expected an array of non-empty strings");
            keys.push_back(key.get<std::string>());
        }
        return keys;
    }

private:
    const nlohmann::json& m_json;
};

// Assigns the value of `result` to `out`, or returns its error from the enclosing function.
#define IRIS_ASSIGN_OR_RETURN_FIELD(out, expr)           \
    do {                                                 \
        auto fieldResult_ = (expr);                      \
        if (!fieldResult_) return fieldResult_.status(); \
        out = std::move(*fieldResult_);                  \
    } while (false)

Result<Action> fromFields(std::string_view type, const Fields& f) {
    if (type == "click") {
        Click a;
        IRIS_ASSIGN_OR_RETURN_FIELD(a.at, f.optionalPoint("x", "y"));
        IRIS_ASSIGN_OR_RETURN_FIELD(a.button, f.button());
        if (f.has("count")) IRIS_ASSIGN_OR_RETURN_FIELD(a.count, f.integer("count", 1, 3));
        return Action(a);
    }
    if (type == "move_to") {
        MoveTo a;
        IRIS_ASSIGN_OR_RETURN_FIELD(a.to, f.point("x", "y"));
        return Action(a);
    }
    if (type == "mouse_down") {
        MouseDown a;
        IRIS_ASSIGN_OR_RETURN_FIELD(a.button, f.button());
        return Action(a);
    }
    if (type == "mouse_up") {
        MouseUp a;
        IRIS_ASSIGN_OR_RETURN_FIELD(a.button, f.button());
        return Action(a);
    }
    if (type == "drag") {
        Drag a;
        IRIS_ASSIGN_OR_RETURN_FIELD(a.from, f.optionalPoint("from_x", "from_y"));
        IRIS_ASSIGN_OR_RETURN_FIELD(a.to, f.point("x", "y"));
        IRIS_ASSIGN_OR_RETURN_FIELD(a.button, f.button());
        return Action(a);
    }
    if (type == "scroll") {
        constexpr int kMaxNotches = 10000;
        Scroll a;
        IRIS_ASSIGN_OR_RETURN_FIELD(a.at, f.optionalPoint("x", "y"));
        if (f.has("dx"))
            IRIS_ASSIGN_OR_RETURN_FIELD(a.dx, f.integer("dx", -kMaxNotches, kMaxNotches));
        if (f.has("dy"))
            IRIS_ASSIGN_OR_RETURN_FIELD(a.dy, f.integer("dy", -kMaxNotches, kMaxNotches));
        return Action(a);
    }
    if (type == "type_text") {
        TypeText a;
        IRIS_ASSIGN_OR_RETURN_FIELD(a.text, f.string("text"));
        return Action(a);
    }
    if (type == "press_keys") {
        PressKeys a;
        IRIS_ASSIGN_OR_RETURN_FIELD(a.keys, f.keys());
        return Action(a);
    }
    if (type == "key_down" || type == "key_up") {
        std::string key;
        IRIS_ASSIGN_OR_RETURN_FIELD(key, f.string("key"));
        if (key.empty()) return fieldError("key", "expected a non-empty key name");
        if (type == "key_down") return Action(KeyDown{std::move(key)});
        return Action(KeyUp{std::move(key)});
    }
    if (type == "wait") {
        Wait a;
        if (f.has("seconds")) IRIS_ASSIGN_OR_RETURN_FIELD(a.seconds, f.number("seconds"));
        if (a.seconds < 0) return fieldError("seconds", "expected a number >= 0");
        return Action(a);
    }
    if (type == "done") {
        Done a;
        IRIS_ASSIGN_OR_RETURN_FIELD(a.message, f.optionalString("message"));
        return Action(a);
    }
    if (type == "fail") {
        Fail a;
        IRIS_ASSIGN_OR_RETURN_FIELD(a.reason, f.optionalString("reason"));
        return Action(a);
    }
    if (type == "navigate") {
        Navigate a;
        IRIS_ASSIGN_OR_RETURN_FIELD(a.url, f.string("url"));
        return Action(a);
    }
    if (type == "read_file") {
        ReadFile a;
        IRIS_ASSIGN_OR_RETURN_FIELD(a.path, f.string("path"));
        return Action(a);
    }
    if (type == "write_file") {
        WriteFile a;
        IRIS_ASSIGN_OR_RETURN_FIELD(a.path, f.string("path"));
        IRIS_ASSIGN_OR_RETURN_FIELD(a.content, f.string("content"));
        return Action(a);
    }
    if (type == "replace_in_file") {
        ReplaceInFile a;
        IRIS_ASSIGN_OR_RETURN_FIELD(a.path, f.string("path"));
        IRIS_ASSIGN_OR_RETURN_FIELD(a.oldText, f.string("old_text"));
        IRIS_ASSIGN_OR_RETURN_FIELD(a.newText, f.string("new_text"));
        return Action(a);
    }
    return fieldError("type", "unknown action type " + quoteText(type));
}

#undef IRIS_ASSIGN_OR_RETURN_FIELD

}  // namespace

std::string_view mouseButtonName(MouseButton button) {
    switch (button) {
        case MouseButton::Left:
            return "left";
        case MouseButton::Right:
            return "right";
        case MouseButton::Middle:
            return "middle";
    }
    return "left";
}

std::string_view actionName(const Action& action) {
    return std::visit(Overloaded{
                          [](const Click&) { return std::string_view("click"); },
                          [](const MoveTo&) { return std::string_view("move_to"); },
                          [](const MouseDown&) { return std::string_view("mouse_down"); },
                          [](const MouseUp&) { return std::string_view("mouse_up"); },
                          [](const Drag&) { return std::string_view("drag"); },
                          [](const Scroll&) { return std::string_view("scroll"); },
                          [](const TypeText&) { return std::string_view("type_text"); },
                          [](const PressKeys&) { return std::string_view("press_keys"); },
                          [](const KeyDown&) { return std::string_view("key_down"); },
                          [](const KeyUp&) { return std::string_view("key_up"); },
                          [](const Wait&) { return std::string_view("wait"); },
                          [](const Done&) { return std::string_view("done"); },
                          [](const Fail&) { return std::string_view("fail"); },
                          [](const Navigate&) { return std::string_view("navigate"); },
                          [](const ReadFile&) { return std::string_view("read_file"); },
                          [](const WriteFile&) { return std::string_view("write_file"); },
                          [](const ReplaceInFile&) { return std::string_view("replace_in_file"); },
                      },
                      action);
}

bool endsEpisode(const Action& action) {
    return std::holds_alternative<Done>(action) || std::holds_alternative<Fail>(action);
}

bool isFileAction(const Action& action) {
    return std::holds_alternative<ReadFile>(action) || std::holds_alternative<WriteFile>(action) ||
           std::holds_alternative<ReplaceInFile>(action);
}

std::string describe(const Action& action) {
    return std::visit<std::string>(
        Overloaded{
            [](const Click& a) {
                std::string name = a.count == 2   ? "double_click"
                                   : a.count == 3 ? "triple_click"
                                                  : "click";
                if (a.button == MouseButton::Right)
                    name = a.count == 1 ? "right_click" : "right_" + name;
                if (a.button == MouseButton::Middle)
                    name = a.count == 1 ? "middle_click" : "middle_" + name;
                return name + "(" + (a.at ? formatPoint(*a.at) : std::string()) + ")";
            },
            [](const MoveTo& a) { return "move_to(" + formatPoint(a.to) + ")"; },
            [](const MouseDown& a) {
                return "mouse_down(" + std::string(mouseButtonName(a.button)) + ")";
            },
            [](const MouseUp& a) {
                return "mouse_up(" + std::string(mouseButtonName(a.button)) + ")";
            },
            [](const Drag& a) {
                std::string out = "drag(";
                if (a.from) out += formatPoint(*a.from) + " -> ";
                out += formatPoint(a.to);
                if (a.button != MouseButton::Left)
                    out += ", " + std::string(mouseButtonName(a.button));
                return out + ")";
            },
            [](const Scroll& a) {
                std::string out = "scroll(";
                if (a.at) out += formatPoint(*a.at) + ", ";
                if (a.dx != 0) out += "dx=" + std::to_string(a.dx) + (a.dy != 0 ? ", " : "");
                if (a.dy != 0 || a.dx == 0) out += "dy=" + std::to_string(a.dy);
                return out + ")";
            },
            [](const TypeText& a) { return "type(" + quoteText(a.text) + ")"; },
            [](const PressKeys& a) {
                return (a.keys.size() == 1 ? "press(" : "hotkey(") + joinKeys(a.keys) + ")";
            },
            [](const KeyDown& a) { return "key_down(" + a.key + ")"; },
            [](const KeyUp& a) { return "key_up(" + a.key + ")"; },
            [](const Wait& a) { return "wait(" + formatNumber(a.seconds) + "s)"; },
            [](const Done& a) { return "done(" + quoteText(a.message) + ")"; },
            [](const Fail& a) { return "fail(" + quoteText(a.reason) + ")"; },
            [](const Navigate& a) { return "navigate(" + quoteText(a.url) + ")"; },
            [](const ReadFile& a) { return "read_file(" + quoteText(a.path) + ")"; },
            [](const WriteFile& a) {
                return "write_file(" + quoteText(a.path) + ", " + std::to_string(a.content.size()) +
                       " bytes)";
            },
            [](const ReplaceInFile& a) {
                return "replace_in_file(" + quoteText(a.path) + ", " + quoteText(a.oldText, 40) +
                       " -> " + quoteText(a.newText, 40) + ")";
            },
        },
        action);
}

nlohmann::json actionToJson(const Action& action) {
    nlohmann::json json = nlohmann::json::object();
    json["type"] = std::string(actionName(action));
    const auto putPoint = [&json](const Point& p, const char* xName, const char* yName) {
        json[xName] = p.x;
        json[yName] = p.y;
    };
    std::visit(
        Overloaded{
            [&](const Click& a) {
                if (a.at) putPoint(*a.at, "x", "y");
                json["button"] = std::string(mouseButtonName(a.button));
                json["count"] = a.count;
            },
            [&](const MoveTo& a) { putPoint(a.to, "x", "y"); },
            [&](const MouseDown& a) { json["button"] = std::string(mouseButtonName(a.button)); },
            [&](const MouseUp& a) { json["button"] = std::string(mouseButtonName(a.button)); },
            [&](const Drag& a) {
                if (a.from) putPoint(*a.from, "from_x", "from_y");
                putPoint(a.to, "x", "y");
                json["button"] = std::string(mouseButtonName(a.button));
            },
            [&](const Scroll& a) {
                if (a.at) putPoint(*a.at, "x", "y");
                json["dx"] = a.dx;
                json["dy"] = a.dy;
            },
            [&](const TypeText& a) { json["text"] = a.text; },
            [&](const PressKeys& a) { json["keys"] = a.keys; },
            [&](const KeyDown& a) { json["key"] = a.key; },
            [&](const KeyUp& a) { json["key"] = a.key; },
            [&](const Wait& a) { json["seconds"] = a.seconds; },
            [&](const Done& a) { json["message"] = a.message; },
            [&](const Fail& a) { json["reason"] = a.reason; },
            [&](const Navigate& a) { json["url"] = a.url; },
            [&](const ReadFile& a) { json["path"] = a.path; },
            [&](const WriteFile& a) {
                json["path"] = a.path;
                json["content"] = a.content;
            },
            [&](const ReplaceInFile& a) {
                json["path"] = a.path;
                json["old_text"] = a.oldText;
                json["new_text"] = a.newText;
            },
        },
        action);
    return json;
}

Result<Action> actionFromJson(const nlohmann::json& json) {
    if (!json.is_object())
        return Status::invalidArgument("action JSON: expected an object, got " +
                                       std::string(json.type_name()));
    const Fields fields(json);
    Result<std::string> type = fields.string("type");
    if (!type) return type.status();
    return fromFields(*type, fields);
}

}  // namespace iris::agent
