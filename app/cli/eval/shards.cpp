#include "app/cli/eval/shards.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <optional>

#include "app/session/json_file.h"

namespace iris::app::eval {
namespace {

namespace fs = std::filesystem;
namespace ev = agent::eval;
using nlohmann::json;

// A whole decimal number of at most 9 digits (no sign, no spaces), else nullopt.
std::optional<int> wholeNumber(std::string_view text) {
    if (text.empty() || text.size() > 9) return std::nullopt;
    int value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + (c - '0');
    }
    return value;
}

// The cost estimate's constants (estimatedTaskCost's comment in shards.h).
constexpr std::int64_t kBrowserSetUp = 2;
constexpr std::int64_t kDesktopSetUp = 10;
constexpr std::int64_t kBrowserStep = 3;
constexpr std::int64_t kDesktopStep = 5;
constexpr std::int64_t kVisualMetric = 5;
constexpr int kDefaultMaxSteps = 15;  // the runner's when neither the run nor the task says

bool isVisualMetric(const std::string& func) {
    return func == "compare_images" || func.starts_with("check_structure_sim") ||
           func == "design2code";
}

std::int64_t sleepSeconds(const std::vector<ev::ConfigStep>& steps) {
    std::int64_t seconds = 0;
    for (const ev::ConfigStep& step : steps) {
        if (const auto* sleep = std::get_if<ev::SleepStep>(&step.params))
            seconds += std::int64_t(std::ceil(std::max(0.0, sleep->seconds)));
    }
    return seconds;
}

Result<ShardTask> shardTaskFromJson(const json& value, const std::string& where) {
    if (!value.is_object()) return Status::corrupt(where + ": expected an object");
    const auto file = value.find("file");
    const auto shard = value.find("shard");
    const auto cost = value.find("cost");
    if (file == value.end() || !file->is_string())
        return Status::corrupt(where + ".file: expected a string");
    if (shard == value.end() || !shard->is_number_integer())
        return Status::corrupt(where + ".shard: expected an integer");
    if (cost == value.end() || !cost->is_number_integer())
        return Status::corrupt(where + ".cost: expected an integer");
    return ShardTask{file->get<std::string>(), shard->get<int>(), cost->get<std::int64_t>()};
}

}  // namespace

Result<ShardSpec> parseShard(std::string_view text) {
    const std::size_t slash = text.find('/');
    const std::optional<int> index =
        slash == std::string_view::npos ? std::nullopt : wholeNumber(text.substr(0, slash));
    const std::optional<int> count =
        slash == std::string_view::npos ? std::nullopt : wholeNumber(text.substr(slash + 1));
    if (!index || !count) {
        return Status::invalidArgument("--shard '" + std::string(text) +
                                       "': expected K/N (shard K of N, from 1) or auto");
    }
    if (*count < 1 || *count > kMaxShards) {
        return Status::invalidArgument("--shard '" + std::string(text) + "': N must be from 1 to " +
                                       std::to_string(kMaxShards));
    }
    if (*index < 1 || *index > *count) {
        return Status::invalidArgument("--shard '" + std::string(text) + "': K must be from 1 to " +
                                       std::to_string(*count));
    }
    return ShardSpec{*index, *count};
}

Result<ShardSpec> shardFromEnvironment() {
    const char* indexText = std::getenv("JOB_COMPLETION_INDEX");
    const char* countText = std::getenv("IRIS_SHARD_COUNT");
    if (!indexText) {
        return Status::invalidArgument(
            "--shard auto: JOB_COMPLETION_INDEX is not set (it is set in the pods of a "
            "Kubernetes Indexed Job)");
    }
    if (!countText) {
        return Status::invalidArgument(
            "--shard auto: IRIS_SHARD_COUNT is not set (the Job manifest sets it to the Job's "
            "completions)");
    }
    const std::optional<int> count = wholeNumber(countText);
    if (!count || *count < 1 || *count > kMaxShards) {
        return Status::invalidArgument("--shard auto: IRIS_SHARD_COUNT='" + std::string(countText) +
                                       "': expected a number from 1 to " +
                                       std::to_string(kMaxShards));
    }
    const std::optional<int> index = wholeNumber(indexText);
    if (!index || *index >= *count) {
        return Status::invalidArgument("--shard auto: JOB_COMPLETION_INDEX='" +
                                       std::string(indexText) + "': expected a number from 0 to " +
                                       std::to_string(*count - 1) +
                                       " (IRIS_SHARD_COUNT=" + std::string(countText) + ")");
    }
    return ShardSpec{*index + 1, *count};
}

Result<ShardSpec> resolveShard(std::string_view value) {
    if (value == "auto") return shardFromEnvironment();
    return parseShard(value);
}

