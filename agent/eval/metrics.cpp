// The closed registry of metric functions (evaluator.h). Adding a metric: implement it in the
// metrics_*.cpp file of its kind, declare it in metric_support.h, list it here.
#include "agent/eval/evaluator.h"
#include "agent/eval/metric_support.h"

namespace iris::agent::eval {

using namespace metric;  // NOLINT(google-build-using-namespace): the metric function names

const std::vector<MetricInfo>& allMetrics() {
    static const std::vector<MetricInfo> kMetrics = {
        {"infeasible", "1 iff the last action was FAIL", infeasible},
        {"exact_match", "result == rules.expected", exactMatch},
        {"match_in_list", "result in rules.expected", matchInList},
        {"is_in_list", "rules.expected in result", isInList},
        {"check_include_exclude", "result contains every rules.include and no rules.exclude",
         checkIncludeExclude},
        {"check_direct_json_object",
         "dict equals rules.expected key by key (expect_in_result, ignore_list_order)",
         checkDirectJsonObject},
        {"literal_match", "str(result) == str(expected) (options type str|list, ignore_case)",
         literalMatch},
        {"fuzzy_match", "rapidfuzz ratio of result and rules.expected (fraction)", fuzzyMatch},
        {"check_list", "file lines: every rules.expect regex matches, no rules.unexpect regex does",
         checkList},
        {"check_json",
         "JSON file values at key paths match rules.expect/unexpect (re, eq, ne, lt, le, gt, ge, "
         "approx:T)",
         checkJson},
        {"file_contains", "text file contains every rules.expected string", fileContains},
        {"compare_text_file", "text files equal (options ignore_blanks, ignore_case)",
         compareTextFile},
        {"diff_text_file", "difflib ratio over the lines of two text files (fraction)",
         diffTextFile},
        {"is_expected_url_pattern_match", "every rules.expected regex matches the URL",
         isExpectedUrlPatternMatch},
        {"is_expected_active_tab", "active URL equals rule.url (compare_urls)",
         isExpectedActiveTab},
        {"is_expected_active_tab_approximate", "active URL equals rule.url, query ignored",
         isExpectedActiveTabApproximate},
        {"is_expected_tabs", "open tab URLs equal rule.urls (compare_urls)", isExpectedTabs},
        {"is_expected_search_query", "active URL matches rules.expect.pattern",
         isExpectedSearchQuery},
        {"compare_images",
         "SSIM of two images in greyscale, resized to the smaller (options reference_base_result)",
         compareImages},
        {"check_structure_sim", "same size and SSIM >= 0.9", checkStructureSim},
        {"check_structure_sim_with_threshold",
         "same size and SSIM >= options.ssim_threshold (0.85)", checkStructureSimWithThreshold},
        {"design2code",
         "Iris: Design2Code block/text/position/color of page text blocks (options metric, "
         "pass_threshold)",
         design2code},
    };
    return kMetrics;
}

const MetricInfo* findMetric(std::string_view func) {
    for (const auto& m : allMetrics()) {
        if (m.name == func) return &m;
    }
    return nullptr;
}

}  // namespace iris::agent::eval
