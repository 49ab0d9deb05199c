#include "agent/recording/redactor.h"

#include <algorithm>
#include <array>
#include <cctype>

#include <nlohmann/json.hpp>
#include <unistd.h>

namespace iris::agent {

Redactor::Redactor(std::vector<std::string> secrets) : m_secrets(std::move(secrets)) {
    std::erase_if(m_secrets, [](const std::string& s) { return s.empty(); });
    std::sort(m_secrets.begin(), m_secrets.end(), [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() > b.size() : a < b;
    });
    m_secrets.erase(std::unique(m_secrets.begin(), m_secrets.end()), m_secrets.end());
}

bool Redactor::isSecretVariableName(std::string_view name) {
    std::string upper(name);
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    static constexpr std::array<std::string_view, 5> kMarkers = {"KEY", "TOKEN", "SECRET",
                                                                 "PASSWORD", "PASSWD"};
    return std::any_of(kMarkers.begin(), kMarkers.end(), [&](std::string_view marker) {
        return upper.find(marker) != std::string::npos;
    });
}

Redactor Redactor::fromEnvironment(std::vector<std::string> extraSecrets) {
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        const std::string_view variable(*entry);
        const std::size_t equals = variable.find('=');
        if (equals == std::string_view::npos) continue;
        const std::string_view value = variable.substr(equals + 1);
        if (value.size() >= kMinEnvironmentSecretLength &&
            isSecretVariableName(variable.substr(0, equals))) {
            extraSecrets.emplace_back(value);
        }
    }
    return Redactor(std::move(extraSecrets));
}

std::string Redactor::redact(std::string_view text) const {
    std::string out(text);
    for (const std::string& secret : m_secrets) {
        std::size_t at = 0;
        while ((at = out.find(secret, at)) != std::string::npos) {
            out.replace(at, secret.size(), kReplacement);
            at += kReplacement.size();
        }
    }
    return out;
}

void Redactor::redactJson(nlohmann::json& json) const {
    if (m_secrets.empty()) return;
    if (json.is_string()) {
        json = redact(json.get_ref<const std::string&>());
    } else if (json.is_structured()) {
        for (auto& child : json)
            redactJson(child);
    }
}

bool Redactor::containsSecret(std::string_view text) const {
    return std::any_of(m_secrets.begin(), m_secrets.end(), [&](const std::string& secret) {
        return text.find(secret) != std::string_view::npos;
    });
}

}  // namespace iris::agent
