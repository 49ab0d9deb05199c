#include "app/cli/eval/config_steps.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <system_error>
#include <thread>
#include <variant>

#include "agent/clients/http_download.h"
#include "base/clock.h"

namespace iris::app::eval {
namespace {

namespace fs = std::filesystem;
namespace ev = agent::eval;

constexpr double kExecuteTimeoutS = 120;  // OSWorld's /setup/execute timeout

bool sameUrl(std::string a, std::string b) {
    auto trim = [](std::string& url) {
        while (url.size() > 1 && url.back() == '/')
            url.pop_back();
    };
    trim(a);
    trim(b);
    return a == b;
}

// True when `path` (absolute, normalised) lies inside `root`.
bool inside(const fs::path& path, const fs::path& root) {
    const fs::path p = path.lexically_normal();
    const fs::path r = root.lexically_normal();
    auto [rootEnd, pathIt] = std::mismatch(r.begin(), r.end(), p.begin(), p.end());
    return rootEnd == r.end() || (std::next(rootEnd) == r.end() && rootEnd->empty());
}

Status navigate(StepTarget& target, const std::string& url) {
    agent::ActionResult result = target.environment->execute(agent::Action(agent::Navigate{url}));
    return result.status.withContext("loading " + url + ": ");
}

// One step being carried out; its parameters come separately, as the variant's alternative.
struct StepRun {
    const ev::ConfigStep& step;
    StepTarget& target;
    std::string where;  // the prefix of its errors: "config[2] (launch): "

