#include "app/cli/eval/eval_results.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "app/cli/eval/eval_stats.h"
#include "app/session/json_file.h"
#include "base/strings.h"

namespace iris::app::eval {
namespace {

namespace fs = std::filesystem;

constexpr std::pair<TaskStatus, std::string_view> kStatusNames[] = {
    {TaskStatus::Scored, "scored"},           {TaskStatus::TimedOut, "timed_out"},
    {TaskStatus::Unsupported, "unsupported"}, {TaskStatus::Error, "error"},
    {TaskStatus::Stopped, "stopped"},
};

bool before(const TaskResult& a, const TaskResult& b) {
    return std::tie(a.domain, a.id, a.file, a.attempt) <
           std::tie(b.domain, b.id, b.file, b.attempt);
}

std::string number(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", value);
    return text;
}

}  // namespace

std::string_view taskStatusName(TaskStatus status) {
    for (const auto& [value, name] : kStatusNames)
        if (value == status) return name;
    return "error";
}

Result<TaskStatus> taskStatusFromName(std::string_view name) {
    for (const auto& [value, text] : kStatusNames)
        if (text == name) return value;
    return Status::invalidArgument("unknown task status '" + std::string(name) + "'");
}

nlohmann::json toJson(const TaskResult& result) {
    nlohmann::json json = {
        {"id", result.id},
        {"domain", result.domain},
        {"file", result.file},
        {"status", taskStatusName(result.status)},
        {"score", result.score ? nlohmann::json(*result.score) : nlohmann::json()},
        {"loop_end", result.loopEnd},
        {"steps", result.steps},
        {"prompt_tokens", result.promptTokens},
        {"completion_tokens", result.completionTokens},
        {"step_latency_ms", result.stepLatencyMs},
        {"duration_s", result.durationS},
        {"error", result.error},
        {"reason", result.reason},
        {"message", result.message},
        {"session", result.session},
        {"result_dir", result.resultDir},
        {"attempt", result.attempt},
        {"endpoint", result.endpoint},
        {"flags", result.flags},
    };
    return json;
}

Result<TaskResult> taskResultFromJson(const nlohmann::json& value, const std::string& where) {
    if (!value.is_object()) return Status::corrupt(where + ": expected an object");
    TaskResult result;
    auto text = [&](const char* key, std::string& out) -> Status {
        const auto it = value.find(key);
        if (it == value.end() || it->is_null()) return Status::ok();
        if (!it->is_string()) return Status::corrupt(where + "." + key + ": expected a string");
        out = it->get<std::string>();
        return Status::ok();
    };
    auto integer = [&](const char* key, auto& out) -> Status {
        const auto it = value.find(key);
        if (it == value.end() || it->is_null()) return Status::ok();
        if (!it->is_number_integer())
            return Status::corrupt(where + "." + key + ": expected an integer");
        out = it->get<std::remove_reference_t<decltype(out)>>();
        return Status::ok();
    };
    IRIS_RETURN_IF_ERROR(text("id", result.id));
    IRIS_RETURN_IF_ERROR(text("domain", result.domain));
    IRIS_RETURN_IF_ERROR(text("file", result.file));
    std::string status;
    IRIS_RETURN_IF_ERROR(text("status", status));
    Result<TaskStatus> parsed = taskStatusFromName(status);
    if (!parsed) return Status::corrupt(where + ".status: " + parsed.status().message());
    result.status = *parsed;
    if (const auto it = value.find("score"); it != value.end() && !it->is_null()) {
        if (!it->is_number()) return Status::corrupt(where + ".score: expected a number");
        result.score = it->get<double>();
    }
    IRIS_RETURN_IF_ERROR(text("loop_end", result.loopEnd));
    IRIS_RETURN_IF_ERROR(integer("steps", result.steps));
    IRIS_RETURN_IF_ERROR(integer("prompt_tokens", result.promptTokens));
    IRIS_RETURN_IF_ERROR(integer("completion_tokens", result.completionTokens));
    if (const auto it = value.find("step_latency_ms"); it != value.end()) {
        if (!it->is_array()) return Status::corrupt(where + ".step_latency_ms: expected an array");
        for (std::size_t i = 0; i < it->size(); ++i) {
            if (!(*it)[i].is_number())
                return Status::corrupt(where + ".step_latency_ms[" + std::to_string(i) +
                                       "]: expected a number");
            result.stepLatencyMs.push_back((*it)[i].get<double>());
        }
    }
    if (const auto it = value.find("duration_s"); it != value.end() && it->is_number())
        result.durationS = it->get<double>();
    IRIS_RETURN_IF_ERROR(text("error", result.error));
    IRIS_RETURN_IF_ERROR(text("reason", result.reason));
    IRIS_RETURN_IF_ERROR(text("message", result.message));
    IRIS_RETURN_IF_ERROR(integer("session", result.session));
    IRIS_RETURN_IF_ERROR(text("result_dir", result.resultDir));
    IRIS_RETURN_IF_ERROR(integer("attempt", result.attempt));
    if (result.attempt < 0) return Status::corrupt(where + ".attempt: must be >= 0");
    IRIS_RETURN_IF_ERROR(text("endpoint", result.endpoint));
    if (const auto it = value.find("flags"); it != value.end() && !it->is_null()) {
        if (!it->is_array()) return Status::corrupt(where + ".flags: expected an array");
        for (std::size_t i = 0; i < it->size(); ++i) {
            if (!(*it)[i].is_string())
                return Status::corrupt(where + ".flags[" + std::to_string(i) +
                                       "]: expected a string");
            result.flags.push_back((*it)[i].get<std::string>());
        }
    }
    return result;
}

void RunResults::put(TaskResult result) {
    auto same = std::find_if(tasks.begin(), tasks.end(), [&](const TaskResult& r) {
        return r.file == result.file && r.attempt == result.attempt;
    });
    if (same != tasks.end()) tasks.erase(same);
    tasks.insert(std::upper_bound(tasks.begin(), tasks.end(), result, before), std::move(result));
}

const TaskResult* RunResults::find(const std::string& file, int attempt) const {
    for (const TaskResult& result : tasks)
        if (result.file == file && result.attempt == attempt) return &result;
    return nullptr;
}

nlohmann::json toJson(const RunResults& results) {
    nlohmann::json tasks = nlohmann::json::array();
    for (const TaskResult& result : results.tasks)
        tasks.push_back(toJson(result));
    const RunSummary summary = summarize(results);
    return {
        {"format", "iris-eval-results"},
        {"version", 1},
        {"action_format", results.settings.actionFormat},
        {"model", results.settings.model},
        {"model_description", results.settings.modelDescription},
        {"max_steps", results.settings.maxSteps},
        {"sleep_after_action_s", results.settings.sleepAfterActionS},
        {"task_timeout_s", results.settings.taskTimeoutS},
        {"parallel", results.settings.parallel},
        {"tasks_path", results.settings.tasksPath},
        {"repeat", results.settings.repeat},
        {"loop_limit", results.settings.loopLimit},
        {"shard", results.settings.shard},
        {"tasks_total", results.tasksTotal},
        {"tasks_attempted", summary.attempted},
        {"score_sum", summary.scoreSum},
        {"success_rate_attempted", summary.rateAttempted()},
        {"success_rate_all", summary.rateAll()},
        {"tasks", std::move(tasks)},
    };
}

Result<RunResults> runResultsFromJson(const nlohmann::json& value, const std::string& source) {
    if (!value.is_object() || value.value("format", "") != "iris-eval-results")
        return Status::corrupt(source + ": not an iris eval results file");
    RunResults results;
    try {
        results.settings.actionFormat = value.value("action_format", "");
        results.settings.model = value.value("model", "");
        results.settings.modelDescription = value.value("model_description", "");
        results.settings.maxSteps = value.value("max_steps", 15);
        results.settings.sleepAfterActionS = value.value("sleep_after_action_s", 0.0);
        results.settings.taskTimeoutS = value.value("task_timeout_s", 0.0);
        results.settings.parallel = value.value("parallel", 1);
        results.settings.tasksPath = value.value("tasks_path", "");
        results.settings.repeat = value.value("repeat", 1);
        results.settings.loopLimit = value.value("loop_limit", 5);
        results.settings.shard = value.value("shard", "");
        results.tasksTotal = value.value("tasks_total", 0);
    } catch (const nlohmann::json::exception& e) {
        return Status::corrupt(source + ": " + e.what());
    }
    const auto tasks = value.find("tasks");
    if (tasks == value.end() || !tasks->is_array())
        return Status::corrupt(source + ": tasks: expected an array");
    for (std::size_t i = 0; i < tasks->size(); ++i) {
        Result<TaskResult> task =
            taskResultFromJson((*tasks)[i], source + ": tasks[" + std::to_string(i) + "]");
        IRIS_RETURN_IF_ERROR(task.status());
        results.put(std::move(*task));
    }
    std::set<std::string> files;  // with --repeat, a task file has several entries
    for (const TaskResult& task : results.tasks)
        files.insert(task.file);
    results.tasksTotal = std::max<int>(results.tasksTotal, int(files.size()));
    return results;
}

Status saveRunResults(const RunResults& results, const fs::path& dir) {
    return writeJsonFileAtomically(dir / "results.json", toJson(results));
}

Result<RunResults> loadRunResults(const fs::path& dir) {
    const fs::path file = dir / "results.json";
    Result<nlohmann::json> json = readJsonFile(file, "no such file");
    if (!json) return json.status();
    return runResultsFromJson(*json, file.string());
}

std::string pathComponent(std::string_view name) {
    std::string out;
    for (const char c : name) {
        const auto u = static_cast<unsigned char>(c);
        out += (c == '/' || c == '\\' || u < 0x20 || u == 0x7f || c == ':') ? '_' : c;
    }
    if (out.empty() || out.front() == '.') out.insert(out.begin(), '_');
    return out;
}

std::string taskResultDir(const std::string& actionFormat, const std::string& model,
                          const std::string& domain, const std::string& id) {
    return pathComponent(actionFormat) + "/" + pathComponent(model) + "/" + pathComponent(domain) +
           "/" + pathComponent(id);
}

std::string attemptResultDir(const std::string& taskDir, int attempt) {
    if (attempt <= 0) return taskDir;
    return "attempt_" + std::to_string(attempt) + "/" + taskDir;
}

std::optional<double> readResultTxt(const fs::path& dir) {
    std::ifstream in(dir / "result.txt");
    if (!in) return std::nullopt;
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r'))
        text.pop_back();
    if (text.empty()) return std::nullopt;
    std::size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        return std::nullopt;
    }
    if (used != text.size()) return std::nullopt;
    return value;
}

