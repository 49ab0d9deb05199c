#pragma once
// `iris eval merge OUT DIR...`: the results folders of `iris eval run --shard K/N` (shards.h)
// gathered into one, as if one run had run every task: OUT/results.json (settings.shard
// cleared, tasksTotal the whole suite's), each task's result folder, every recorded session in
// OUT/sessions.db under new ids (TaskResult.session follows) and OUT/report.html.
//
// Refused, before anything is written, with the folder, task or field named: an OUT that is not
// empty or is one of the inputs; a folder that is not a shard's output; shards of different N or
// of different task suites (their shard.json assignments differ); the same shard twice; settings
// that differ (model, action format, max steps, sleep after action, task timeout, repeat, loop
// limit); a task in two folders; a task of the suite that no folder finished (named with its
// shard).
#include <filesystem>
#include <iosfwd>
#include <vector>

#include "base/status.h"

namespace iris::app::eval {

// Returns the terminal summary of the merged run (summaryText()).
Result<std::string> mergeShards(const std::filesystem::path& out,
                                const std::vector<std::filesystem::path>& dirs);

}  // namespace iris::app::eval
