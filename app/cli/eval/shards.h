#pragma once
// `iris eval run --shard K/N`: which share of a task folder one of N machines runs, so that N
// runs of the same folder, each computing the same assignment on its own, run every task exactly
// once with about the same amount of work each.
//
// The assignment balances estimated cost (estimatedTaskCost), not only the number of tasks:
// longest-processing-time first, i.e. tasks by cost, highest first (ties by key), each to the
// shard with the least total cost so far (ties to the lowest shard). It depends only on the task
// files and the run's --max-steps, so every shard of one command computes the same one.
//
// A shard's results folder holds, beside results.json (whose settings.shard is "K/N"), the
// assignment of the whole suite in shard.json, for `iris eval merge` (shard_merge.h) to find tasks
// no shard ran:
//   {"shard": "2/3", "tasks_path": "...",
//    "tasks": [{"file": "<key>", "shard": 1, "cost": 47}, ...]}   every task, in the plans' order
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli/eval/task_plan.h"
#include "base/status.h"

namespace iris::app::eval {

struct ShardSpec {
    int index = 1;  // K, 1-based
    int count = 1;  // N, 1..kMaxShards

    std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
    friend bool operator==(const ShardSpec&, const ShardSpec&) = default;
};

inline constexpr int kMaxShards = 1000;

// "K/N" with 1 <= K <= N <= kMaxShards; InvalidArgument quoting the text otherwise.
Result<ShardSpec> parseShard(std::string_view text);

// --shard auto: K from the Kubernetes Indexed Job's JOB_COMPLETION_INDEX (0-based, so K is
// index + 1) and N from IRIS_SHARD_COUNT (set by the Job manifest to its completions, which
// Kubernetes does not expose to the pod). Errors name the variable and its value.
Result<ShardSpec> shardFromEnvironment();

// --shard's value: "auto" or "K/N".
Result<ShardSpec> resolveShard(std::string_view value);

// A task's estimated cost, in about seconds of a run, from what its plan says:
//   set-up:        browser page 2, private desktop 10 (its own Xvfb and applications)
//   per step:      browser 3, desktop 5 (a model call and the actions)
//   steps:         --max-steps, else the task's iris.max_steps, else 15 (the run's own rule)
//   sleep steps:   their seconds (config and evaluator.postconfig), rounded up
//   evaluator:     5 per visual metric (compare_images, check_structure_sim*, design2code)
// A file that could not be read costs what a default browser task costs, so that it is still
// assigned (and reported) by exactly one shard.
std::int64_t estimatedTaskCost(const TaskPlan& plan, int runMaxSteps);

// The shard (1-based) of each task, for tasks of these costs and keys.
std::vector<int> assignShards(const std::vector<std::int64_t>& costs,
                              const std::vector<std::string>& keys, int shardCount);

struct ShardTask {
    std::string file;  // TaskPlan::key
    int shard = 0;
    std::int64_t cost = 0;
};

struct ShardManifest {
    ShardSpec shard;
    std::string tasksPath;
    std::vector<ShardTask> tasks;  // the whole suite
};

ShardManifest planShards(const std::vector<TaskPlan>& plans, int runMaxSteps, ShardSpec shard,
                         const std::string& tasksPath);

// DIR/shard.json, written atomically; reading: NotFound when absent, Corrupt naming the field.
Status saveShardManifest(const ShardManifest& manifest, const std::filesystem::path& dir);
Result<ShardManifest> loadShardManifest(const std::filesystem::path& dir);

// For runEvaluation: keeps in `plans` the tasks of shard `shardText` ("K/N") and writes
// out/shard.json. Refuses a folder that holds another shard (or an unsharded run).
Status selectShard(const std::string& shardText, int runMaxSteps,
                   const std::filesystem::path& tasksPath, const std::filesystem::path& out,
                   std::vector<TaskPlan>& plans);

}  // namespace iris::app::eval
