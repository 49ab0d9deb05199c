#include "agent/grounding/task_export.h"

namespace iris::agent::grounding {
namespace {

using nlohmann::json;

json ruleOf(const json& expected) {
    return {{"type", "rule"}, {"rules", {{"expected", expected}}}};
}

}  // namespace

json taskEvaluator(const SyntheticTask& task) {
    json funcs = json::array();
    json results = json::array();
    json expected = json::array();
    if (!task.expectedFacts.empty()) {
        json xpaths = json::object();
        json facts = json::object();
        for (const auto& [fact, value] : task.expectedFacts) {
            xpaths[factXPath(fact)] = fact;
            facts[fact] = value;
        }
        funcs.push_back("check_direct_json_object");
        results.push_back(
            {{"type", "active_tab_html_parse"}, {"category", "xpath"}, {"xpathObject", xpaths}});
        expected.push_back(ruleOf(facts));
    }
    if (!task.expectedValues.empty()) {
        json inputs = json::object();
        json values = json::object();
        for (const auto& [id, value] : task.expectedValues) {
            inputs[controlXPath(id)] = id;
            values[id] = value;
        }
        funcs.push_back("check_direct_json_object");
        results.push_back(
            {{"type", "active_tab_html_parse"}, {"category", "input"}, {"inputObject", inputs}});
        expected.push_back(ruleOf(values));
    }
    if (funcs.size() == 1)
        return {{"func", funcs[0]}, {"result", results[0]}, {"expected", expected[0]}};
    return {{"func", funcs}, {"conj", "and"}, {"result", results}, {"expected", expected}};
}

json osworldTask(const SyntheticTask& task, std::string_view projectPath,
                 std::string_view demonstrationPath, int maxSteps) {
    return {{"id", task.id},
            {"snapshot", "iris-synthetic-grounding"},
            {"instruction", task.instruction},
            {"source", "Iris synthetic grounding tasks (iris models data --osworld), template " +
                           task.templateName},
            {"config", json::array()},
            {"trajectory", "trajectories/"},
            {"related_apps", {"browser"}},
            {"evaluator", taskEvaluator(task)},
            {"proxy", false},
            {"fixed_ip", false},
            {"possibility_of_env_change", "low"},
            {"iris",
             {{"environment", "browser"},
              {"project", projectPath},
              {"start_page", task.id + ".html"},
              {"viewport", {task.screen.width, task.screen.height}},
              {"action_format", "uitars"},
              {"demonstration", demonstrationPath},
              {"max_steps", maxSteps}}}};
}

json demonstration(const SyntheticTask& task, const std::vector<std::string>& answers) {
    json responses = json::array();
    for (const std::string& answer : answers)
        responses.push_back({{"text", "Action: " + answer}});
    return {{"about",
             "Written by `iris models data --osworld` (not model output): the answers of the "
             "task generator's oracle, replayed through agent::ReplayClient by `iris eval run "
             "--demonstrations` to check that the task's evaluator scores 1."},
            {"task", task.id},
            {"instruction", task.instruction},
            {"action_format", "uitars"},
            {"responses", responses}};
}

}  // namespace iris::agent::grounding
