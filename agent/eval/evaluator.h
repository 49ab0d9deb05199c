#pragma once
// OSWorld's evaluate() (docs/osworld.md §3.1) over a closed, typed registry of metric functions and
// getters. Names not in the registry are reported by name, never guessed.
//
// Order, exactly as upstream (postconfig is the runner's job and runs before evaluate()):
//   1. func "infeasible": 1 iff the last action was FAIL, else 0.
//   2. any other task whose last action was FAIL: 0, no metric runs.
//   3. one func: result getter (a missing file -> 0); expected getter when "expected" is present
//      and non-empty; metric(result, expected, options) positionally.
//   4. a list: in order; "and" returns 0 at the first metric scoring 0.0 or at a missing file in a
//      result getter, else the mean; "or" returns 1 at the first metric scoring 1.0, else the max.
//      Under "or" a missing file is only noted and the metric runs on the previous index's result
//      (upstream's stale result_state; the first index gets None).
// Scores are doubles in [0, 1]. A getter or metric error that is not a missing file (bad rules, a
// command the run forbids, no browser) fails evaluate() with a message naming func and index.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/core/mat.hpp>

#include "agent/eval/page_blocks.h"
#include "agent/eval/task.h"
#include "base/status.h"

namespace iris::agent::eval {

// What a getter returns: a Python-like JSON value (str, dict, list, number, bool, None = null),
// an image (8-bit BGR), or the text blocks of a page.
struct Value {
    std::variant<nlohmann::json, cv::Mat, PageTextBlocks> data = nlohmann::json();

    Value() = default;
    Value(nlohmann::json j) : data(std::move(j)) {}  // NOLINT(google-explicit-constructor)
    Value(cv::Mat m) : data(std::move(m)) {}         // NOLINT(google-explicit-constructor)
    Value(PageTextBlocks b) : data(std::move(b)) {}  // NOLINT(google-explicit-constructor)

    bool isJson() const { return std::holds_alternative<nlohmann::json>(data); }
    bool isNone() const { return isJson() && json().is_null(); }
    const nlohmann::json& json() const { return std::get<nlohmann::json>(data); }
    // At most `maxChars` characters for reports: JSON dumped, "<image 1280x800>", "<12 blocks>".
    std::string brief(size_t maxChars = 160) const;
};

struct TabInfo {
    std::string title;
    std::string url;
};

struct CommandOutput {
    std::string out;  // stdout
    std::string err;  // stderr
    int exitCode = 0;
};

enum class QueryLanguage { Css, XPath };
enum class QueryValue { TextContent, InputValue };

// What getters read, implemented by the runner over the real environment (app/) and by fakes in
// tests. Called from the evaluating thread only. Status codes matter: NotFound means "this file
// does not exist" (OSWorld's FileNotFoundError) and is used for nothing else; use Unsupported when
// the run cannot provide something (no browser, commands not allowed) and IoError when it failed.
class EvaluationContext {
public:
    virtual ~EvaluationContext() = default;

    // {PROJECT_DIR}, {PROJECT_URL}, {TASK_DIR}, {SCREEN_WIDTH}, {SCREEN_HEIGHT}, ... (task.h).
    // evaluate() substitutes them into every getter spec and option before use.
    virtual const Variables& variables() const = 0;
    // The run's own temporary folder; vm_file paths must lie in it or in {PROJECT_DIR}.
    virtual std::filesystem::path runTempDir() const = 0;
    // Where "execute" steps with stdout/stderr wrote their files (cache_file reads here).
    virtual std::filesystem::path cacheDir() const = 0;
    // The task file's folder (cloud_file paths are relative to it).
    virtual std::filesystem::path taskDir() const = 0;

    // True when the agent's last action was FAIL (the string or {"action_type": "FAIL"}).
    virtual bool lastActionWasFail() const = 0;

    // vm_file: a local, readable path holding the environment's file `path` (absolute; already
    // checked to be inside the allowed folders). NotFound when it does not exist. The default
    // returns `path` itself when it is a regular file: Iris's environments are local.
    virtual Result<std::filesystem::path> fetchFile(const std::filesystem::path& path);

    // vm_command_line / vm_command_error. Unsupported unless the run allows commands.
    virtual Result<CommandOutput> runCommand(const CommandSpec& command);

    // http(s) downloads for cloud_file; Unsupported unless the run allows network. Writes `dest`.
    virtual Status download(const std::string& url, const std::filesystem::path& dest);

    // The browser. Unsupported when the environment has none.
    virtual Result<TabInfo> activeTab() = 0;
    virtual Result<std::vector<TabInfo>> openTabs() = 0;
    virtual Result<std::string> activePageHtml() = 0;  // document.documentElement.outerHTML
    // Elements of the active page matching `expression`, in document order: their textContent
    // (untrimmed) or, for QueryValue::InputValue, their .value.
    virtual Result<std::vector<std::string>> queryActivePage(QueryLanguage language,
                                                             const std::string& expression,
                                                             QueryValue what) = 0;

    // A screenshot, 8-bit BGR: of the active page when `url` is empty (the screen in a desktop
    // environment), else of `url` rendered in a separate page at the run's viewport.
    virtual Result<cv::Mat> screenshot(const std::string& url) = 0;
    // The text blocks of the active page (`url` empty) or of `url` rendered separately, in CSS px
    // of the full page (page_blocks.h describes how they are collected).
    virtual Result<PageTextBlocks> pageTextBlocks(const std::string& url) = 0;
};

// One metric of the task, for reports.
struct MetricDetail {
    size_t index = 0;
    std::string func;
    std::string resultType;    // getter type, or empty
    std::string expectedType;  // getter type, or empty
    std::string result;        // Value::brief() of what the getter returned
    std::string expected;
    std::optional<double> score;  // nullopt when it did not run (an earlier metric decided)
    std::string note;             // "file not found: ...", "not run: conj and stopped at 1"
    // Sub-scores some metrics have: design2code's block/text/position/color.
    std::vector<std::pair<std::string, double>> parts;
};

struct EvaluationOutcome {
    double score = 0;
    std::string reason;  // one line: "infeasible task, last action FAIL", "mean of 3 (and)", ...
    std::vector<MetricDetail> metrics;
};

Result<EvaluationOutcome> evaluate(const Task& task, EvaluationContext& context);

// --- The registry -------------------------------------------------------------------------------

// What a getter needs from the run; checkTask() compares it with the run's capabilities.
enum class Needs : unsigned {
    None = 0,
    Browser = 1,   // a browser page (activeTab, queryActivePage, ...)
    Commands = 2,  // runCommand
    Files = 4,     // files of the environment
};

struct GetterInfo {
    std::string_view name;  // the "type" value
    unsigned needs = 0;     // Needs bits
    std::string_view summary;
    Result<Value> (*get)(EvaluationContext& context, const nlohmann::json& spec);
};

struct MetricInfo {
    std::string_view name;  // the "func" value
    std::string_view summary;
    // `expected` is null when the task has none (OSWorld calls metric(result, **options)).
    Result<double> (*score)(const Value& result, const Value* expected,
                            const nlohmann::json& options, MetricDetail& detail);
};

const GetterInfo* findGetter(std::string_view type);
const MetricInfo* findMetric(std::string_view func);
const std::vector<GetterInfo>& allGetters();
const std::vector<MetricInfo>& allMetrics();

}  // namespace iris::agent::eval
