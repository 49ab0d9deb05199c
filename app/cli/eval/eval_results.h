#pragma once
// What `iris eval run` records per task and for the whole run, where it goes on disk, and how an
// interrupted run resumes. Pure (no Qt): the report and the tests read the same files.
//
// Layout under the run's output folder DIR (OSWorld's, docs/osworld.md §6.1, without the
// observation-type level, which Iris does not vary: every step sees a screenshot):
//   DIR/results.json                                     the run: options and one entry per task
//   DIR/sessions.db                                      every task as a recorded session
//   DIR/<action_format>/<model>/<domain>/<id>/traj.jsonl OSWorld's trajectory
//   .../step_<n>_<ts>.png, recording.mp4, result.txt     (agent/recording/osworld_export.h)
//   .../evaluation.json                                  the evaluator's per-metric details
// A task counts as finished when its folder holds a result.txt that parses as a number (OSWorld's
// get_unfinished); a resumed run skips exactly those.
//
// --repeat R runs every task R times (attempts 0..R-1, each in a fresh environment). Attempt 0
// uses the folders above, so R = 1 is OSWorld's layout and OSWorld's scripts read run 0 as it
// is; attempt r > 0 gets the same layout under a folder of its own (attemptResultDir):
//   DIR/attempt_<r>/<action_format>/<model>/<domain>/<id>/...
// Every attempt is finished or not on its own (its own result.txt), so a resumed run redoes only
// the unfinished attempts; results.json holds one entry per task and attempt.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace iris::app::eval {

// How a task's attempt ended.
enum class TaskStatus {
    Scored,       // the loop ended (done, failed, step limit) and the evaluator gave a score
    TimedOut,     // --task-timeout stopped the loop; the evaluator still scored what was there
    Unsupported,  // the task needs something this run cannot provide (checkTask); not attempted
    Error,        // the task file, its set-up, the loop or the evaluator failed; not scored
    Stopped,      // the run was interrupted during this task; it runs again on resume
};
std::string_view taskStatusName(TaskStatus status);  // "scored", "timed_out", ...
Result<TaskStatus> taskStatusFromName(std::string_view name);

struct TaskResult {
    std::string id;
    std::string domain;
    std::string file;  // the task file as given
    TaskStatus status = TaskStatus::Error;
    std::optional<double> score;  // present for Scored and TimedOut
    std::string loopEnd;          // "done", "failed", "max_steps", "stopped", "error" or empty
    int steps = 0;                // model calls
    std::int64_t promptTokens = 0;
    std::int64_t completionTokens = 0;
    std::vector<double> stepLatencyMs;  // the model call of each step
    double durationS = 0;               // set-up to score, wall clock
    std::string error;                  // why it is not scored (or a note: timed out)
    std::string reason;                 // the evaluator's one-line reason
    std::string message;                // the agent's done/fail message
    std::int64_t session = 0;           // id in DIR/sessions.db (0: none)
    std::string resultDir;              // relative to DIR, '/'-separated; empty: none
    int attempt = 0;                    // which of --repeat R runs of the task (0-based)
    std::string endpoint;               // the model server that answered (several endpoints)
    // Problems found in how the task was done that make its score 0 ("runaway_loop",
    // "reward_hacking"), each with what was seen after a ':'.
    std::vector<std::string> flags;

    bool attempted() const { return score.has_value(); }
};

nlohmann::json toJson(const TaskResult& result);
// Errors name the field ("tasks[3].score: expected a number").
Result<TaskResult> taskResultFromJson(const nlohmann::json& value, const std::string& where);

struct RunSettings {
    std::string actionFormat;  // the run's default ("pyautogui", ...); tasks may override it
    std::string model;         // the folder name of the model ("demonstration", "qwen2.5-vl-3b")
    std::string modelDescription;
    int maxSteps = 15;
    double sleepAfterActionS = 0;
    double taskTimeoutS = 0;  // 0: none
    int parallel = 1;
    std::string tasksPath;
    int repeat = 1;     // runs of every task (--repeat)
    int loopLimit = 5;  // --loop-limit: repeats that flag a runaway loop (0: never)
    std::string shard;  // "K/N" when this folder holds shard K of N, else empty
};

struct RunResults {
    RunSettings settings;
    int tasksTotal = 0;             // task files found, malformed ones included (not x repeat)
    std::vector<TaskResult> tasks;  // sorted by (domain, id, file)

    // Replaces the entry of the same file and attempt (or adds it) and keeps the order.
    void put(TaskResult result);
    const TaskResult* find(const std::string& file, int attempt = 0) const;
};

nlohmann::json toJson(const RunResults& results);
Result<RunResults> runResultsFromJson(const nlohmann::json& value, const std::string& source);
// DIR/results.json: written to a temporary file and renamed, so a crash never leaves half a file.
Status saveRunResults(const RunResults& results, const std::filesystem::path& dir);
// NotFound when the file does not exist.
Result<RunResults> loadRunResults(const std::filesystem::path& dir);

// A name safe as one path component: '/', '\', control characters, leading dots and empty names
// become '_' ("qwen2.5-vl-3b" stays).
std::string pathComponent(std::string_view name);

// "<action_format>/<model>/<domain>/<id>" with each part through pathComponent().
std::string taskResultDir(const std::string& actionFormat, const std::string& model,
                          const std::string& domain, const std::string& id);

// Attempt `attempt`'s folder for a task whose attempt-0 folder is `taskDir` (taskResultDir()):
// taskDir itself for attempt 0, "attempt_<attempt>/" + taskDir after that.
std::string attemptResultDir(const std::string& taskDir, int attempt);

// The score in `dir`/result.txt, or nullopt when the file is missing or not a number
// (OSWorld's show_result: float(text)).
std::optional<double> readResultTxt(const std::filesystem::path& dir);

// Which tasks a run over `files` still has to do: those whose result folder under `outDir` holds
// no valid result.txt. `resultDirOf(i)` is task i's folder relative to outDir, or empty when the
// task file could not be read (always redone). Returns indices into the caller's list, in order.
std::vector<std::size_t> unfinishedTasks(
    const std::filesystem::path& outDir, std::size_t count,
    const std::function<std::string(std::size_t)>& resultDirOf);

struct DomainSummary {
    std::string domain;
    int tasks = 0;      // tasks found in the domain
    int attempted = 0;  // with a score
    double scoreSum = 0;
};

struct RunSummary {
    int tasks = 0;
    int attempted = 0;
    int unsupported = 0;
    int errors = 0;
    int stopped = 0;
    double scoreSum = 0;
    // OSWorld reports both: sum / attempted (show_result.py) and sum / all tasks.
    double rateAttempted() const { return attempted ? scoreSum / attempted : 0; }
    double rateAll() const { return tasks ? scoreSum / tasks : 0; }
    std::vector<DomainSummary> domains;  // by name
};

// `tasksTotal` counts tasks with no entry (never run) as found but not attempted. With repeats,
// RunSummary::tasks counts attempts: tasksTotal x repeat (or the entries, if more).
RunSummary summarize(const RunResults& results);

// A few lines for the terminal: rates (both denominators), the success rate with its confidence
// interval (and with repeats pass@k, pass^k and the runs' spread: eval_stats.h), per-domain
// rows, failures.
std::string summaryText(const RunResults& results);

}  // namespace iris::app::eval
