#include "app/cli/eval/task_plan.h"

#include <algorithm>
#include <fstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "agent/actions/action_format.h"
#include "agent/recording/chat_json.h"
#include "app/cli/eval/eval_results.h"
#include "app/session/json_file.h"

namespace iris::app::eval {

namespace fs = std::filesystem;
namespace ev = agent::eval;

Result<Demonstration> readDemonstration(const fs::path& path) {
    Result<nlohmann::json> read = readJsonFile(path, "cannot open the demonstration");
    if (!read) return read.status();
    const nlohmann::json& json = *read;
    if (!json.is_object()) return Status::corrupt(path.string() + ": expected a JSON object");
    Demonstration demo;
    demo.path = path;
    const auto format = json.find("action_format");
    if (format != json.end()) {
        if (!format->is_string())
            return Status::corrupt(path.string() + ": action_format: expected a string");
        demo.actionFormat = format->get<std::string>();
    }
    const auto responses = json.find("responses");
    if (responses == json.end() || !responses->is_array())
        return Status::corrupt(path.string() + ": responses: expected an array");
    for (std::size_t i = 0; i < responses->size(); ++i) {
        Result<agent::ChatResponse> response = agent::chatResponseFromJson((*responses)[i]);
        if (!response)
            return Status::corrupt(path.string() + ": responses[" + std::to_string(i) +
                                   "]: " + response.status().message());
        agent::StepRecord step;
        step.index = int(i);
        step.response = std::move(*response);
        demo.record.steps.push_back(std::move(step));
    }
    return demo;
}

Result<std::vector<TaskPlan>> planTasks(const EvalRunOptions& options) {
    std::vector<ev::LoadedTaskFile> files;
    fs::path root = options.tasks;
    std::error_code error;
    if (fs::is_regular_file(options.tasks, error)) {
        files.push_back({fs::absolute(options.tasks), ev::loadTask(options.tasks)});
        root = options.tasks.parent_path();
    } else {
        Result<std::vector<ev::LoadedTaskFile>> loaded = ev::loadTaskDir(options.tasks);
        IRIS_RETURN_IF_ERROR(loaded.status());
        files = std::move(*loaded);
    }
    std::vector<TaskPlan> plans;
    for (ev::LoadedTaskFile& file : files) {
        TaskPlan plan;
        plan.file = file.path;
        fs::path relative = fs::relative(file.path, root, error);
        plan.key = (error || relative.empty() ? file.path : relative).generic_string();
        plan.id = file.path.stem().string();
        plan.domain = file.path.parent_path().filename().string();
        plan.actionFormat = options.actionFormat;
        if (!file.task) {
            plan.loadError = file.task.status().message();
        } else {
            plan.task = std::move(*file.task);
            if (!plan.task->id.empty()) plan.id = plan.task->id;
            if (!plan.task->domain.empty()) plan.domain = plan.task->domain;
            if (options.answers == AnswerSource::Demonstrations) {
                if (plan.task->iris.demonstration.empty()) {
                    plan.demoError = "the task has no iris.demonstration";
                } else {
                    Result<Demonstration> demo =
                        readDemonstration(plan.task->folder() / plan.task->iris.demonstration);
                    if (demo) {
                        plan.demo = std::move(*demo);
                        if (!plan.demo->actionFormat.empty())
                            plan.actionFormat = plan.demo->actionFormat;
                    } else {
                        plan.demoError = demo.status().message();
                    }
                }
            }
            if (!plan.task->iris.actionFormat.empty())
                plan.actionFormat = plan.task->iris.actionFormat;
        }
        // The folder uses the canonical format name, as OSWorld's action_space does.
        if (Result<agent::ActionFormat> format = agent::actionFormatFromName(plan.actionFormat))
            plan.actionFormat = std::string(agent::actionFormatName(*format));
        plan.resultDir = taskResultDir(plan.actionFormat, options.modelName, plan.domain, plan.id);
        plans.push_back(std::move(plan));
    }
    return plans;
}

std::vector<TaskPlan> repeatPlans(std::vector<TaskPlan> plans, int repeat) {
    const std::size_t tasks = plans.size();
    plans.reserve(tasks * std::size_t(std::max(1, repeat)));
    for (int attempt = 1; attempt < repeat; ++attempt) {
        for (std::size_t i = 0; i < tasks; ++i) {
            TaskPlan copy = plans[i];
            copy.attempt = attempt;
            copy.resultDir = attemptResultDir(plans[i].resultDir, attempt);
            plans.push_back(std::move(copy));
        }
    }
    return plans;
}

}  // namespace iris::app::eval