std::vector<std::size_t> unfinishedTasks(
    const fs::path& outDir, std::size_t count,
    const std::function<std::string(std::size_t)>& resultDirOf) {
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < count; ++i) {
        const std::string dir = resultDirOf(i);
        if (dir.empty() || !readResultTxt(outDir / dir)) todo.push_back(i);
    }
    return todo;
}

RunSummary summarize(const RunResults& results) {
    RunSummary summary;
    std::map<std::string, DomainSummary> domains;
    for (const TaskResult& task : results.tasks) {
        DomainSummary& domain = domains[task.domain];
        domain.domain = task.domain;
        ++domain.tasks;
        if (task.score) {
            ++summary.attempted;
            ++domain.attempted;
            summary.scoreSum += *task.score;
            domain.scoreSum += *task.score;
        }
        if (task.status == TaskStatus::Unsupported) ++summary.unsupported;
        if (task.status == TaskStatus::Error) ++summary.errors;
        if (task.status == TaskStatus::Stopped) ++summary.stopped;
    }
    summary.tasks = std::max<int>(results.tasksTotal * std::max(1, results.settings.repeat),
                                  int(results.tasks.size()));
    for (auto& [name, domain] : domains)
        summary.domains.push_back(domain);
    return summary;
}

std::string summaryText(const RunResults& results) {
    const RunSummary summary = summarize(results);
    std::ostringstream out;
    out << "success rate: " << percentText(summary.rateAttempted()) << " of " << summary.attempted
        << " attempted (" << number(summary.scoreSum) << "/" << summary.attempted << "), "
        << percentText(summary.rateAll()) << " of all " << summary.tasks
        << (results.settings.repeat > 1
                ? " attempts (" + std::to_string(results.tasksTotal) + " tasks x " +
                      std::to_string(results.settings.repeat) + ")"
                : std::string(" tasks"))
        << '\n';
    out << repeatStatsText(repeatStats(results));
    if (summary.unsupported || summary.errors || summary.stopped) {
        out << "not scored: " << summary.unsupported << " unsupported, " << summary.errors
            << " errors, " << summary.stopped << " stopped\n";
    }
    for (const DomainSummary& domain : summary.domains) {
        out << "  " << (domain.domain.empty() ? std::string("(none)") : domain.domain) << ": "
            << number(domain.scoreSum) << "/" << domain.attempted << " attempted";
        if (domain.attempted) out << " = " << percentText(domain.scoreSum / domain.attempted);
        out << " (" << domain.tasks << (results.settings.repeat > 1 ? " attempts)\n" : " tasks)\n");
    }
    for (const TaskResult& task : results.tasks) {
        const std::string label =
            task.file + (task.attempt ? " (attempt " + std::to_string(task.attempt) + ")" : "");
        if (task.status == TaskStatus::Error || task.status == TaskStatus::Unsupported)
            out << "  " << taskStatusName(task.status) << ' ' << label << ": " << task.error
                << '\n';
        for (const std::string& flag : task.flags)
            out << "  flagged " << label << ": " << flag << '\n';
    }
    return out.str();
}

}  // namespace iris::app::eval