    Status needCommands() const {
        if (target.commands) return Status::ok();
        return Status::unsupported(where +
                                   "runs a command: needs --allow-commands and a private desktop "
                                   "environment (iris.environment \"desktop\")");
    }
};

Status runStep(const ev::LaunchStep& params, const StepRun& run) {
    if (run.target.browser && ev::isBrowserPlumbingStep(run.step)) return Status::ok();
    IRIS_RETURN_IF_ERROR(run.needCommands());
    return startProcess(params.command, run.target.desktop).withContext(run.where);
}

// OSWorld's `until` of an execute step: the output ends the polling when its exit code equals
// until.returncode, or until.stdout / until.stderr occurs in its stdout / stderr.
bool untilHolds(const nlohmann::json& until, const ev::CommandOutput& output) {
    const auto contains = [&](const char* key, const std::string& text) {
        const auto it = until.find(key);
        return it != until.end() && it->is_string() &&
               text.find(it->get<std::string>()) != std::string::npos;
    };
    const auto code = until.find("returncode");
    return (code != until.end() && code->is_number_integer() &&
            code->get<std::int64_t>() == output.exitCode) ||
           contains("stdout", output.out) || contains("stderr", output.err);
}

// Runs the command once, or with `until` again every 0.3 s until its condition holds (as OSWorld
// does). OSWorld polls without end and gives up after 5 failed requests; Iris also stops after
// kExecuteTimeoutS of polling, on a stop request, or at the 5th command that cannot run.
Status runStep(const ev::ExecuteStep& params, const StepRun& run) {
    IRIS_RETURN_IF_ERROR(run.needCommands());
    const bool polls = params.until.is_object() && !params.until.empty();
    const Clock::time_point start = Clock::now();
    for (int failures = 0;;) {
        Result<ev::CommandOutput> output =
            runProcess(params.command, run.target.desktop, kExecuteTimeoutS);
        if (output) {
            std::error_code error;
            fs::create_directories(run.target.cacheDir, error);
            if (!params.stdoutFile.empty())
                std::ofstream(run.target.cacheDir / params.stdoutFile) << output->out;
            if (!params.stderrFile.empty())
                std::ofstream(run.target.cacheDir / params.stderrFile) << output->err;
            if (!polls || untilHolds(params.until, *output)) return Status::ok();
        } else if (!polls || ++failures == 5) {
            return output.status().withContext(run.where);
        }
        if (run.target.stop && run.target.stop->load())
            return Status::cancelled(run.where + "stopped while waiting for its until condition");
        if (secondsSince(start) >= kExecuteTimeoutS) {
            return Status::outOfRange(run.where + "until condition " + params.until.dump() +
                                      " not met after " + std::to_string(int(kExecuteTimeoutS)) +
                                      " s");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
}

Status runStep(const ev::OpenStep& params, const StepRun& run) {
    if (run.target.browser) {
        const bool hasScheme =
            params.path.find("://") != std::string::npos || params.path.starts_with("about:");
        return navigate(run.target, hasScheme ? params.path : fileUrl(params.path))
            .withContext(run.where);
    }
    IRIS_RETURN_IF_ERROR(run.needCommands());
    ev::CommandSpec open;
    open.argv = {"xdg-open", params.path};
    return startProcess(open, run.target.desktop).withContext(run.where);
}

Status runStep(const ev::SleepStep& params, const StepRun& run) {
    const auto until = Clock::now() + std::chrono::duration<double>(params.seconds);
    while (Clock::now() < until && !(run.target.stop && run.target.stop->load()))
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return Status::ok();
}

// One file of a download step: fetched over http(s) when the run allows the network, else
// copied from a file:// URL or a path (relative to the task's folder).
Status download(const ev::DownloadStep::File& file, const StepRun& run) {
    const StepTarget& target = run.target;
    fs::path destination = file.path;
    if (destination.is_relative()) destination = target.runDir / destination;
    if (!inside(destination, target.runDir))
        return Status::invalidArgument(
            run.where + "path " + file.path +
            ": downloads go inside the task's work folder ({PROJECT_DIR})");
    if (file.url.starts_with("http://") || file.url.starts_with("https://")) {
        if (!target.network)
            return Status::unsupported(run.where + file.url +
                                       ": http(s) downloads need --allow-network");
        return agent::downloadFile(file.url, destination).withContext(run.where);
    }
    fs::path source;
    if (file.url.starts_with("file://")) {
        source = file.url.substr(7);
    } else {
        source = fs::path(file.url).is_absolute() ? fs::path(file.url) : target.taskDir / file.url;
    }
    std::error_code error;
    if (!fs::is_regular_file(source, error))
        return Status::notFound(run.where + source.string() + ": no such file");
    fs::create_directories(destination.parent_path(), error);
    fs::copy_file(source, destination, fs::copy_options::overwrite_existing, error);
    if (error)
        return Status::ioError(run.where + "copying " + source.string() + " to " +
                               destination.string() + ": " + error.message());
    return Status::ok();
}

Status runStep(const ev::DownloadStep& params, const StepRun& run) {
    for (const ev::DownloadStep::File& file : params.files)
        IRIS_RETURN_IF_ERROR(download(file, run));
    return Status::ok();
}

Status runStep(const ev::ChromeOpenTabsStep& params, const StepRun& run) {
    if (!run.target.browser)
        return Status::unsupported(run.where + "needs the browser environment");
    for (const std::string& url : params.urls)
        run.target.context->tabs().push_back({"", url});
    if (!params.urls.empty())
        return navigate(run.target, params.urls.back()).withContext(run.where);
    return Status::ok();
}

Status runStep(const ev::ChromeCloseTabsStep& params, const StepRun& run) {
    if (!run.target.browser)
        return Status::unsupported(run.where + "needs the browser environment");
    std::vector<ev::TabInfo>& tabs = run.target.context->tabs();
    const std::string active = tabs.empty() ? std::string() : tabs.back().url;
    for (const std::string& url : params.urls) {
        auto match = std::find_if(tabs.begin(), tabs.end(),
                                  [&](const ev::TabInfo& t) { return sameUrl(t.url, url); });
        if (match != tabs.end()) tabs.erase(match);
    }
    if (!tabs.empty() && tabs.back().url != active)
        return navigate(run.target, tabs.back().url).withContext(run.where);
    if (tabs.empty() && !active.empty())
        return navigate(run.target, "about:blank").withContext(run.where);
    return Status::ok();
}

Status runStep(const ev::ActivateWindowStep& params, const StepRun& run) {
    if (run.target.browser) return Status::ok();  // the page is the only window
    IRIS_RETURN_IF_ERROR(run.needCommands());
    const ev::CommandSpec activate = activateWindowCommand(run.target.desktop, params.windowName,
                                                           params.byClass, params.strict);
    Result<ev::CommandOutput> output = runProcess(activate, run.target.desktop, 10);
    IRIS_RETURN_IF_ERROR(output.status().withContext(run.where));
    return Status::ok();
}

Status runStep(const ev::UnsupportedStep&, const StepRun& run) {
    return Status::unsupported(run.where + "step type '" + run.step.type +
                               "' is not supported by Iris");
}

}  // namespace

std::string fileUrl(const fs::path& path) {
    return "file://" + path.generic_string();
}

Status runConfigSteps(const std::vector<ev::ConfigStep>& steps, const ev::Variables& variables,
                      StepTarget& target) {
    for (const ev::ConfigStep& raw : steps) {
        if (target.stop && target.stop->load()) return Status::cancelled("the run was stopped");
        Result<ev::ConfigStep> step = ev::substituteStep(raw, variables);
        IRIS_RETURN_IF_ERROR(step.status());
        const StepRun run{*step, target, step->where + " (" + step->type + "): "};
        IRIS_RETURN_IF_ERROR(
            std::visit([&](const auto& params) { return runStep(params, run); }, step->params));
    }
    return Status::ok();
}

}  // namespace iris::app::eval
