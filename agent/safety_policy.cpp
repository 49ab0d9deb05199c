#include "agent/safety_policy.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "base/strings.h"

namespace iris::agent {
namespace {

bool hasKey(const std::vector<std::string>& keys, std::string_view key) {
    return std::any_of(keys.begin(), keys.end(), [&](const std::string& k) {
        const std::string name = asciiLower(k);
        if (key == "ctrl") return name == "ctrl" || name == "control" || name == "ctrlleft";
        if (key == "alt") return name == "alt" || name == "altleft" || name == "option";
        if (key == "win")
            return name == "win" || name == "super" || name == "meta" || name == "cmd";
        if (key == "delete") return name == "delete" || name == "del";
        return name == key;
    });
}

// Chords that end the session, the desktop session or the machine when sent to a real desktop.
std::string destructiveChord(const std::vector<std::string>& keys) {
    if (hasKey(keys, "ctrl") && hasKey(keys, "alt") && hasKey(keys, "delete"))
        return "ctrl+alt+delete";
    if (hasKey(keys, "alt") && hasKey(keys, "f4")) return "alt+f4 closes the focused window";
    if (hasKey(keys, "ctrl") && hasKey(keys, "alt") && hasKey(keys, "backspace"))
        return "ctrl+alt+backspace kills the X server";
    if (hasKey(keys, "win") && hasKey(keys, "l")) return "super+l locks the screen";
    return {};
}

// Navigations that run code or read local files instead of showing a page.
std::string dangerousUrl(std::string_view url, std::string_view projectUrl) {
    if (!projectUrl.empty() && url.starts_with(projectUrl) &&
        url.find("..") == std::string_view::npos)
        return {};
    const std::string u = asciiLower(url);
    for (std::string_view scheme : {"javascript:", "data:", "chrome:", "chrome-extension:",
                                    "view-source:", "devtools:", "file:"}) {
        if (u.starts_with(scheme))
            return "navigation to a " + std::string(scheme) + " URL is not allowed";
    }
    return {};
}

}  // namespace

SafetyDecision SafetyPolicy::check(const Action& action) const {
    if (isFileAction(action) && !m_options.fileActionsAllowed) {
        return {Verdict::Refuse, "file actions need a web-project session (--env web:DIR)"};
    }
    if (const auto* type = std::get_if<TypeText>(&action)) {
        for (const std::string& secret : m_options.secrets) {
            if (!secret.empty() && type->text.find(secret) != std::string::npos)
                return {Verdict::Refuse, "the text contains a secret (an API key or password)"};
        }
    }
    if (const auto* keys = std::get_if<PressKeys>(&action); keys && m_options.desktop) {
        if (std::string why = destructiveChord(keys->keys); !why.empty())
            return {Verdict::Ask, why};
    }
    if (const auto* navigate = std::get_if<Navigate>(&action)) {
        if (std::string why = dangerousUrl(navigate->url, m_options.projectUrl); !why.empty())
            return {Verdict::Refuse, why};
    }
    if (m_options.confirmEveryAction && !endsEpisode(action))
        return {Verdict::Ask, "every action is confirmed (settings)"};
    return {};
}

}  // namespace iris::agent
