#include "agent/eval/evaluator.h"

#include <algorithm>
#include <optional>
#include <system_error>
#include <vector>

namespace iris::agent::eval {
namespace {

using json = nlohmann::json;

std::string funcWhere(const EvaluatorSpec& ev, size_t i) {
    return ev.funcIsList ? "evaluator.func[" + std::to_string(i) + "]" : "evaluator.func";
}
std::string getterWhere(const EvaluatorSpec& ev, const char* key, size_t i) {
    return ev.funcIsList ? std::string("evaluator.") + key + "[" + std::to_string(i) + "]"
                         : std::string("evaluator.") + key;
}

// Task JSON of the wrong shape deep inside rules or specs makes nlohmann::json throw (a string
// where a bool was expected, .value() on a list): reported as an error of that getter or metric.
template <class F>
auto guarded(F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const nlohmann::json::exception& e) {
        return Status::invalidArgument(std::string("unexpected JSON shape: ") + e.what());
    } catch (const std::exception& e) {
        return Status::internal(std::string("unexpected failure: ") + e.what());
    }
}

// A getter spec with placeholders substituted, run through the registry.
Result<Value> runGetter(const GetterSpec& spec, EvaluationContext& context) {
    const GetterInfo* getter = findGetter(spec.type);
    if (getter == nullptr) return Status::unsupported("unsupported getter type " + spec.type);
    return guarded([&]() -> Result<Value> {
        return getter->get(context, substituteJson(spec.spec, context.variables()));
    });
}

// A task whose only func is "infeasible": 1 iff the agent's last action was FAIL.
EvaluationOutcome infeasibleOutcome(EvaluationContext& context) {
    EvaluationOutcome out;
    const bool fail = context.lastActionWasFail();
    out.score = fail ? 1 : 0;
    out.reason =
        fail ? "infeasible task, last action FAIL" : "infeasible task, last action not FAIL";
    MetricDetail d;
    d.func = "infeasible";
    d.score = out.score;
    out.metrics.push_back(d);
    return out;
}

// Every metric and getter name the registry lacks, and every missing result getter, joined by
// "; " (empty when all resolve). OSWorld resolves every name before evaluating; so does Iris.
std::string unresolvedNames(const EvaluatorSpec& ev) {
    std::string unknown;
    for (size_t i = 0; i < ev.funcs.size(); ++i) {
        if (ev.funcs[i] == "infeasible" || findMetric(ev.funcs[i]) == nullptr) {
            unknown += (unknown.empty() ? "" : "; ") + funcWhere(ev, i) + ": unsupported metric " +
                       ev.funcs[i];
        }
        if (!ev.results[i]) {
            unknown += (unknown.empty() ? "" : "; ") + getterWhere(ev, "result", i) + ": missing";
        }
        for (const auto* getters : {&ev.results, &ev.expected}) {
            const auto& g = (*getters)[i];
            if (g && findGetter(g->type) == nullptr) {
                unknown += (unknown.empty() ? "" : "; ") +
                           getterWhere(ev, getters == &ev.results ? "result" : "expected", i) +
                           ".type: unsupported getter type " + g->type;
            }
        }
    }
    return unknown;
}

// One detail per metric, before any runs.
EvaluationOutcome plannedOutcome(const EvaluatorSpec& ev) {
    EvaluationOutcome out;
    for (size_t i = 0; i < ev.funcs.size(); ++i) {
        MetricDetail d;
        d.index = i;
        d.func = ev.funcs[i];
        d.resultType = ev.results[i]->type;
        if (ev.expected[i]) d.expectedType = ev.expected[i]->type;
        out.metrics.push_back(d);
    }
    return out;
}

// Notes every metric after `i` as not run, because `conj` ("and", "or") stopped at `i`.
void markRestNotRun(EvaluationOutcome& out, size_t i, const std::string& conj) {
    for (size_t k = i + 1; k < out.metrics.size(); ++k)
        out.metrics[k].note = "not run: " + conj + " stopped at " + std::to_string(i);
}

// What running the metrics in order carries from one to the next.
struct Progress {
    std::vector<double> scores;
    std::optional<Value> previousResult;  // upstream's result_state, reused under "or"
};

// Metric i's result getter. A missing file ends a single-func or "and" evaluation with 0 (then
// `finished` is set and `out` is final); under "or" it is only noted and the previous result
// stands in, as upstream does.
Result<Value> resultFor(const EvaluatorSpec& ev, size_t i, EvaluationContext& context,
                        Progress& progress, EvaluationOutcome& out, bool& finished) {
    MetricDetail& d = out.metrics[i];
    auto result = runGetter(*ev.results[i], context);
    Value resultValue;
    if (!result) {
        if (result.status().code() != StatusCode::NotFound) {
            return result.status().withContext(getterWhere(ev, "result", i) + " (" +
                                               ev.results[i]->type + "): ");
        }
        d.note = "file not found: " + result.status().message();
        if (!ev.funcIsList || ev.conj == Conj::And) {
            d.score = 0.0;
            out.score = 0;
            out.reason =
                ev.funcIsList ? "a result file is missing (and)" : "the result file is missing";
            markRestNotRun(out, i, "and");
            finished = true;
            return resultValue;
        }
        if (progress.previousResult) {
            resultValue = *progress.previousResult;
            d.note += "; scored on the previous result as upstream does";
        }
    } else {
        resultValue = std::move(*result);
    }
    progress.previousResult = resultValue;
    d.result = resultValue.brief();
    return resultValue;
}

// Metric i's expected value: nullopt when the task gives no expected getter, or when a list
// evaluator's getter gave None (upstream then calls the metric without it).
Result<std::optional<Value>> expectedFor(const EvaluatorSpec& ev, size_t i,
                                         EvaluationContext& context, MetricDetail& d) {
    std::optional<Value> expectedValue;
    if (!ev.expected[i]) return expectedValue;
    auto expected = runGetter(*ev.expected[i], context);
    if (!expected) {
        return expected.status().withContext(getterWhere(ev, "expected", i) + " (" +
                                             ev.expected[i]->type + "): ");
    }
    if (!(ev.funcIsList && expected->isNone())) expectedValue = std::move(*expected);
    if (expectedValue) d.expected = expectedValue->brief();
    return expectedValue;
}

// Runs metric i into out.metrics[i]; true when that decided the outcome (a missing result file,
// "and" at a 0, "or" at a 1) and `out` is final.
Result<bool> runMetric(const EvaluatorSpec& ev, size_t i, EvaluationContext& context,
                       Progress& progress, EvaluationOutcome& out) {
    bool finished = false;
    Result<Value> resultValue = resultFor(ev, i, context, progress, out, finished);
    if (!resultValue) return resultValue.status();
    if (finished) return true;
    MetricDetail& d = out.metrics[i];
    Result<std::optional<Value>> expectedValue = expectedFor(ev, i, context, d);
    if (!expectedValue) return expectedValue.status();

    const MetricInfo* metric = findMetric(ev.funcs[i]);
    const json options = substituteJson(ev.options[i], context.variables());
    auto score = guarded([&]() -> Result<double> {
        return metric->score(*resultValue, *expectedValue ? &**expectedValue : nullptr, options, d);
    });
    if (!score) return score.status().withContext(funcWhere(ev, i) + " (" + ev.funcs[i] + "): ");
    const double s = *score;
    d.score = s;
    progress.scores.push_back(s);
    if (ev.funcIsList && ev.conj == Conj::And && s == 0.0) {
        out.score = 0;
        out.reason = "metric " + std::to_string(i) + " scored 0 (and)";
        markRestNotRun(out, i, "and");
        return true;
    }
    if (ev.funcIsList && ev.conj == Conj::Or && s == 1.0) {
        out.score = 1;
        out.reason = "metric " + std::to_string(i) + " scored 1 (or)";
        markRestNotRun(out, i, "or");
        return true;
    }
    return false;
}

// Every metric ran: one func's score, the mean under "and", the max under "or".
void combineScores(const EvaluatorSpec& ev, const std::vector<double>& scores,
                   EvaluationOutcome& out) {
    if (!ev.funcIsList) {
        out.score = scores.front();
        out.reason = ev.funcs.front();
        return;
    }
    if (ev.conj == Conj::And) {
        double sum = 0;
        for (double s : scores)
            sum += s;
        out.score = sum / static_cast<double>(scores.size());
        out.reason = "mean of " + std::to_string(scores.size()) + " (and)";
    } else {
        out.score = *std::max_element(scores.begin(), scores.end());
        out.reason = "max of " + std::to_string(scores.size()) + " (or)";
    }
}

}  // namespace

