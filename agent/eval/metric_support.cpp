#include "agent/eval/metric_support.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace iris::agent::eval::metric {

namespace {
const json kNone;
}  // namespace

// The JSON of a value, or None for images and blocks (which no JSON metric accepts).
const json& jsonOf(const Value& v) {
    return v.isJson() ? v.json() : kNone;
}

Result<const json*> rulesOf(const Value* expected, const char* func) {
    if (expected == nullptr) {
        return Status::invalidArgument(std::string(func) + " needs an expected value (rules)");
    }
    if (!expected->isJson() || !expected->json().is_object()) {
        return Status::invalidArgument(std::string(func) +
                                       ": the expected value must be an object of rules");
    }
    return &expected->json();
}

Result<const json*> ruleKey(const json& rules, const char* key, const char* func) {
    auto it = rules.find(key);
    if (it == rules.end())
        return Status::invalidArgument(std::string(func) + ": rules." + key + " is missing");
    return &*it;
}

// Python metrics without **kwargs reject unknown keyword options.
Status onlyOptions(const json& options, std::initializer_list<const char*> allowed,
                   const char* func) {
    for (auto it = options.begin(); it != options.end(); ++it) {
        if (std::none_of(allowed.begin(), allowed.end(),
                         [&](const char* a) { return it.key() == a; })) {
            return Status::invalidArgument(std::string(func) + ": unknown option \"" + it.key() +
                                           "\"");
        }
    }
    return Status::ok();
}

// Python's re → ECMAScript: named groups lose their names, \A and \Z become ^ and $, $ also
// matches before a final newline, and a leading (?i) becomes the icase flag. Other Python-only
// syntax fails to compile and is reported.
Result<std::regex> compileRegex(const std::string& pattern, bool icase, bool multiline) {
    std::string p;
    size_t i = 0;
    if (pattern.rfind("(?i)", 0) == 0) {
        icase = true;
        i = 4;
    }
    bool inClass = false;
    for (; i < pattern.size(); ++i) {
        if (pattern[i] == '\\' && i + 1 < pattern.size()) {
            const char n = pattern[i + 1];
            if (n == 'A') {
                p += '^';
            } else if (n == 'Z') {
                p += '$';
            } else {
                p += pattern[i];
                p += n;
            }
            ++i;
            continue;
        }
        if (pattern[i] == '[') inClass = true;
        if (pattern[i] == ']') inClass = false;
        if (pattern[i] == '$' && !inClass && !multiline) {
            p += "(?=\\n?$)";  // Python's $ also matches before a final newline
            continue;
        }
        if (pattern.compare(i, 4, "(?P<") == 0) {
            const size_t close = pattern.find('>', i);
            if (close == std::string::npos) break;
            p += '(';
            i = close;
            continue;
        }
        p += pattern[i];
    }
    auto flags = std::regex::ECMAScript;
    if (icase) flags |= std::regex::icase;
    if (multiline) flags |= std::regex::multiline;
    try {
        return std::regex(p, flags);
    } catch (const std::regex_error& e) {
        return Status::invalidArgument("regular expression \"" + pattern +
                                       "\" is not supported: " + e.what());
    }
}

// libstdc++'s matcher recurses and may give up (error_complexity, error_stack) on long input.
Result<bool> search(const std::string& text, const std::regex& re) {
    try {
        return std::regex_search(text, re);
    } catch (const std::regex_error& e) {
        return Status::outOfRange(std::string("regular expression search gave up: ") + e.what());
    }
}

Result<std::string> readText(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::notFound(path + ": cannot open the file");
    std::ostringstream ss;
    ss << in.rdbuf();
    // Python's text mode reads \r\n and \r as \n.
    std::string raw = ss.str(), text;
    text.reserve(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '\r') {
            text += '\n';
            if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
        } else {
            text += raw[i];
        }
    }
    return text;
}

// A file path argument: a string (or the first of a list), else nullopt (Python's falsy path).
std::optional<std::string> pathOf(const Value& v) {
    if (!v.isJson()) return std::nullopt;
    const json& j = v.json();
    if (j.is_string() && !j.get_ref<const std::string&>().empty()) return j.get<std::string>();
    return std::nullopt;
}

std::vector<std::string> splitLines(const std::string& text) {  // str.splitlines()
    std::vector<std::string> lines;
    std::string cur;
    for (char c : text) {
        if (c == '\n' || c == '\v' || c == '\f' || c == '\x1c' || c == '\x1d' || c == '\x1e') {
            lines.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) lines.push_back(cur);
    return lines;
}

}  // namespace iris::agent::eval::metric
