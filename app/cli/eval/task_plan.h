#pragma once
// What `iris eval run` and `iris eval validate` know about each task file before it runs: the
// task (or why it could not be read), its label, the action format it runs with, its result
// folder, and under --demonstrations the recorded answers it replays.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "agent/eval/task.h"
#include "agent/recording/recording_types.h"
#include "app/cli/eval/eval_runner.h"
#include "base/status.h"

namespace iris::app::eval {

// A task's "iris.demonstration": answers scripted by the Iris developers, replayed as the model.
struct Demonstration {
    agent::SessionRecord record;  // one step per response, nothing else recorded
    std::string actionFormat;     // empty: the task's or the run's
    std::filesystem::path path;
};

// resources/demo/demonstration.json's format: {"about", "instruction", "action_format",
// "responses": [ChatResponse JSON, ...]}. NotFound or Corrupt naming the file and the field.
Result<Demonstration> readDemonstration(const std::filesystem::path& path);

struct TaskPlan {
    std::filesystem::path file;
    std::string key;  // the file relative to the tasks folder: results.json's "file"
    std::optional<agent::eval::Task> task;
    std::string loadError;  // why `task` is absent
    std::string id;
    std::string domain;
    std::string actionFormat;           // canonical name when it is a known format
    std::string resultDir;              // relative to the results folder (attemptResultDir)
    std::optional<Demonstration> demo;  // AnswerSource::Demonstrations only
    std::string demoError;              // why `demo` is absent
    int attempt = 0;                    // which of --repeat R runs

    std::string label() const {
        return domain + "/" + id + (attempt ? " #" + std::to_string(attempt) : std::string());
    }
};

// One plan per task file of options.tasks (a file or a folder), in loadTaskDir's order; a file
// that does not parse still gets a plan, with loadError. Fails only when the folder cannot be read.
Result<std::vector<TaskPlan>> planTasks(const EvalRunOptions& options);

// `plans` (attempt 0) followed by copies for attempts 1..repeat-1, attempt by attempt, each with
// its own result folder: a run that stops early has its first runs complete.
std::vector<TaskPlan> repeatPlans(std::vector<TaskPlan> plans, int repeat);

}  // namespace iris::app::eval
