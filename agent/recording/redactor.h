#pragma once
// Keeps secrets out of recordings: every text the session store writes passes through a Redactor,
// which replaces each occurrence of a secret value with "[redacted]".
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace iris::agent {

class Redactor {
public:
    static constexpr std::string_view kReplacement = "[redacted]";
    // Environment values shorter than this are too likely to occur by chance ("1", "true").
    static constexpr std::size_t kMinEnvironmentSecretLength = 8;

    Redactor() = default;  // redacts nothing
    // Explicit secrets; empty strings are ignored.
    explicit Redactor(std::vector<std::string> secrets);

    // `extraSecrets` plus the value of every environment variable whose name contains KEY, TOKEN,
    // SECRET, PASSWORD or PASSWD (any case) and whose value has at least 8 bytes.
    static Redactor fromEnvironment(std::vector<std::string> extraSecrets = {});

    // True when `name` is the name of an environment variable that holds a secret.
    static bool isSecretVariableName(std::string_view name);

    std::string redact(std::string_view text) const;
    // Every string value (not object keys) in `json`, recursively.
    void redactJson(nlohmann::json& json) const;
    bool containsSecret(std::string_view text) const;

    const std::vector<std::string>& secrets() const { return m_secrets; }
    bool empty() const { return m_secrets.empty(); }
    std::size_t size() const { return m_secrets.size(); }

private:
    std::vector<std::string> m_secrets;  // longest first, so a secret inside another loses
};

}  // namespace iris::agent
