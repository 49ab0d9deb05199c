#pragma once
// Small ASCII string helpers shared by every layer. ASCII only on purpose: key names, URL schemes
// and hosts, file extensions and protocol tokens are ASCII, and a locale-dependent tolower would
// make parsing depend on the user's environment.

#include <string>
#include <string_view>

namespace iris {

// `text` with A-Z mapped to a-z; every other byte (including UTF-8) unchanged.
std::string asciiLower(std::string_view text);

// The value of a hexadecimal digit (0-9, a-f, A-F), or -1 for any other character.
int hexDigitValue(char c);

}  // namespace iris
