// Browser metrics, ported from xlang-ai/OSWorld:desktop_env/evaluators/metrics/chrome.py.
#include <algorithm>

#include "agent/eval/metric_support.h"
#include "agent/eval/python_like.h"
#include "agent/eval/url_match.h"

namespace iris::agent::eval::metric {

// --- chrome -------------------------------------------------------------------------------------

namespace {

std::optional<std::string> urlOf(const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("url") && v["url"].is_string())
        return v["url"].get<std::string>();
    return std::nullopt;
}

}  // namespace

Result<double> isExpectedUrlPatternMatch(const Value& result, const Value* expected,
                                         const json& options, MetricDetail&) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {}, "is_expected_url_pattern_match"));
    auto rules = rulesOf(expected, "is_expected_url_pattern_match");
    if (!rules) return rules.status();
    const json& r = jsonOf(result);
    if (!pyTruthy(r)) return 0.0;
    auto url = urlOf(r);
    if (!url) return 0.0;
    auto patterns = ruleKey(**rules, "expected", "is_expected_url_pattern_match");
    if (!patterns) return patterns.status();
    if (!(*patterns)->is_array())
        return Status::invalidArgument(
            "is_expected_url_pattern_match: rules.expected must be a list");
    for (const auto& p : **patterns) {
        if (!p.is_string())
            return Status::invalidArgument(
                "is_expected_url_pattern_match: patterns must be strings");
        auto re = compileRegex(p.get<std::string>());
        if (!re) return re.status();
        auto found = search(*url, *re);
        if (!found) return found.status();
        if (!*found) return 0.0;
    }
    return 1.0;
}

Result<double> isExpectedActiveTab(const Value& result, const Value* expected, const json& options,
                                   MetricDetail&) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {}, "is_expected_active_tab"));
    auto rule = rulesOf(expected, "is_expected_active_tab");
    if (!rule) return rule.status();
    const json& r = jsonOf(result);
    if (!pyTruthy(r)) return 0.0;
    if ((*rule)->value("type", "") != "url") return 0.0;
    auto want = ruleKey(**rule, "url", "is_expected_active_tab");
    if (!want) return want.status();
    auto url = urlOf(r);
    if (!url || !(*want)->is_string()) return 0.0;
    return compareUrls((*want)->get<std::string>(), *url) ? 1.0 : 0.0;
}

Result<double> isExpectedActiveTabApproximate(const Value& result, const Value* expected,
                                              const json& options, MetricDetail&) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {}, "is_expected_active_tab_approximate"));
    auto rule = rulesOf(expected, "is_expected_active_tab_approximate");
    if (!rule) return rule.status();
    const json& r = jsonOf(result);
    if (!pyTruthy(r)) return 0.0;
    if ((*rule)->value("type", "") != "url") return 0.0;
    auto want = ruleKey(**rule, "url", "is_expected_active_tab_approximate");
    if (!want) return want.status();
    auto url = urlOf(r);
    if (!url || !(*want)->is_string()) return 0.0;
    auto strip = [](const std::string& u) {
        UrlParts p = parseUrl(u);
        p.query.clear();
        return unparseUrl(p);
    };
    return strip((*want)->get<std::string>()) == strip(*url) ? 1.0 : 0.0;
}

Result<double> isExpectedTabs(const Value& result, const Value* expected, const json& options,
                              MetricDetail&) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {}, "is_expected_tabs"));
    auto rule = rulesOf(expected, "is_expected_tabs");
    if (!rule) return rule.status();
    const json& tabs = jsonOf(result);
    if (!pyTruthy(tabs) || !tabs.is_array()) return 0.0;
    if ((*rule)->value("type", "") != "url") return 0.0;
    auto want = ruleKey(**rule, "urls", "is_expected_tabs");
    if (!want) return want.status();
    if (!(*want)->is_array())
        return Status::invalidArgument("is_expected_tabs: rule.urls must be a list");
    std::vector<std::string> actual;
    for (const auto& t : tabs) {
        auto u = urlOf(t);
        if (!u) return 0.0;
        actual.push_back(*u);
    }
    // OSWorld's are_lists_equal: same length, and every expected URL matches some open tab.
    if ((*want)->size() != actual.size()) return 0.0;
    for (const auto& e : **want) {
        if (!e.is_string()) return 0.0;
        const bool found = std::any_of(actual.begin(), actual.end(), [&](const std::string& a) {
            return compareUrls(e.get<std::string>(), a);
        });
        if (!found) return 0.0;
    }
    return 1.0;
}

Result<double> isExpectedSearchQuery(const Value& result, const Value* expected,
                                     const json& options, MetricDetail&) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {}, "is_expected_search_query"));
    auto rules = rulesOf(expected, "is_expected_search_query");
    if (!rules) return rules.status();
    const json& r = jsonOf(result);
    if (!pyTruthy(r)) return 0.0;
    auto url = urlOf(r);
    const json pattern = (*rules)->value("expect", json::object()).value("pattern", json());
    if (!pattern.is_string())
        return Status::invalidArgument("is_expected_search_query: rules.expect.pattern is missing");
    if (!url) return 0.0;
    auto re = compileRegex(pattern.get<std::string>());
    if (!re) return re.status();
    auto found = search(*url, *re);
    if (!found) return found.status();
    return *found ? 1.0 : 0.0;
}

}  // namespace iris::agent::eval::metric
