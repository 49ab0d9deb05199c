#pragma once
// Keyboard key names as the agent's actions carry them: pyautogui's KEYBOARD_KEYS, lower case.
#include <string>
#include <string_view>

#include "base/status.h"

namespace iris::agent {

// True when `name` is in pyautogui's KEYBOARD_KEYS, compared case-insensitively.
bool isKeyboardKey(std::string_view name);

// The canonical name of a key a model wrote: lower case, with whitespace characters spelled out
// ("\n" -> "enter", " " -> "space") and the common names that pyautogui lacks mapped to its own
// ("control" -> "ctrl", "arrowleft" -> "left", "super" -> "win"). Unknown names are an error that
// quotes the name.
Result<std::string> normalizeKeyName(std::string_view name);

}  // namespace iris::agent
