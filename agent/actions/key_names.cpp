#include "agent/actions/key_names.h"

#include <algorithm>
#include <array>
#include <utility>

namespace iris::agent {
namespace {

// pyautogui's KEYBOARD_KEYS (pyautogui/__init__.py), without the whitespace characters, which
// normalizeKeyName() spells out. Sorted, for binary search.
constexpr auto kKeyboardKeys = std::to_array<std::string_view>({
    "!",
    "\"",
    "#",
    "$",
    "%",
    "&",
    "'",
    "(",
    ")",
    "*",
    "+",
    ",",
    "-",
    ".",
    "/",
    "0",
    "1",
    "2",
    "3",
    "4",
    "5",
    "6",
    "7",
    "8",
    "9",
    ":",
    ";",
    "<",
    "=",
    ">",
    "?",
    "@",
    "[",
    "\\",
    "]",
    "^",
    "_",
    "`",
    "a",
    "accept",
    "add",
    "alt",
    "altleft",
    "altright",
    "apps",
    "b",
    "backspace",
    "browserback",
    "browserfavorites",
    "browserforward",
    "browserhome",
    "browserrefresh",
    "browsersearch",
    "browserstop",
    "c",
    "capslock",
    "clear",
    "command",
    "convert",
    "ctrl",
    "ctrlleft",
    "ctrlright",
    "d",
    "decimal",
    "del",
    "delete",
    "divide",
    "down",
    "e",
    "end",
    "enter",
    "esc",
    "escape",
    "execute",
    "f",
    "f1",
    "f10",
    "f11",
    "f12",
    "f13",
    "f14",
    "f15",
    "f16",
    "f17",
    "f18",
    "f19",
    "f2",
    "f20",
    "f21",
    "f22",
    "f23",
    "f24",
    "f3",
    "f4",
    "f5",
    "f6",
    "f7",
    "f8",
    "f9",
    "final",
    "fn",
    "g",
    "h",
    "hanguel",
    "hangul",
    "hanja",
    "help",
    "home",
    "i",
    "insert",
    "j",
    "junja",
    "k",
    "kana",
    "kanji",
    "l",
    "launchapp1",
    "launchapp2",
    "launchmail",
    "launchmediaselect",
    "left",
    "m",
    "modechange",
    "multiply",
    "n",
    "nexttrack",
    "nonconvert",
    "num0",
    "num1",
    "num2",
    "num3",
    "num4",
    "num5",
    "num6",
    "num7",
    "num8",
    "num9",
    "numlock",
    "o",
    "option",
    "optionleft",
    "optionright",
    "p",
    "pagedown",
    "pageup",
    "pause",
    "pgdn",
    "pgup",
    "playpause",
    "prevtrack",
    "print",
    "printscreen",
    "prntscrn",
    "prtsc",
    "prtscr",
    "q",
    "r",
    "return",
    "right",
    "s",
    "scrolllock",
    "select",
    "separator",
    "shift",
    "shiftleft",
    "shiftright",
    "sleep",
    "space",
    "stop",
    "subtract",
    "t",
    "tab",
    "u",
    "up",
    "v",
    "volumedown",
    "volumemute",
    "volumeup",
    "w",
    "win",
    "winleft",
    "winright",
    "x",
    "y",
    "yen",
    "z",
    "{",
    "|",
    "}",
    "~",
});

// Names models use that pyautogui spells differently (xdotool, browser KeyboardEvent.key, macOS).
constexpr auto kAliases = std::to_array<std::pair<std::string_view, std::string_view>>({
    {"\t", "tab"},           {"\n", "enter"},           {"\r", "enter"},
    {" ", "space"},          {"arrowdown", "down"},     {"arrowleft", "left"},
    {"arrowright", "right"}, {"arrowup", "up"},         {"bksp", "backspace"},
    {"cmd", "command"},      {"control", "ctrl"},       {"ctl", "ctrl"},
    {"meta", "win"},         {"page_down", "pagedown"}, {"page_up", "pageup"},
    {"spacebar", "space"},   {"super", "win"},          {"windows", "win"},
    {"ins", "insert"},       {"caps_lock", "capslock"}, {"opt", "option"},
    {"escape", "esc"},       {"return", "enter"},
});

std::string toLower(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

bool inKeyboardKeys(std::string_view lower) {
    return std::binary_search(kKeyboardKeys.begin(), kKeyboardKeys.end(), lower);
}

}  // namespace

bool isKeyboardKey(std::string_view name) {
    if (name == "\t" || name == "\n" || name == "\r" || name == " ") return true;
    return inKeyboardKeys(toLower(name));
}

Result<std::string> normalizeKeyName(std::string_view name) {
    std::string lower = toLower(name);
    for (const auto& [alias, key] : kAliases)
        if (lower == alias) return std::string(key);
    if (inKeyboardKeys(lower)) return lower;
    std::string shown;
    for (const char c : name.substr(0, 40)) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f) {
            static constexpr char kHex[] = "0123456789abcdef";
            shown += "\\x";
            shown += kHex[byte >> 4];
            shown += kHex[byte & 15];
        } else {
            shown += c;
        }
    }
    if (name.size() > 40) shown += "...";
    return Status::invalidArgument("unknown key name '" + shown + "'");
}

}  // namespace iris::agent
