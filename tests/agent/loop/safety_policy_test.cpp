#include "agent/safety_policy.h"

#include <gtest/gtest.h>

namespace iris::agent {
namespace {

TEST(SafetyPolicy, DecidesEachKindOfRiskyAction) {
    SafetyOptions web;
    web.fileActionsAllowed = true;
    web.secrets = {"hunter2-secret"};
    web.projectUrl = "file:///home/me/site/";
    SafetyOptions desktop;
    desktop.desktop = true;
    struct Case {
        const char* name;
        const SafetyOptions* options;
        Action action;
        Verdict verdict;
    };
    const Case cases[] = {
        {"a click", &web, Click{Point{1, 2}}, Verdict::Allow},
        {"a file edit in a web session", &web, WriteFile{"a.css", "x"}, Verdict::Allow},
        {"a file edit on the desktop", &desktop, WriteFile{"a.css", "x"}, Verdict::Refuse},
        {"typing a secret", &web, TypeText{"pw: hunter2-secret!"}, Verdict::Refuse},
        {"typing text", &web, TypeText{"hunter2"}, Verdict::Allow},
        {"alt+f4 on the desktop", &desktop, PressKeys{{"alt", "f4"}}, Verdict::Ask},
        {"ctrl+alt+del on the desktop", &desktop, PressKeys{{"ctrl", "alt", "del"}}, Verdict::Ask},
        {"alt+f4 in the private browser", &web, PressKeys{{"alt", "f4"}}, Verdict::Allow},
        {"ctrl+s", &desktop, PressKeys{{"ctrl", "s"}}, Verdict::Allow},
        {"a javascript: URL", &web, Navigate{"JavaScript:alert(1)"}, Verdict::Refuse},
        {"a file: URL outside the project", &web, Navigate{"file:///etc/passwd"}, Verdict::Refuse},
        {"a file: URL climbing out", &web, Navigate{"file:///home/me/site/../x"}, Verdict::Refuse},
        {"a page of the project", &web, Navigate{"file:///home/me/site/about.html"},
         Verdict::Allow},
        {"an https URL", &web, Navigate{"https://example.org/"}, Verdict::Allow},
    };
    for (const Case& c : cases) {
        const SafetyDecision decision = SafetyPolicy(*c.options).check(c.action);
        EXPECT_EQ(decision.verdict, c.verdict) << c.name << ": " << decision.reason;
        if (c.verdict != Verdict::Allow) {
            EXPECT_FALSE(decision.reason.empty()) << c.name;
        }
    }
}

}  // namespace
}  // namespace iris::agent
