#pragma once
// Helpers the metric files share (internal to agent/eval): argument checks with OSWorld's calling
// convention, Python's re on std::regex, and Python-style file reading.
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/eval/evaluator.h"

namespace iris::agent::eval::metric {

using json = nlohmann::json;

// The JSON of a value, or None for images and blocks (which no JSON metric accepts).
const json& jsonOf(const Value& v);
// The expected value as a rules object; an error naming `func` when there is none.
Result<const json*> rulesOf(const Value* expected, const char* func);
Result<const json*> ruleKey(const json& rules, const char* key, const char* func);
// Python metrics without **kwargs reject unknown keyword options.
Status onlyOptions(const json& options, std::initializer_list<const char*> allowed,
                   const char* func);
// Python's re → ECMAScript: named groups lose their names, \A and \Z become ^ and $, $ also
// matches before a final newline, and a leading (?i) becomes the icase flag. Other Python-only
// syntax fails to compile and is reported.
Result<std::regex> compileRegex(const std::string& pattern, bool icase = false,
                                bool multiline = false);
// re.search; an error when libstdc++'s matcher gives up on long input.
Result<bool> search(const std::string& text, const std::regex& re);
// A text file as Python's text mode reads it (\r\n and \r become \n); NotFound when missing.
Result<std::string> readText(const std::string& path);
// A file path argument: a non-empty string, else nullopt (Python's falsy path).
std::optional<std::string> pathOf(const Value& v);
std::vector<std::string> splitLines(const std::string& text);  // str.splitlines()

// The metric functions, by file: metrics_general.cpp, metrics_browser.cpp, metrics_visual.cpp.
#define IRIS_METRIC(name)                                                                \
    Result<double> name(const Value& result, const Value* expected, const json& options, \
                        MetricDetail& detail)
IRIS_METRIC(infeasible);
IRIS_METRIC(exactMatch);
IRIS_METRIC(matchInList);
IRIS_METRIC(isInList);
IRIS_METRIC(checkIncludeExclude);
IRIS_METRIC(checkDirectJsonObject);
IRIS_METRIC(literalMatch);
IRIS_METRIC(fuzzyMatch);
IRIS_METRIC(checkList);
IRIS_METRIC(checkJson);
IRIS_METRIC(fileContains);
IRIS_METRIC(compareTextFile);
IRIS_METRIC(diffTextFile);
IRIS_METRIC(isExpectedUrlPatternMatch);
IRIS_METRIC(isExpectedActiveTab);
IRIS_METRIC(isExpectedActiveTabApproximate);
IRIS_METRIC(isExpectedTabs);
IRIS_METRIC(isExpectedSearchQuery);
IRIS_METRIC(compareImages);
IRIS_METRIC(checkStructureSim);
IRIS_METRIC(checkStructureSimWithThreshold);
IRIS_METRIC(design2code);
#undef IRIS_METRIC

}  // namespace iris::agent::eval::metric