std::int64_t estimatedTaskCost(const TaskPlan& plan, int runMaxSteps) {
    int steps = runMaxSteps > 0 ? runMaxSteps : kDefaultMaxSteps;
    if (!plan.task) return kBrowserSetUp + kBrowserStep * steps;
    const ev::Task& task = *plan.task;
    if (runMaxSteps <= 0 && task.iris.maxSteps > 0) steps = task.iris.maxSteps;
    const bool desktop = task.iris.environment == ev::EnvironmentKind::Desktop;
    std::int64_t cost = (desktop ? kDesktopSetUp : kBrowserSetUp) +
                        (desktop ? kDesktopStep : kBrowserStep) * std::int64_t(steps);
    cost += sleepSeconds(task.config) + sleepSeconds(task.evaluator.postconfig);
    for (const std::string& func : task.evaluator.funcs)
        if (isVisualMetric(func)) cost += kVisualMetric;
    return cost;
}

std::vector<int> assignShards(const std::vector<std::int64_t>& costs,
                              const std::vector<std::string>& keys, int shardCount) {
    std::vector<std::size_t> order(costs.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (costs[a] != costs[b]) return costs[a] > costs[b];
        if (keys[a] != keys[b]) return keys[a] < keys[b];
        return a < b;
    });
    std::vector<std::int64_t> totals(std::size_t(std::max(1, shardCount)), 0);
    std::vector<int> shards(costs.size(), 1);
    for (const std::size_t task : order) {
        // The first of the least loaded: ties go to the lowest shard.
        const auto least = std::min_element(totals.begin(), totals.end());
        *least += costs[task];
        shards[task] = int(least - totals.begin()) + 1;
    }
    return shards;
}

ShardManifest planShards(const std::vector<TaskPlan>& plans, int runMaxSteps, ShardSpec shard,
                         const std::string& tasksPath) {
    std::vector<std::int64_t> costs;
    std::vector<std::string> keys;
    for (const TaskPlan& plan : plans) {
        costs.push_back(estimatedTaskCost(plan, runMaxSteps));
        keys.push_back(plan.key);
    }
    const std::vector<int> shards = assignShards(costs, keys, shard.count);
    ShardManifest manifest{shard, tasksPath, {}};
    for (std::size_t i = 0; i < plans.size(); ++i)
        manifest.tasks.push_back({keys[i], shards[i], costs[i]});
    return manifest;
}

Status saveShardManifest(const ShardManifest& manifest, const fs::path& dir) {
    json tasks = json::array();
    for (const ShardTask& task : manifest.tasks)
        tasks.push_back({{"file", task.file}, {"shard", task.shard}, {"cost", task.cost}});
    const json value = {
        {"shard", manifest.shard.text()}, {"tasks_path", manifest.tasksPath}, {"tasks", tasks}};
    return writeJsonFileAtomically(dir / "shard.json", value);
}

Result<ShardManifest> loadShardManifest(const fs::path& dir) {
    const fs::path file = dir / "shard.json";
    Result<json> value = readJsonFile(file, "no such file");
    if (!value) return value.status();
    const std::string where = file.string() + ": ";
    if (!value->is_object()) return Status::corrupt(where + "expected an object");
    ShardManifest manifest;
    const auto shard = value->find("shard");
    if (shard == value->end() || !shard->is_string())
        return Status::corrupt(where + "shard: expected \"K/N\"");
    Result<ShardSpec> spec = parseShard(shard->get<std::string>());
    if (!spec) return Status::corrupt(where + "shard: " + spec.status().message());
    manifest.shard = *spec;
    manifest.tasksPath = value->value("tasks_path", "");
    const auto tasks = value->find("tasks");
    if (tasks == value->end() || !tasks->is_array())
        return Status::corrupt(where + "tasks: expected an array");
    for (std::size_t i = 0; i < tasks->size(); ++i) {
        Result<ShardTask> task =
            shardTaskFromJson((*tasks)[i], where + "tasks[" + std::to_string(i) + "]");
        if (!task) return task.status();
        manifest.tasks.push_back(std::move(*task));
    }
    return manifest;
}

Status selectShard(const std::string& shardText, int runMaxSteps, const fs::path& tasksPath,
                   const fs::path& out, std::vector<TaskPlan>& plans) {
    Result<ShardSpec> shard = parseShard(shardText);
    if (!shard) return shard.status();
    // A folder is one shard's: resuming it as another would mix two shares in one results.json.
    if (Result<ShardManifest> earlier = loadShardManifest(out); earlier) {
        if (earlier->shard != *shard) {
            return Status::invalidArgument(out.string() + " holds shard " + earlier->shard.text() +
                                           ", not " + shard->text() +
                                           "; give each shard its own --out folder");
        }
    } else if (earlier.status().code() != StatusCode::NotFound) {
        return earlier.status();
    } else if (std::error_code error; fs::exists(out / "results.json", error)) {
        return Status::invalidArgument(out.string() + " holds an unsharded run; give shard " +
                                       shard->text() + " its own --out folder");
    }
    const ShardManifest manifest = planShards(plans, runMaxSteps, *shard, tasksPath.string());
    IRIS_RETURN_IF_ERROR(saveShardManifest(manifest, out));
    std::vector<TaskPlan> mine;
    for (std::size_t i = 0; i < plans.size(); ++i)
        if (manifest.tasks[i].shard == shard->index) mine.push_back(std::move(plans[i]));
    plans = std::move(mine);
    return Status::ok();
}

}  // namespace iris::app::eval
