#pragma once
// OSWorld task files (docs/osworld.md §1-§3), read into typed structs, plus Iris's "iris"
// extension.
//
// One task per JSON file; OSWorld's layout is evaluation_examples/examples/<domain>/<id>.json.
// Every OSWorld field is kept (informational ones too), keys starting with '_' are comments and
// ignored, and unknown keys are ignored as OSWorld's loader ignores them. Errors name the file and
// the JSON field path: "tasks/a.json: evaluator.result[1].type: expected a string".
//
// The "iris" extension (optional top-level object; every key optional):
//   "iris": {
//     "environment":  "browser" | "desktop"   (default "browser")
//     "project":      "<folder relative to the task file's folder>"  a sample web project; the
//                     runner copies it into a fresh work dir per run ({PROJECT_DIR})
//     "start_page":   "index.html"            (relative to the project; default "index.html")
//     "viewport":     [1280, 800]             (CSS px; default 1280x800)
//     "action_format": "pyautogui" | "computer_13" | "uitars" | "tools"
//     "demonstration": "<path relative to the task file's folder>"
//     "max_steps":    N                       (> 0)
//   }
// Placeholders the runner substitutes in config and evaluator string values (substitute*() below):
//   {PROJECT_DIR}  the work copy of "project" (absolute, no trailing slash)
//   {PROJECT_URL}  file:// URL of it, no trailing slash
//   {TASK_DIR}     the task file's folder (absolute)
//   {SCREEN_WIDTH} {SCREEN_HEIGHT}  the viewport or screen size in pixels
//   {IRIS_APP_DIR} the folder of the running iris executable (iris-sample-desktop is there)
// Other brace words ({DoW}, {CLIENT_PASSWORD}, ...) are left as they are.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace iris::agent::eval {

// A command of a launch/execute/command step: OSWorld accepts a list or a string.
struct CommandSpec {
    std::vector<std::string> argv;  // the list; for a string: split on whitespace unless shell
    std::string text;               // the string as written; empty when a list was given
    bool isString = false;
    bool shell = false;
};

struct LaunchStep {  // POST /setup/launch: start without waiting
    CommandSpec command;
};
struct OpenStep {  // open a file with its default application
    std::string path;
};
struct ExecuteStep {  // "execute" and its alias "command": run and wait (OSWorld: 120 s)
    CommandSpec command;
    std::string stdoutFile;  // when set, stdout goes to <cache dir>/<name> (read by cache_file)
    std::string stderrFile;
    nlohmann::json until;  // OSWorld's re-poll condition, or null
};
struct SleepStep {
    double seconds = 0;
};
struct DownloadStep {
    struct File {
        std::string url;   // http(s)://, file:// or a path relative to the task's folder
        std::string path;  // destination in the environment
    };
    std::vector<File> files;
};
struct ChromeOpenTabsStep {
    std::vector<std::string> urls;  // urls_to_open
};
struct ChromeCloseTabsStep {
    std::vector<std::string> urls;  // urls_to_close (compare_urls semantics)
};
struct ActivateWindowStep {
    std::string windowName;
    bool strict = false;
    bool byClass = false;
};
// A type OSWorld knows (or not) that Iris does not run; checkTask() reports it by name.
struct UnsupportedStep {};

using StepParams =
    std::variant<LaunchStep, OpenStep, ExecuteStep, SleepStep, DownloadStep, ChromeOpenTabsStep,
                 ChromeCloseTabsStep, ActivateWindowStep, UnsupportedStep>;

struct ConfigStep {
    std::string type;           // as written: "launch", "command", "googledrive", ...
    nlohmann::json parameters;  // as written (an object; {} when absent)
    StepParams params;
    std::string where;  // JSON path for messages: "config[2]", "evaluator.postconfig[0]"

    bool supported() const { return !std::holds_alternative<UnsupportedStep>(params); }
};

// True for the launch steps every OSWorld Chrome task starts with (google-chrome/chromium with
// --remote-debugging-port, socat for CDP, "pkill chrome" + relaunch in postconfig): a browser
// environment satisfies them by owning its browser, so they need no command execution.
bool isBrowserPlumbingStep(const ConfigStep& step);

