#pragma once
// Python semantics on JSON values, for metrics ported from OSWorld: truthiness, ==, `in`, str().
// Internal to agent/eval (and its tests).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace iris::agent::eval {

// bool(v): None, False, 0, "", [] and {} are false.
bool pyTruthy(const nlohmann::json& v);
// v == w as Python compares dicts, lists, str, numbers (1 == 1.0 == True) and None.
bool pyEquals(const nlohmann::json& a, const nlohmann::json& b);
// needle in haystack: substring for two strings, element (pyEquals) for a list, key for a dict.
// False for anything else (Python would raise TypeError; the metrics then score 0).
bool pyContains(const nlohmann::json& haystack, const nlohmann::json& needle);
// str(v): strings as they are, None/True/False, repr() of floats ("1.0"), containers as Python
// prints them ("['a', 1]", "{'k': None}").
std::string pyStr(const nlohmann::json& v);
std::string pyRepr(const nlohmann::json& v);
// Python's ordering of two numbers or two strings (for le/lt/ge/gt); nullopt when Python raises.
std::optional<int> pyCompare(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace iris::agent::eval
