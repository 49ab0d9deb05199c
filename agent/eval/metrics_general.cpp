// General and text-file metrics, ported from xlang-ai/OSWorld:desktop_env/evaluators/metrics/
// {general,vscode}.py with their semantics (docs/osworld.md §3.2). Arguments are positional
// as in OSWorld: (result, expected, options).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "agent/eval/metric_support.h"
#include "agent/eval/python_like.h"
#include "agent/eval/text_similarity.h"
#include "base/strings.h"

namespace iris::agent::eval::metric {

// --- general ------------------------------------------------------------------------------------

Result<double> infeasible(const Value&, const Value*, const json&, MetricDetail&) {
    return Status::internal("infeasible is scored by evaluate() from the action history");
}

Result<double> exactMatch(const Value& result, const Value* expected, const json& options,
                          MetricDetail&) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {}, "exact_match"));
    auto rules = rulesOf(expected, "exact_match");
    if (!rules) return rules.status();
    auto want = ruleKey(**rules, "expected", "exact_match");
    if (!want) return want.status();
    return pyEquals(jsonOf(result), **want) ? 1.0 : 0.0;
}

Result<double> matchInList(const Value& result, const Value* expected, const json& options,
                           MetricDetail&) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {}, "match_in_list"));
    auto rules = rulesOf(expected, "match_in_list");
    if (!rules) return rules.status();
    auto want = ruleKey(**rules, "expected", "match_in_list");
    if (!want) return want.status();
    return pyContains(**want, jsonOf(result)) ? 1.0 : 0.0;
}

Result<double> isInList(const Value& result, const Value* expected, const json& options,
                        MetricDetail&) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {}, "is_in_list"));
    auto rules = rulesOf(expected, "is_in_list");
    if (!rules) return rules.status();
    auto want = ruleKey(**rules, "expected", "is_in_list");
    if (!want) return want.status();
    return pyContains(jsonOf(result), **want) ? 1.0 : 0.0;
}

Result<double> checkIncludeExclude(const Value& result, const Value* expected, const json& options,
                                   MetricDetail&) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {}, "check_include_exclude"));
    auto rules = rulesOf(expected, "check_include_exclude");
    if (!rules) return rules.status();
    const json& r = jsonOf(result);
    if (r.is_null()) return 0.0;
    const json include = (*rules)->value("include", json::array());
    const json exclude = (*rules)->value("exclude", json::array());
    for (const auto& s : include) {
        if (!pyContains(r, s)) return 0.0;
    }
    for (const auto& s : exclude) {
        if (pyContains(r, s)) return 0.0;
    }
    return 1.0;
}

Result<double> checkDirectJsonObject(const Value& result, const Value* expected,
                                     const json& options, MetricDetail& detail) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {}, "check_direct_json_object"));
    auto rules = rulesOf(expected, "check_direct_json_object");
    if (!rules) return rules.status();
    json r = jsonOf(result);
    if (r.is_string()) {
        // OSWorld strips the text, turns every ' into " and parses it as JSON.
        std::string s = r.get<std::string>();
        while (!s.empty() && isAsciiSpace(s.back()))
            s.pop_back();
        s.erase(0, std::min(s.size(), s.find_first_not_of(" \t\n\r\f\v")));
        std::replace(s.begin(), s.end(), '\'', '"');
        r = json::parse(s, nullptr, false);
        if (r.is_discarded()) {
            detail.note = "the result is not a JSON object";
            return 0.0;
        }
    }
    if (r.is_null()) return 0.0;
    auto want = ruleKey(**rules, "expected", "check_direct_json_object");
    if (!want) return want.status();
    if (!(*want)->is_object())
        return Status::invalidArgument(
            "check_direct_json_object: rules.expected must be an object");
    for (const auto& [k, v] : (*want)->items()) {
        if (v.is_string() && v.get<std::string>() == "__EVALUATION_FAILED__") return 0.0;
    }
    if (!r.is_object()) return 0.0;  // result.get() fails in Python; its try/except scores 0
    auto got = [&](const std::string& key) { return r.contains(key) ? r[key] : json(); };
    if (!(*rules)->value("expect_in_result", false)) {
        const bool ignoreOrder = (*rules)->value("ignore_list_order", false);
        for (const auto& [k, v] : (*want)->items()) {
            if (ignoreOrder && v.is_array()) {
                json a = v, b = got(k);
                if (!b.is_array()) return 0.0;
                std::sort(a.begin(), a.end());
                std::sort(b.begin(), b.end());
                if (!pyEquals(a, b)) return 0.0;
            } else if (!pyEquals(v, got(k))) {
                return 0.0;
            }
        }
        return 1.0;
    }
    for (const auto& [k, v] : (*want)->items()) {
        const json g = got(k);
        if (v.is_array()) {
            bool any = false;
            for (const auto& each : v) {
                if ((g.is_array() && pyContains(g, each)) || (g.is_string() && pyEquals(each, g))) {
                    any = true;
                    break;
                }
            }
            if (!any) return 0.0;
        } else if (v.is_string()) {
            if (!pyContains(g, v)) return 0.0;
        } else {
            return 0.0;
        }
    }
    return 1.0;
}

