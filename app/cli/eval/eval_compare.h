#pragma once
// `iris eval compare A B`: two results folders (eval_results.h) over the same tasks, e.g. two
// models or two quantizations of one, side by side. Tasks are paired by their file (results.json's
// "file", relative to the tasks folder). Per task, a folder's mean score is the mean over its
// scored attempts (one without --repeat), and the task SUCCEEDS there when more than half of its
// scored attempts scored 1 (eval_stats.h: succeeded(); without --repeat, its one score is 1).
// The difference B - A is the mean over the paired tasks (scored in both) of the per-task mean
// score difference, with a 95% interval from the paired standard error (normal approximation) and
// from a paired bootstrap over tasks (fixed seed). Tasks in one folder only, or scored in one
// only, are listed and left out of the pairing.
//
// The page (self-contained like the report: inline CSS and SVG, no scripts; screenshots linked
// relative to the page) holds the rates, the difference, the flipped tasks with both final
// screenshots side by side and links to each trajectory, every task's scores, and the steps,
// tokens and step latency distributions of A and B overlaid.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/eval/eval_results.h"
#include "app/cli/eval/eval_stats.h"
#include "base/status.h"

namespace iris::app::eval {

enum class TaskChange {
    Same,      // both succeed or both fail, same mean score
    Changed,   // both succeed or both fail, the mean score differs
    Fixed,     // fails in A, succeeds in B
    Broken,    // succeeds in A, fails in B
    OnlyA,     // no entry in B
    OnlyB,     // no entry in A
    Unscored,  // in both, but no scored attempt in one of them (or both)
};
std::string_view taskChangeName(TaskChange change);  // "same", "changed", "fixed", ...

struct TaskPair {
    std::string file;
    std::string domain;
    std::string id;
    std::optional<TaskFrequency> a;
    std::optional<TaskFrequency> b;
    std::string resultDirA;  // attempt 0's folder in A (relative to A), empty: none
    std::string resultDirB;
    TaskChange change = TaskChange::Same;
};

struct Comparison {
    std::vector<TaskPair> tasks;  // every task of either folder, by (domain, id, file)
    PairedDifference difference;  // per-task mean score, B - A, over the paired tasks
    int fixed = 0, broken = 0, changed = 0, onlyA = 0, onlyB = 0, unscored = 0;
};

// A task succeeds in a folder when more than half of its scored attempts succeeded.
bool taskSucceeds(const TaskFrequency& task);

Comparison compareRuns(const RunResults& a, const RunResults& b,
                       std::uint64_t seed = kBootstrapSeed, int resamples = kBootstrapResamples);

// The page for runs `a` read from `dirA` and `b` from `dirB`, links relative to `pageDir`.
std::string comparisonHtml(const Comparison& comparison, const RunResults& a,
                           const std::filesystem::path& dirA, const RunResults& b,
                           const std::filesystem::path& dirB, const std::filesystem::path& pageDir);

// A few terminal lines: both rates, B - A with both intervals, the counts and the flipped tasks.
std::string comparisonText(const Comparison& comparison, const std::string& nameA,
                           const std::string& nameB);

// Reads both results.json files, writes the page to `output`; returns comparisonText().
Result<std::string> writeComparison(const std::filesystem::path& dirA,
                                    const std::filesystem::path& dirB,
                                    const std::filesystem::path& output);

}  // namespace iris::app::eval
