#include "agent/eval/evaluator.h"

#include <system_error>

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
    EvaluationOutcome out;
    const size_t n = ev.funcs.size();
    if (n == 0) return Status::invalidArgument("evaluator.func: empty");

    if (ev.isInfeasible()) {
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

    // OSWorld resolves every name before evaluating; so does Iris, and it reports every bad one.
    std::string unknown;
    for (size_t i = 0; i < n; ++i) {
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
    if (!unknown.empty()) return Status::unsupported(unknown);

    for (size_t i = 0; i < n; ++i) {
        MetricDetail d;
        d.index = i;
        d.func = ev.funcs[i];
        d.resultType = ev.results[i]->type;
        if (ev.expected[i]) d.expectedType = ev.expected[i]->type;
        out.metrics.push_back(d);
    }

    if (context.lastActionWasFail()) {
        out.score = 0;
        out.reason = "last action FAIL on a feasible task";
        for (auto& d : out.metrics)
            d.note = "not run: the agent gave up (FAIL)";
        return out;
    }

    std::vector<double> scores;
    std::optional<Value> previousResult;  // upstream's result_state, reused under "or"
    for (size_t i = 0; i < n; ++i) {
        MetricDetail& d = out.metrics[i];
        const std::string where = funcWhere(ev, i) + " (" + ev.funcs[i] + ")";
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
                for (size_t k = i + 1; k < n; ++k)
                    out.metrics[k].note = "not run: and stopped at " + std::to_string(i);
                return out;
            }
            // Under "or" upstream only logs the error and scores the previous result again.
            if (previousResult) {
                resultValue = *previousResult;
                d.note += "; scored on the previous result as upstream does";
            }
        } else {
            resultValue = std::move(*result);
        }
        previousResult = resultValue;
        d.result = resultValue.brief();

        std::optional<Value> expectedValue;
        if (ev.expected[i]) {
            auto expected = runGetter(*ev.expected[i], context);
            if (!expected) {
                return expected.status().withContext(getterWhere(ev, "expected", i) + " (" +
                                                     ev.expected[i]->type + "): ");
            }
            // A list evaluator calls the metric without `expected` when its getter gave None.
            if (!(ev.funcIsList && expected->isNone())) expectedValue = std::move(*expected);
            if (expectedValue) d.expected = expectedValue->brief();
        }

        const MetricInfo* metric = findMetric(ev.funcs[i]);
        const json options = substituteJson(ev.options[i], context.variables());
        auto score = guarded([&]() -> Result<double> {
            return metric->score(resultValue, expectedValue ? &*expectedValue : nullptr, options,
                                 d);
        });
        if (!score) return score.status().withContext(where + ": ");
        const double s = *score;
        d.score = s;
        scores.push_back(s);
        if (ev.funcIsList && ev.conj == Conj::And && s == 0.0) {
            out.score = 0;
            out.reason = "metric " + std::to_string(i) + " scored 0 (and)";
            for (size_t k = i + 1; k < n; ++k)
                out.metrics[k].note = "not run: and stopped at " + std::to_string(i);
            return out;
        }
        if (ev.funcIsList && ev.conj == Conj::Or && s == 1.0) {
            out.score = 1;
            out.reason = "metric " + std::to_string(i) + " scored 1 (or)";
            for (size_t k = i + 1; k < n; ++k)
                out.metrics[k].note = "not run: or stopped at " + std::to_string(i);
            return out;
        }
    }
    if (!ev.funcIsList) {
        out.score = scores.front();
        out.reason = ev.funcs.front();
        return out;
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
    return out;
}

}  // namespace iris::agent::eval