Result<double> literalMatch(const Value& result, const Value* expected, const json& options,
                            MetricDetail&) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {"type", "ignore_case"}, "literal_match"));
    if (expected == nullptr)
        return Status::invalidArgument("literal_match needs an expected value");
    const std::string type = options.value("type", "str");
    const bool ignoreCase = options.value("ignore_case", false);
    const json& a = jsonOf(result);
    const json& b = jsonOf(*expected);
    auto norm = [&](const json& v) { return ignoreCase ? asciiLower(pyStr(v)) : pyStr(v); };
    if (type == "str") return norm(a) == norm(b) ? 1.0 : 0.0;
    if (type == "list") {
        if (!a.is_array() || !b.is_array() || a.size() != b.size()) return 0.0;
        for (size_t i = 0; i < a.size(); ++i) {
            if (norm(a[i]) != norm(b[i])) return 0.0;
        }
        return 1.0;
    }
    return Status::invalidArgument("literal_match: type \"" + type +
                                   "\" is not supported (str, list)");
}

Result<double> fuzzyMatch(const Value& result, const Value* expected, const json& options,
                          MetricDetail&) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {}, "fuzzy_match"));
    auto rules = rulesOf(expected, "fuzzy_match");
    if (!rules) return rules.status();
    auto want = ruleKey(**rules, "expected", "fuzzy_match");
    if (!want) return want.status();
    const json& r = jsonOf(result);
    if (r.is_null()) return 0.0;  // rapidfuzz scores None as 0
    if (!r.is_string() || !(*want)->is_string()) {
        return Status::invalidArgument("fuzzy_match compares two strings");
    }
    return fuzzRatio(r.get<std::string>(), (*want)->get<std::string>());
}

Result<double> checkList(const Value& result, const Value* expected, const json& options,
                         MetricDetail&) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {}, "check_list"));
    auto rules = rulesOf(expected, "check_list");
    if (!rules) return rules.status();
    auto path = pathOf(result);
    if (!path) return 0.0;
    std::vector<std::regex> expect, unexpect;
    for (const auto& [key, dst] :
         {std::pair{"expect", &expect}, std::pair{"unexpect", &unexpect}}) {
        for (const auto& p : (*rules)->value(key, json::array())) {
            if (!p.is_string())
                return Status::invalidArgument(std::string("check_list: rules.") + key +
                                               " must hold strings");
            auto re = compileRegex(p.get<std::string>());
            if (!re) return re.status();
            dst->push_back(std::move(*re));
        }
    }
    auto text = readText(*path);
    if (!text) return text.status();
    std::vector<bool> seen(expect.size(), false);
    bool clean = true;
    // Python iterates the file's lines with their '\n'.
    std::istringstream in(*text);
    std::string line;
    while (std::getline(in, line)) {
        if (!in.eof()) line += '\n';
        for (size_t i = 0; i < expect.size(); ++i) {
            if (seen[i]) continue;
            auto found = search(line, expect[i]);
            if (!found) return found.status();
            seen[i] = *found;
        }
        for (const auto& re : unexpect) {
            auto found = search(line, re);
            if (!found) return found.status();
            clean = clean && !*found;
        }
    }
    return std::all_of(seen.begin(), seen.end(), [](bool b) { return b; }) && clean ? 1.0 : 0.0;
}

namespace {

// OSWorld's _match_value_to_rule: re[.FLAG...], eq/ne/le/lt/ge/gt, approx:<tolerance>.
Result<bool> matchValueToRule(const json& value, const json& rule) {
    const std::string method = rule.value("method", "");
    const json ref = rule.contains("ref") ? rule["ref"] : json();
    if (method.rfind("re", 0) == 0 && (method.size() == 2 || method[2] == '.')) {
        bool icase = false, multiline = false;
        std::istringstream flags(method.size() > 2 ? method.substr(3) : "");
        for (std::string f; std::getline(flags, f, '.');) {
            if (f == "I" || f == "IGNORECASE") {
                icase = true;
            } else if (f == "M" || f == "MULTILINE") {
                multiline = true;
            } else {
                return Status::unsupported("check_json: regex flag " + f + " is not supported");
            }
        }
        if (!ref.is_string() || !value.is_string()) return false;
        auto re = compileRegex(ref.get<std::string>(), icase, multiline);
        if (!re) return re.status();
        return search(value.get<std::string>(), *re);
    }
    if (method == "eq") return pyEquals(value, ref);
    if (method == "ne") return !pyEquals(value, ref);
    if (method == "le" || method == "lt" || method == "ge" || method == "gt") {
        auto c = pyCompare(value, ref);
        if (!c)
            return Status::invalidArgument("check_json: cannot order " + pyRepr(value) + " and " +
                                           pyRepr(ref));
        if (method == "le") return *c <= 0;
        if (method == "lt") return *c < 0;
        if (method == "ge") return *c >= 0;
        return *c > 0;
    }
    if (method.rfind("approx:", 0) == 0) {
        double tolerance = 0, v = 0;
        try {
            tolerance = std::stod(method.substr(7));
        } catch (const std::exception&) {
            return Status::invalidArgument("check_json: bad method " + method);
        }
        if (value.is_number()) {
            v = value.get<double>();
        } else if (value.is_string()) {
            try {
                size_t used = 0;
                v = std::stod(value.get<std::string>(), &used);
            } catch (const std::exception&) {
                return false;
            }
        } else {
            return false;
        }
        if (!ref.is_number())
            return Status::invalidArgument("check_json: approx needs a numeric ref");
        return std::abs(v - ref.get<double>()) <= tolerance;
    }
    return Status::unsupported("check_json: method \"" + method + "\" is not supported");
}

}  // namespace

