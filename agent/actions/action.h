#pragma once
// The closed set of things the agent can do, as typed values. Every parser (computer_13 JSON,
// pyautogui code, UI-TARS syntax, tool calls) produces these; every environment executes them;
// the recorder stores them as JSON. Coordinates are observation pixels (the screenshot the model
// saw), never device pixels: the environment maps them (see agent/observation.h).
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"

namespace iris::agent {

struct Point {
    double x = 0;
    double y = 0;
    friend bool operator==(const Point&, const Point&) = default;
};

enum class MouseButton { Left, Right, Middle };

// Mouse actions. A missing point means "where the pointer is now".
struct Click {
    std::optional<Point> at;
    MouseButton button = MouseButton::Left;
    int count = 1;  // 1, 2 (double click) or 3
    friend bool operator==(const Click&, const Click&) = default;
};
struct MoveTo {
    Point to;
    friend bool operator==(const MoveTo&, const MoveTo&) = default;
};
struct MouseDown {
    MouseButton button = MouseButton::Left;
    friend bool operator==(const MouseDown&, const MouseDown&) = default;
};
struct MouseUp {
    MouseButton button = MouseButton::Left;
    friend bool operator==(const MouseUp&, const MouseUp&) = default;
};
// Press at `from` (or the pointer), move to `to`, release.
struct Drag {
    std::optional<Point> from;
    Point to;
    MouseButton button = MouseButton::Left;
    friend bool operator==(const Drag&, const Drag&) = default;
};
// Wheel notches at `at` (or the pointer). Positive dy scrolls the content down (towards the end
// of the page), positive dx to the right. (pyautogui's scroll() is positive *up*: parsers flip it.)
struct Scroll {
    std::optional<Point> at;
    int dx = 0;
    int dy = 0;
    friend bool operator==(const Scroll&, const Scroll&) = default;
};

// Keyboard actions. Key names are pyautogui's (lower case): "enter", "tab", "esc", "ctrl",
// "shift", "alt", "win", "f1".."f24", "pageup", single characters "a", "1", ",".
struct TypeText {
    std::string text;  // UTF-8, typed as-is (newlines become Enter)
    friend bool operator==(const TypeText&, const TypeText&) = default;
};
// One key, or a chord pressed in order and released in reverse ({"ctrl", "shift", "t"}).
struct PressKeys {
    std::vector<std::string> keys;
    friend bool operator==(const PressKeys&, const PressKeys&) = default;
};
struct KeyDown {
    std::string key;
    friend bool operator==(const KeyDown&, const KeyDown&) = default;
};
struct KeyUp {
    std::string key;
    friend bool operator==(const KeyUp&, const KeyUp&) = default;
};

// Control.
struct Wait {
    double seconds = 1.0;
    friend bool operator==(const Wait&, const Wait&) = default;
};
struct Done {  // the model says the task is complete
    std::string message;
    friend bool operator==(const Done&, const Done&) = default;
};
struct Fail {  // the model says the task cannot be done
    std::string reason;
    friend bool operator==(const Fail&, const Fail&) = default;
};
struct Navigate {  // browser environments: load a URL (or a path inside the web project)
    std::string url;
    friend bool operator==(const Navigate&, const Navigate&) = default;
};

// Web-project file actions; paths are relative to the project root and checked by the workspace.
struct ReadFile {
    std::string path;
    friend bool operator==(const ReadFile&, const ReadFile&) = default;
};
struct WriteFile {
    std::string path;
    std::string content;
    friend bool operator==(const WriteFile&, const WriteFile&) = default;
};
// Replace the one occurrence of `oldText` (it must occur exactly once) with `newText`.
struct ReplaceInFile {
    std::string path;
    std::string oldText;
    std::string newText;
    friend bool operator==(const ReplaceInFile&, const ReplaceInFile&) = default;
};

using Action = std::variant<Click, MoveTo, MouseDown, MouseUp, Drag, Scroll, TypeText, PressKeys,
                            KeyDown, KeyUp, Wait, Done, Fail, Navigate, ReadFile, WriteFile,
                            ReplaceInFile>;

// The action's kind as a stable snake_case name ("click", "type_text", "replace_in_file"); the
// "type" field of its JSON form.
std::string_view actionName(const Action& action);

// Done or Fail: the episode ends after this action.
bool endsEpisode(const Action& action);

// ReadFile, WriteFile, ReplaceInFile: executed by the workspace, not the environment.
bool isFileAction(const Action& action);

// A short human-readable form for logs and prompts: click(640, 400), type("hello"), hotkey(ctrl+s).
std::string describe(const Action& action);

// JSON for recording and replay: {"type": "click", "x": 640, "y": 400, "button": "left", ...}.
// actionFromJson(actionToJson(a)) == a for every action; bad JSON names the field that is wrong.
nlohmann::json actionToJson(const Action& action);
Result<Action> actionFromJson(const nlohmann::json& json);

std::string_view mouseButtonName(MouseButton button);  // "left", "right", "middle"

}  // namespace iris::agent
