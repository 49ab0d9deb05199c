#pragma once
// One recorded agent session from the command line: the plan's environment, the loop, the
// session database, progress lines, and the exit code. `iris run` and `iris demo` use it; the
// set-up itself (SessionPlan, prepareSession) is app/session's, shared with the GUI.
#include <cstdint>
#include <iosfwd>
#include <string>

#include "agent/agent_loop.h"
#include "agent/clients/model_client.h"
#include "app/cli/interrupt_watcher.h"
#include "app/session/session_plan.h"
#include "base/status.h"

namespace iris::app {

// Exit codes of run, demo and replay.
inline constexpr int kExitDone = 0;  // the agent finished the task
inline constexpr int kExitNotDone =
    1;                                // it gave up: fail, step limit, no improvement, runaway loop
inline constexpr int kExitUsage = 2;  // bad command line
inline constexpr int kExitError = 3;  // stopped on an error or on request

Result<std::int64_t> parseSessionId(const std::string& text);  // "12"

// Step progress lines as `iris run` prints them.
void printStep(std::ostream& out, const agent::StepReport& report);

// Needs the QApplication (browser environments). Prints one line per step to `out`, and the
// session id, final status and score at the end. Returns one of the exit codes above.
// With `interrupts`, Ctrl-C stops the loop within one step (the session is kept as "stopped").
int runAgentSession(const SessionPlan& plan, agent::ModelClient& client, std::ostream& out,
                    std::ostream& err, InterruptWatcher* interrupts);

}  // namespace iris::app
