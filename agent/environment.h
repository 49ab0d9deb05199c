#pragma once
// The world the agent acts in: a browser page (agent/env/browser), an X11 desktop
// (agent/env/desktop), or a fake for tests. The loop only talks to this interface.
#include <string>
#include <vector>

#include "agent/actions/action.h"
#include "agent/observation.h"
#include "base/status.h"

namespace iris::agent {

struct ActionResult {
    Status status;                          // not ok: the action could not be carried out
    std::string output;                     // what the action returned (ReadFile: the content)
    std::vector<std::string> changedFiles;  // project-relative paths a file action changed
};

// Not thread-safe: one session's worker drives one environment. Implementations that must run
// on a particular thread (Qt) marshal calls there themselves.
class Environment {
public:
    virtual ~Environment() = default;

    // Back to the initial state (the start page, a fresh display).
    virtual Status reset() = 0;

    // The current screen. Waits until the page or screen has settled after the last action.
    virtual Result<Observation> observe() = 0;

    // Carries out a UI action (click, type, scroll, navigate, ...). File actions are the
    // workspace's; an environment answers them with Unsupported.
    virtual ActionResult execute(const Action& action) = 0;

    // Shows the current state of the files the page was loaded from, after the workspace edited
    // them (browser: reload, bypassing the cache). Environments without such files do nothing.
    virtual Status reload() { return Status::ok(); }

    // "browser", "desktop:0", "fake": for logs and recordings.
    virtual std::string describe() const = 0;
};

}  // namespace iris::agent
