#pragma once
// Small ASCII string helpers shared by every layer. ASCII only on purpose: key names, URL schemes
// and hosts, file extensions and protocol tokens are ASCII, and a locale-dependent tolower would
// make parsing depend on the user's environment.

#include <cstdint>
#include <string>
#include <string_view>

namespace iris {

// `text` with A-Z mapped to a-z; every other byte (including UTF-8) unchanged.
std::string asciiLower(std::string_view text);

// Whether a and b are equal when A-Z and a-z are taken as the same (HTTP header names, schemes).
bool equalsIgnoringAsciiCase(std::string_view a, std::string_view b);

// ASCII white space: space, \t, \n, \v, \f, \r (C's isspace in the "C" locale, Python's
// str.strip() on ASCII text).
constexpr bool isAsciiSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// `text` without leading and trailing ASCII white space, as a view into `text`.
std::string_view trim(std::string_view text);

// The value of a hexadecimal digit (0-9, a-f, A-F), or -1 for any other character.
int hexDigitValue(char c);

// A byte count as a person reads it, in powers of 1024: "512 B", "1.5 KiB", "4.4 GiB".
std::string humanBytes(std::uint64_t bytes);

// `value` with `digits` digits after the point ("0.25" for 0.25, 2).
std::string fixedPoint(double value, int digits);
// A fraction as a percentage with `digits` decimals ("12.50%" for 0.125).
std::string percentText(double fraction, int digits = 2);

// Text safe inside HTML elements and attribute values: & < > " ' as character references.
std::string htmlEscape(std::string_view text);

}  // namespace iris