enum class Conj { And, Or };

// One getter call: {"type": "...", ...the getter's own keys}.
struct GetterSpec {
    std::string type;
    nlohmann::json spec;  // the whole object as written (after '_' keys are dropped)
};

struct EvaluatorSpec {
    std::vector<std::string> funcs;  // one entry for a string func
    bool funcIsList = false;
    // Per func: the getter, or nullopt when absent / null / {} (OSWorld then calls the metric
    // without it). For a string func the vectors have one entry.
    std::vector<std::optional<GetterSpec>> results;
    std::vector<std::optional<GetterSpec>> expected;
    std::vector<nlohmann::json> options;  // per func: an object; null or absent is {}
    Conj conj = Conj::And;
    std::vector<ConfigStep> postconfig;
    nlohmann::json raw;  // the evaluator object as written

    bool isInfeasible() const {
        return !funcIsList && funcs.size() == 1 && funcs[0] == "infeasible";
    }
};

enum class EnvironmentKind { Browser, Desktop };

struct IrisExtension {
    bool present = false;  // the task file has an "iris" object
    EnvironmentKind environment = EnvironmentKind::Browser;
    std::string project;  // as written (relative to the task's folder); empty = none
    std::string startPage = "index.html";
    int viewportWidth = 1280;
    int viewportHeight = 800;
    std::string actionFormat;   // empty = the run's default
    std::string demonstration;  // as written; empty = none
    int maxSteps = 0;           // 0 = the run's default
};

struct Task {
    std::string id;
    std::string snapshot;
    std::string instruction;
    std::string source;
    std::vector<ConfigStep> config;
    std::string trajectory;
    std::vector<std::string> relatedApps;
    EvaluatorSpec evaluator;
    bool proxy = false;
    bool fixedIp = false;
    std::string possibilityOfEnvChange;
    std::optional<std::string> hint;
    std::optional<bool> envMayChange;
    IrisExtension iris;

    std::filesystem::path file;  // where it was read from; empty for parseTask without a file
    std::string domain;          // the parent folder name in OSWorld's layout, else empty
    nlohmann::json raw;          // the whole document as written

    // The folder relative paths in the task resolve against ({TASK_DIR}).
    std::filesystem::path folder() const {
        return file.empty() ? std::filesystem::path() : file.parent_path();
    }
};

// Parses one task. `sourceName` prefixes every message ("<sourceName>: <field path>: ...").
Result<Task> parseTask(std::string_view jsonText, std::string_view sourceName);
// Reads and parses a file; sets Task::file (absolute) and Task::domain (parent folder name).
Result<Task> loadTask(const std::filesystem::path& path);

// Parses one {type, parameters} object; `where` is its JSON path for messages.
Result<ConfigStep> parseConfigStep(const nlohmann::json& step, const std::string& where);

struct LoadedTaskFile {
    std::filesystem::path path;
    Result<Task> task;
};
// Every task file under `dir`: OSWorld's examples/<domain>/<id>.json (also when `dir` is the
// evaluation_examples folder holding examples/), or a flat folder of *.json; sorted by path.
// One bad file does not stop the others. Files named test_*.json (OSWorld's meta lists) are
// skipped. Task::domain is the <domain> folder name (empty for a flat folder not under examples/).
// Fails only when `dir` is not a readable folder.
Result<std::vector<LoadedTaskFile>> loadTaskDir(const std::filesystem::path& dir);

// Placeholder name (without braces) -> value, e.g. {"PROJECT_DIR", "/tmp/iris-run-1/project"}.
using Variables = std::map<std::string, std::string>;

// Replaces every "{NAME}" whose NAME is in `vars`; other braces stay as written.
std::string substitute(std::string_view text, const Variables& vars);
// The same over every string value (not keys) of a JSON document.
nlohmann::json substituteJson(const nlohmann::json& value, const Variables& vars);
// A step with its parameters substituted and parsed again.
Result<ConfigStep> substituteStep(const ConfigStep& step, const Variables& vars);

}  // namespace iris::agent::eval
