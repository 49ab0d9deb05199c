// UI-TARS answers: "Thought: ...\nAction: click(start_box='(x,y)')", one or more calls after
// "Action:". Points come as '(x,y)', '<|box_start|>(x,y)<|box_end|>', '<point>x y</point>',
// '[x1, y1, x2, y2]' or '(x1,y1,x2,y2)' (a box: its centre), in the frame of
// ParseOptions::frame.
#include <cstdlib>
#include <map>
#include <optional>

#include "agent/actions/key_names.h"
#include "agent/actions/parse_common.h"

namespace iris::agent::detail {
namespace {

// Wheel notches per UI-TARS scroll, as UI-TARS's own pyautogui translation uses.
constexpr int kScrollNotches = 5;
// wait(): "Sleep for 5s and take a screenshot to check for any changes."
constexpr double kWaitSeconds = 5;

struct UiCall {
    std::string name;
    std::map<std::string, std::string> args;  // keyword -> value (quotes removed, escapes read)
    std::vector<std::string> positional;
};

bool isIdentifier(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Reads name(kw='value', ...) calls from the text after "Action:".
class CallReader {
public:
    explicit CallReader(std::string_view text) : m_text(text) {}

    bool atEnd() {
        skipSeparators();
        return m_pos >= m_text.size();
    }

    Result<UiCall> next() {
        skipSeparators();
        UiCall call;
        const std::size_t nameStart = m_pos;
        while (m_pos < m_text.size() && isIdentifier(m_text[m_pos]))
            ++m_pos;
        call.name = std::string(m_text.substr(nameStart, m_pos - nameStart));
        if (call.name.empty())
            return Status::invalidArgument(
                "expected an action such as click(start_box='(x,y)'), "
                "found '" +
                snippet(m_text.substr(nameStart), 30) + "'");
        skipSpaces();
        if (m_pos >= m_text.size() || m_text[m_pos] != '(')
            return Status::invalidArgument(call.name + ": expected '(' after the action name");
        ++m_pos;
        while (true) {
            skipSpaces();
            if (m_pos >= m_text.size()) return Status::invalidArgument(call.name + ": missing ')'");
            if (m_text[m_pos] == ')') {
                ++m_pos;
                break;
            }
            std::string key;
            const std::size_t keyStart = m_pos;
            while (m_pos < m_text.size() && isIdentifier(m_text[m_pos]))
                ++m_pos;
            std::size_t afterKey = m_pos;
            while (afterKey < m_text.size() && isAsciiSpace(m_text[afterKey]))
                ++afterKey;
            if (m_pos > keyStart && afterKey < m_text.size() && m_text[afterKey] == '=') {
                key = std::string(m_text.substr(keyStart, m_pos - keyStart));
                m_pos = afterKey + 1;
                skipSpaces();
            } else {
                m_pos = keyStart;
            }
            Result<std::string> value = readValue(call.name);
            if (!value) return value.status();
            if (key.empty())
                call.positional.push_back(std::move(*value));
            else
                call.args[key] = std::move(*value);
            skipSpaces();
            if (m_pos >= m_text.size()) return Status::invalidArgument(call.name + ": missing ')'");
            if (m_text[m_pos] == ',')
                ++m_pos;
            else if (m_pos >= m_text.size() || m_text[m_pos] != ')')
                return Status::invalidArgument(call.name +
                                               ": expected ',' or ')' after an "
                                               "argument");
        }
        return call;
    }

private:
    void skipSpaces() {
        while (m_pos < m_text.size() && isAsciiSpace(m_text[m_pos]))
            ++m_pos;
    }
    void skipSeparators() {
        while (m_pos < m_text.size() && (isAsciiSpace(m_text[m_pos]) || m_text[m_pos] == ';'))
            ++m_pos;
    }

    // A quoted string with Python escapes, or bare text up to a top-level ',' or ')'.
    Result<std::string> readValue(const std::string& callName) {
        if (m_pos < m_text.size() && (m_text[m_pos] == '\'' || m_text[m_pos] == '"')) {
            const char quote = m_text[m_pos++];
            std::string value;
            while (true) {
                if (m_pos >= m_text.size())
                    return Status::invalidArgument(callName + ": unterminated string");
                const char c = m_text[m_pos++];
                if (c == quote) break;
                if (c == '\\' && m_pos < m_text.size()) {
                    const char e = m_text[m_pos++];
                    switch (e) {
                        case 'n':
                            value += '\n';
                            break;
                        case 't':
                            value += '\t';
                            break;
                        case 'r':
                            value += '\r';
                            break;
                        case '\\':
                            value += '\\';
                            break;
                        case '\'':
                            value += '\'';
                            break;
                        case '"':
                            value += '"';
                            break;
                        default:
                            value += '\\';
                            value += e;
                    }
                    continue;
                }
                value += c;
            }
            return value;
        }
        int depth = 0;
        const std::size_t start = m_pos;
        while (m_pos < m_text.size()) {
            const char c = m_text[m_pos];
            if (c == '(' || c == '[' || c == '<') ++depth;
            if (c == ')' || c == ']' || c == '>') {
                if (depth == 0) break;
                --depth;
            }
            if (c == ',' && depth == 0) break;
            if (c == '\n' && depth == 0) break;
            ++m_pos;
        }
        const std::string_view bare = trim(m_text.substr(start, m_pos - start));
        if (bare.empty()) return Status::invalidArgument(callName + ": empty argument");
        return std::string(bare);
    }

    std::string_view m_text;
    std::size_t m_pos = 0;
};

// The numbers in a point or box string, in order.
std::vector<double> numbersIn(std::string_view text) {
    std::vector<double> numbers;
    std::size_t i = 0;
    // The special tokens carry no digits that matter, but strip them for clarity.
    while (i < text.size()) {
        const char c = text[i];
        const bool startsNumber =
            (c >= '0' && c <= '9') || ((c == '-' || c == '.') && i + 1 < text.size() &&
                                       text[i + 1] >= '0' && text[i + 1] <= '9');
        if (!startsNumber) {
            ++i;
            continue;
        }
        std::size_t end = i + 1;
        while (end < text.size() && ((text[end] >= '0' && text[end] <= '9') || text[end] == '.'))
            ++end;
        const std::string number(text.substr(i, end - i));
        numbers.push_back(std::strtod(number.c_str(), nullptr));
        if (numbers.size() > 8) break;
        i = end;
    }
    return numbers;
}

Result<Point> pointFrom(const std::string& text, const ParseOptions& options) {
    const std::vector<double> n = numbersIn(text);
    if (n.size() == 2) return mapPoint(n[0], n[1], options);
    if (n.size() == 4) return mapPoint((n[0] + n[2]) / 2, (n[1] + n[3]) / 2, options);
    return Status::invalidArgument("expected a point '(x,y)' or a box '(x1,y1,x2,y2)', not '" +
                                   snippet(text, 40) + "'");
}

// The first of `names` that the call has.
const std::string* argument(const UiCall& call, std::initializer_list<const char*> names) {
    for (const char* name : names) {
        const auto it = call.args.find(name);
        if (it != call.args.end()) return &it->second;
    }
    if (!call.positional.empty()) return &call.positional.front();
    return nullptr;
}

Result<Point> startPoint(const UiCall& call, const ParseOptions& options) {
    const std::string* box = argument(call, {"start_box", "point", "start_point", "box"});
    if (box == nullptr) return Status::invalidArgument("missing start_box");
    return pointFrom(*box, options);
}

Result<std::vector<std::string>> keysFrom(const std::string& text) {
    std::vector<std::string> keys;
    std::string current;
    const auto flush = [&]() -> Status {
        if (current.empty()) return Status::ok();
        Result<std::string> key = normalizeKeyName(current);
        if (!key) return key.status();
        keys.push_back(std::move(*key));
        current.clear();
        return Status::ok();
    };
    // 'ctrl c', 'ctrl+c', 'ctrl-c'; a lone '+' or '-' is the key itself.
    const std::string_view trimmed = trim(text);
    if (trimmed.size() == 1) {
        Result<std::string> key = normalizeKeyName(trimmed);
        if (!key) return key.status();
        return std::vector<std::string>{std::move(*key)};
    }
    for (const char c : trimmed) {
        if (c == ' ' || c == '+') {
            IRIS_RETURN_IF_ERROR(flush());
        } else {
            current += c;
        }
    }
    IRIS_RETURN_IF_ERROR(flush());
    if (keys.empty()) return Status::invalidArgument("no key given");
    return keys;
}

Result<Action> toAction(const UiCall& call, const ParseOptions& options) {
    const std::string& n = call.name;
    if (n == "click" || n == "left_single" || n == "left_double" || n == "double_click" ||
        n == "right_single" || n == "right_click" || n == "middle_single") {
        Result<Point> at = startPoint(call, options);
        if (!at) return at.status();
        Click click;
        click.at = *at;
        if (n == "left_double" || n == "double_click") click.count = 2;
        if (n == "right_single" || n == "right_click") click.button = MouseButton::Right;
        if (n == "middle_single") click.button = MouseButton::Middle;
        return Action(click);
    }
    if (n == "hover" || n == "mouse_move" || n == "move_to") {
        Result<Point> to = startPoint(call, options);
        if (!to) return to.status();
        return Action(MoveTo{*to});
    }
    if (n == "drag" || n == "select") {
        Result<Point> from = startPoint(call, options);
        if (!from) return from.status();
        const auto end = call.args.count("end_box") != 0 ? call.args.find("end_box")
                                                         : call.args.find("end_point");
        if (end == call.args.end()) return Status::invalidArgument("missing end_box");
        Result<Point> to = pointFrom(end->second, options);
        if (!to) return to.status();
        return Action(Drag{*from, *to, MouseButton::Left});
    }
    if (n == "hotkey" || n == "press" || n == "keydown" || n == "keyup") {
        const std::string* text = argument(call, {"key", "hotkey", "keys"});
        if (text == nullptr) return Status::invalidArgument("missing key");
        Result<std::vector<std::string>> keys = keysFrom(*text);
        if (!keys) return keys.status();
        if (n == "keydown" || n == "keyup") {
            if (keys->size() != 1)
                return Status::invalidArgument("expected one key, not '" + snippet(*text) + "'");
            if (n == "keydown") return Action(KeyDown{keys->front()});
            return Action(KeyUp{keys->front()});
        }
        return Action(PressKeys{std::move(*keys)});
    }
    if (n == "type") {
        const std::string* content = argument(call, {"content", "text"});
        if (content == nullptr) return Status::invalidArgument("missing content");
        return Action(TypeText{*content});
    }
    if (n == "scroll") {
        const auto directionIt = call.args.find("direction");
        if (directionIt == call.args.end()) return Status::invalidArgument("missing direction");
        const std::string* direction = &directionIt->second;
        Scroll scroll;
        if (call.args.count("start_box") != 0 || call.args.count("point") != 0 ||
            call.args.count("start_point") != 0) {
            Result<Point> at = startPoint(call, options);
            if (!at) return at.status();
            scroll.at = *at;
        }
        const std::string_view d = trim(*direction);
        if (d == "down")
            scroll.dy = kScrollNotches;
        else if (d == "up")
            scroll.dy = -kScrollNotches;
        else if (d == "right")
            scroll.dx = kScrollNotches;
        else if (d == "left")
            scroll.dx = -kScrollNotches;
        else
            return Status::invalidArgument("direction must be down, up, left or right, not '" +
                                           snippet(d, 20) + "'");
        return Action(scroll);
    }
    if (n == "wait") return Action(Wait{kWaitSeconds});
    if (n == "finished") {
        const std::string* content = argument(call, {"content"});
        return Action(Done{content != nullptr ? *content : std::string()});
    }
    if (n == "call_user") return Action(Fail{"the model asked for the user"});
    return Status::invalidArgument("unknown action");
}

}  // namespace

void parseUiTars(std::string_view text, const ParseOptions& options, ParsedStep& step) {
    std::size_t actionAt = text.rfind("Action:");
    std::string_view head = text.substr(0, actionAt == std::string_view::npos ? 0 : actionAt);
    std::string_view body = actionAt == std::string_view::npos ? text : text.substr(actionAt + 7);
    // "Action_Summary:" (the Doubao variant) is part of the reasoning, not an action.
    const std::size_t thoughtAt = head.find("Thought:");
    if (thoughtAt != std::string_view::npos) head = head.substr(thoughtAt + 8);
    step.thought = std::string(trim(head));

    CallReader reader(body);
    int index = 0;
    while (!reader.atEnd()) {
        ++index;
        Result<UiCall> call = reader.next();
        if (!call) {
            step.errors.push_back("action " + std::to_string(index) + ": " +
                                  call.status().message());
            break;  // the rest cannot be split reliably
        }
        Result<Action> action = toAction(*call, options);
        if (action)
            step.actions.push_back(std::move(*action));
        else
            step.errors.push_back("action " + std::to_string(index) + ": " +
                                  snippet(call->name, 30) + ": " + action.status().message());
        if (index >= 32) {
            step.errors.push_back("more than 32 actions in one answer: the rest were ignored");
            break;
        }
    }
}

}  // namespace iris::agent::detail
