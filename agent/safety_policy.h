#pragma once
// The last check before an action touches the real desktop: allow it, ask the person, or refuse.
// File actions are confined by the workspace itself; this policy covers what the workspace cannot
// see (typing secrets, leaving the page for a dangerous scheme, chords that end the session).
#include <string>
#include <vector>

#include "agent/actions/action.h"

namespace iris::agent {

enum class Verdict { Allow, Ask, Refuse };

struct SafetyDecision {
    Verdict verdict = Verdict::Allow;
    std::string reason;  // why, when not Allow
};

struct SafetyOptions {
    bool fileActionsAllowed = false;   // a workspace is open (web-project sessions)
    bool shellAllowed = false;         // opt-in; no shell action exists yet, so nothing asks
    bool desktop = false;              // acting on a real desktop, not a private browser page
    bool confirmEveryAction = false;   // ask the person before every action (a GUI setting)
    std::vector<std::string> secrets;  // values that must never be typed (API keys, passwords)
    std::string projectUrl;  // file:// URL of the web project; file: URLs below it stay allowed
};

class SafetyPolicy {
public:
    explicit SafetyPolicy(SafetyOptions options) : m_options(std::move(options)) {}

    SafetyDecision check(const Action& action) const;

private:
    SafetyOptions m_options;
};

}  // namespace iris::agent
