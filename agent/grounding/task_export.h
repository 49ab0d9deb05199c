#pragma once
// Synthetic tasks (task_generator.h) as OSWorld task files that `iris eval run` scores with its
// existing machinery: the page's recorded facts (#iris-last-click, ...) read with
// active_tab_html_parse (category xpath) and the fields' values (category input), each compared
// with check_direct_json_object; and the scripted demonstration that reaches the goal.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/grounding/task_generator.h"

namespace iris::agent::grounding {

// The evaluator object: facts and values must all match ("conj": "and").
nlohmann::json taskEvaluator(const SyntheticTask& task);

// The task file. `projectPath` and `demonstrationPath` are relative to the task file; the start
// page is "<task id>.html" in the project, shown at the task's screen size.
nlohmann::json osworldTask(const SyntheticTask& task, std::string_view projectPath,
                           std::string_view demonstrationPath, int maxSteps);

// A demonstration file of UI-TARS answers ("Action: click(start_box='(x,y)')"), as
// agent::ReplayClient replays them.
nlohmann::json demonstration(const SyntheticTask& task, const std::vector<std::string>& answers);

}  // namespace iris::agent::grounding
