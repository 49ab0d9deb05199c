#pragma once
// A recorded session in OSWorld's result layout (xlang-ai/OSWorld lib_run_single.py), so that
// OSWorld's tools (show_result.py, trajectory viewers) read Iris runs:
//   traj.jsonl            one line per action: step_num, action_timestamp, action, response,
//                         reward, done, info, screenshot_file
//   step_<n>_<ts>.png     the screen after each action
//   recording.mp4         the observations as a 1 fps video
//   result.txt            "<score>\n", only for a scored session
#include <filesystem>

#include "agent/recording/recording_types.h"
#include "base/status.h"

namespace iris::agent {

// Writes into `dir` (created when missing; files of the same names are replaced). Iris observes
// once per step, so every action of a step shows the next step's observation (the last step: its
// own). Timestamps are UTC.
Status exportOsworld(const SessionRecord& session, const std::filesystem::path& dir);

// Python's repr of a float, as OSWorld writes scores: "1.0", "0.0", "0.873".
std::string pythonFloatRepr(double value);

}  // namespace iris::agent