Result<double> checkJson(const Value& result, const Value* expected, const json& options,
                         MetricDetail&) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {"is_yaml"}, "check_json"));
    if (options.value("is_yaml", false))
        return Status::unsupported("check_json: is_yaml is not supported");
    auto rules = rulesOf(expected, "check_json");
    if (!rules) return rules.status();
    auto path = pathOf(result);
    if (!path) return 0.0;
    auto text = readText(*path);
    if (!text) return text.status();
    const json doc = json::parse(*text, nullptr, false);
    if (doc.is_discarded()) return Status::invalidArgument(*path + ": not valid JSON");
    auto lookup = [&](const json& keys) -> std::optional<json> {
        const json* v = &doc;
        for (const auto& k : keys) {
            if (v->is_object() && k.is_string() && v->contains(k.get<std::string>())) {
                v = &(*v)[k.get<std::string>()];
            } else if (v->is_array() && k.is_number_integer() && k.get<long long>() >= 0 &&
                       size_t(k.get<long long>()) < v->size()) {
                v = &(*v)[size_t(k.get<long long>())];
            } else {
                return std::nullopt;
            }
        }
        return *v;
    };
    bool metric = true;
    for (const auto& r : (*rules)->value("expect", json::array())) {
        auto v = lookup(r.value("key", json::array()));
        if (!v) return 0.0;
        auto m = matchValueToRule(*v, r);
        if (!m) return m.status();
        metric = metric && *m;
    }
    for (const auto& r : (*rules)->value("unexpect", json::array())) {
        auto v = lookup(r.value("key", json::array()));
        auto m = matchValueToRule(v ? *v : json(), r);
        if (!m) return m.status();
        metric = metric && !*m;
    }
    return metric ? 1.0 : 0.0;
}

Result<double> fileContains(const Value& result, const Value* expected, const json& options,
                            MetricDetail&) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {}, "file_contains"));
    auto rules = rulesOf(expected, "file_contains");
    if (!rules) return rules.status();
    auto path = pathOf(result);
    if (!path) return 0.0;
    auto text = readText(*path);
    if (!text) return 0.0;  // OSWorld's bare except
    for (const auto& s : (*rules)->value("expected", json::array())) {
        if (!s.is_string() || text->find(s.get<std::string>()) == std::string::npos) return 0.0;
    }
    return 1.0;
}

// --- text files ---------------------------------------------------------------------------------

Result<double> compareTextFile(const Value& result, const Value* expected, const json& options,
                               MetricDetail&) {
    IRIS_RETURN_IF_ERROR(
        onlyOptions(options, {"ignore_blanks", "ignore_case"}, "compare_text_file"));
    auto actual = pathOf(result);
    if (!actual) return 0.0;
    if (expected == nullptr)
        return Status::invalidArgument("compare_text_file needs an expected file");
    auto gold = pathOf(*expected);
    if (!gold)
        return Status::invalidArgument("compare_text_file: the expected value is not a file path");
    auto a = readText(*actual);
    if (!a) return a.status();
    auto b = readText(*gold);
    if (!b) return b.status();
    auto blanks = [](const std::string& s) {
        std::string t;
        bool space = false;
        for (char c : s) {
            if (isAsciiSpace(c)) {
                space = true;
                continue;
            }
            if (space && !t.empty()) t += ' ';
            space = false;
            t += c;
        }
        return t;  // strip + \s+ -> ' '
    };
    std::string x = *a, y = *b;
    if (options.value("ignore_blanks", false)) {
        x = blanks(x);
        y = blanks(y);
    }
    if (options.value("ignore_case", false)) {
        x = asciiLower(x);
        y = asciiLower(y);
    }
    return x == y ? 1.0 : 0.0;
}

Result<double> diffTextFile(const Value& result, const Value* expected, const json& options,
                            MetricDetail&) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {}, "diff_text_file"));
    auto actual = pathOf(result);
    if (!actual) return 0.0;
    if (expected == nullptr)
        return Status::invalidArgument("diff_text_file needs an expected file");
    auto gold = pathOf(*expected);
    if (!gold)
        return Status::invalidArgument("diff_text_file: the expected value is not a file path");
    auto a = readText(*actual);
    if (!a) return a.status();
    auto b = readText(*gold);
    if (!b) return b.status();
    return sequenceMatcherRatio(splitLines(*a), splitLines(*b));
}

}  // namespace iris::agent::eval::metric