std::string Value::brief(size_t maxChars) const {
    std::string s;
    if (const auto* m = std::get_if<cv::Mat>(&data)) {
        s = "<image " + std::to_string(m->cols) + "x" + std::to_string(m->rows) + ">";
    } else if (const auto* b = std::get_if<PageTextBlocks>(&data)) {
        s = "<" + std::to_string(b->blocks.size()) + " text blocks>";
    } else {
        s = json().dump(-1, ' ', false, json::error_handler_t::replace);
    }
    if (s.size() > maxChars) {
        size_t cut = maxChars > 3 ? maxChars - 3 : 0;
        while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80)
            --cut;  // UTF-8 boundary
        s = s.substr(0, cut) + "...";
    }
    return s;
}

Result<std::filesystem::path> EvaluationContext::fetchFile(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        return Status::notFound(path.string() + ": no such file");
    return path;
}

Result<CommandOutput> EvaluationContext::runCommand(const CommandSpec&) {
    return Status::unsupported("this run does not allow commands");
}

Status EvaluationContext::download(const std::string& url, const std::filesystem::path&) {
    return Status::unsupported("this run does not allow network access (" + url + ")");
}

Result<EvaluationOutcome> evaluate(const Task& task, EvaluationContext& context) {
    const EvaluatorSpec& ev = task.evaluator;
    if (ev.funcs.empty()) return Status::invalidArgument("evaluator.func: empty");
    if (ev.isInfeasible()) return infeasibleOutcome(context);
    if (std::string unknown = unresolvedNames(ev); !unknown.empty())
        return Status::unsupported(unknown);

    EvaluationOutcome out = plannedOutcome(ev);
    if (context.lastActionWasFail()) {
        out.score = 0;
        out.reason = "last action FAIL on a feasible task";
        for (auto& d : out.metrics)
            d.note = "not run: the agent gave up (FAIL)";
        return out;
    }
    Progress progress;
    for (size_t i = 0; i < ev.funcs.size(); ++i) {
        Result<bool> decided = runMetric(ev, i, context, progress, out);
        if (!decided) return decided.status();
        if (*decided) return out;
    }
    combineScores(ev, progress.scores, out);
    return out;
}

}  // namespace iris::agent::eval
