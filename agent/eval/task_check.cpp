#include "agent/eval/task_check.h"

#include "agent/eval/evaluator.h"

namespace iris::agent::eval {
namespace {

bool isRemote(const std::string& url) {
    return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
}

void checkSteps(const std::vector<ConfigStep>& steps, const Task& task, const Capabilities& caps,
                std::vector<TaskProblem>& problems) {
    const bool browserEnv = task.iris.environment == EnvironmentKind::Browser;
    for (const auto& step : steps) {
        if (!step.supported()) {
            problems.push_back({step.where, "unsupported step type " + step.type});
            continue;
        }
        if (std::holds_alternative<LaunchStep>(step.params) ||
            std::holds_alternative<ExecuteStep>(step.params)) {
            if (browserEnv && isBrowserPlumbingStep(step)) continue;
            if (!caps.commands) {
                problems.push_back(
                    {step.where, step.type + " runs a command; the run does not allow commands"});
            }
        } else if (const auto* d = std::get_if<DownloadStep>(&step.params)) {
            for (const auto& f : d->files) {
                if (isRemote(f.url) && !caps.network) {
                    problems.push_back(
                        {step.where, "downloads " + f.url + "; the run does not allow network"});
                }
            }
        } else if (const auto* tabs = std::get_if<ChromeOpenTabsStep>(&step.params)) {
            if (!browserEnv)
                problems.push_back({step.where, "chrome_open_tabs needs the browser environment"});
            for (const auto& url : tabs->urls) {
                if (isRemote(url) && !caps.network) {
                    problems.push_back(
                        {step.where, "opens " + url + "; the run does not allow network"});
                }
            }
        } else if (std::holds_alternative<ChromeCloseTabsStep>(step.params)) {
            if (!browserEnv)
                problems.push_back({step.where, "chrome_close_tabs needs the browser environment"});
        }
    }
}

void checkGetter(const std::optional<GetterSpec>& g, const std::string& where, const Task& task,
                 const Capabilities& caps, std::vector<TaskProblem>& problems) {
    if (!g) return;
    const GetterInfo* info = findGetter(g->type);
    if (info == nullptr) {
        problems.push_back({where + ".type", "unsupported getter type " + g->type});
        return;
    }
    if ((info->needs & unsigned(Needs::Browser)) &&
        task.iris.environment != EnvironmentKind::Browser) {
        problems.push_back(
            {where, g->type + " reads the browser; the task's environment is desktop"});
    }
    if ((info->needs & unsigned(Needs::Commands)) && !caps.commands) {
        problems.push_back({where, g->type + " runs a command; the run does not allow commands"});
    }
    if (g->type == "vm_file") {
        // Iris reads environment files only inside the project copy (or the run's temp folder,
        // which a task cannot name): OSWorld's /home/user/... paths cannot be satisfied here.
        const auto& path = g->spec.value("path", nlohmann::json());
        const auto paths = path.is_array() ? path : nlohmann::json::array({path});
        for (const auto& p : paths) {
            if (p.is_string() && p.get<std::string>().rfind("{PROJECT_DIR}/", 0) != 0) {
                problems.push_back(
                    {where, "vm_file reads " + p.get<std::string>() + ", outside {PROJECT_DIR}"});
            }
        }
    }
    if (g->type == "cloud_file" && !caps.network) {
        const auto& path = g->spec.value("path", nlohmann::json());
        const auto paths = path.is_array() ? path : nlohmann::json::array({path});
        for (const auto& p : paths) {
            if (p.is_string() && isRemote(p.get<std::string>())) {
                problems.push_back({where, "cloud_file downloads " + p.get<std::string>() +
                                               "; the run does not allow network"});
            }
        }
    }
}

}  // namespace

std::string TaskSupport::summary() const {
    std::string s;
    for (const auto& p : problems)
        s += (s.empty() ? "" : "; ") + p.where + ": " + p.what;
    return s;
}

TaskSupport checkTask(const Task& task, const Capabilities& caps) {
    TaskSupport support;
    auto& problems = support.problems;
    if (task.iris.environment == EnvironmentKind::Desktop && !caps.desktop) {
        problems.push_back({"iris.environment",
                            "a desktop task needs a private desktop: Xvfb (the xvfb package), "
                            "or sway with --env desktop:private-wayland"});
    }
    if (task.iris.environment == EnvironmentKind::Browser && !caps.browser) {
        problems.push_back({"iris.environment", "a browser task needs the browser environment"});
    }
    checkSteps(task.config, task, caps, problems);
    checkSteps(task.evaluator.postconfig, task, caps, problems);

    const EvaluatorSpec& ev = task.evaluator;
    if (ev.isInfeasible()) return support;
    for (size_t i = 0; i < ev.funcs.size(); ++i) {
        const std::string suffix = ev.funcIsList ? "[" + std::to_string(i) + "]" : "";
        if (ev.funcs[i] == "infeasible" || findMetric(ev.funcs[i]) == nullptr) {
            problems.push_back({"evaluator.func" + suffix, "unsupported metric " + ev.funcs[i]});
        }
        if (!ev.results[i]) problems.push_back({"evaluator.result" + suffix, "missing"});
        checkGetter(ev.results[i], "evaluator.result" + suffix, task, caps, problems);
        checkGetter(ev.expected[i], "evaluator.expected" + suffix, task, caps, problems);
    }
    return support;
}

}  // namespace iris::agent::eval
