#pragma once
// Text and pyautogui key names as X keysyms. Pure functions: no X connection needed.
#include <string>
#include <string_view>

#include "base/status.h"

namespace iris::agent {

using KeySymbol = unsigned long;  // an X KeySym

// pyautogui's key name ("enter", "ctrl", "f5", "pagedown", "a", "<") as a keysym; 0 when the
// name is unknown. Names match case-insensitively; a single character is the character itself
// ("A" is shift+a).
KeySymbol keysymForKeyName(std::string_view name);

// The keysym that types one Unicode code point: Latin-1 keysyms for U+0020..U+00FF, Unicode
// keysyms (0x01000000 + code point) above; newline and tab are Return and Tab. 0 for other
// control characters.
KeySymbol keysymForCodePoint(char32_t codePoint);

}  // namespace iris::agent
