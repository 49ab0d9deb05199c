#include <cstdlib>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/recording/redactor.h"
#include "agent/recording/session_store.h"
#include "tests/agent/recording/recording_fixtures.h"

namespace iris::agent {
namespace {

using namespace recording_test;  // NOLINT(google-build-using-namespace)
namespace fs = std::filesystem;

TEST(Redactor, ReplacesEveryOccurrenceOfEverySecret) {
    const Redactor redactor({"hunter22", "sk-live-abcdef", ""});
    EXPECT_EQ(redactor.size(), 2u);
    EXPECT_EQ(redactor.redact("key=sk-live-abcdef pw=hunter22 again sk-live-abcdef"),
              "key=[redacted] pw=[redacted] again [redacted]");
    EXPECT_EQ(redactor.redact("nothing here"), "nothing here");
    EXPECT_TRUE(redactor.containsSecret("xx hunter22 yy"));
    EXPECT_FALSE(redactor.containsSecret("hunter2"));
}

TEST(Redactor, PrefersTheLongerOfOverlappingSecrets) {
    // Replacing the short one first would leave "-suffix" of the long one behind.
    const Redactor redactor({"token123", "token123-suffix"});
    EXPECT_EQ(redactor.redact("a token123-suffix b token123"), "a [redacted] b [redacted]");
}

TEST(Redactor, RedactsStringValuesInJsonButNotKeys) {
    const Redactor redactor({"s3cr3t-value"});
    nlohmann::json json = {{"api_key", "s3cr3t-value"},
                           {"nested", {{"list", {"x s3cr3t-value y", 3, true}}}},
                           {"s3cr3t-value", 1}};
    redactor.redactJson(json);
    EXPECT_EQ(json["api_key"], "[redacted]");
    EXPECT_EQ(json["nested"]["list"][0], "x [redacted] y");
    EXPECT_EQ(json["nested"]["list"][1], 3);
    EXPECT_TRUE(json.contains("s3cr3t-value"));
}

TEST(Redactor, TakesSecretLookingEnvironmentVariables) {
    EXPECT_TRUE(Redactor::isSecretVariableName("OPENAI_API_KEY"));
    EXPECT_TRUE(Redactor::isSecretVariableName("github_token"));
    EXPECT_TRUE(Redactor::isSecretVariableName("DB_Password"));
    EXPECT_TRUE(Redactor::isSecretVariableName("SMTP_PASSWD"));
    EXPECT_TRUE(Redactor::isSecretVariableName("CLIENT_SECRET"));
    EXPECT_FALSE(Redactor::isSecretVariableName("HOME"));
    EXPECT_FALSE(Redactor::isSecretVariableName("PATH"));

    ASSERT_EQ(::setenv("IRIS_TEST_REDACTOR_TOKEN", "tok-1234567890", 1), 0);
    ASSERT_EQ(::setenv("IRIS_TEST_SHORT_KEY", "1234567", 1), 0);  // too short to be a secret
    ASSERT_EQ(::setenv("IRIS_TEST_PLAIN", "plain-value-123", 1), 0);
    const Redactor redactor = Redactor::fromEnvironment({"explicit-secret"});
    EXPECT_EQ(redactor.redact("tok-1234567890 1234567 plain-value-123 explicit-secret"),
              "[redacted] 1234567 plain-value-123 [redacted]");
    ::unsetenv("IRIS_TEST_REDACTOR_TOKEN");
    ::unsetenv("IRIS_TEST_SHORT_KEY");
    ::unsetenv("IRIS_TEST_PLAIN");
}

// The secret must not reach the database file nor its write-ahead log, whichever text carried it.
TEST(SessionStore, KeepsEnvironmentSecretsOutOfTheDatabaseAndItsLog) {
    const std::string secret = "sk-iris-test-4f8a9c2e7b1d";
    ASSERT_EQ(::setenv("IRIS_TEST_API_KEY", secret.c_str(), 1), 0);
    const fs::path dir = freshDir("redaction");
    const fs::path file = dir / "sessions.db";

    SessionStoreOptions options;  // the default: secrets from the environment
    auto opened = SessionStore::open(file, options);
    ASSERT_TRUE(opened) << opened.status().message();
    SessionStore store = std::move(opened).value();

    SessionInfo info = sessionInfo("Log in with the key " + secret);
    info.config["api_key"] = secret;
    const std::int64_t id = *store.createSession(info);
    StepRecord step = makeStep(0);
    step.request.messages[1].content[0].text = "Use " + secret + " to log in";
    step.request.messages.push_back(ChatMessage::text("assistant", ""));
    step.request.messages.back().toolCalls.push_back(
        {"c1", "type", R"({"text":")" + secret + R"("})"});
    step.response->text = "Typing " + secret;
    step.response->toolCalls[0].arguments = R"({"text":")" + secret + R"("})";
    step.actions = {TypeText{secret}, Navigate{"https://example.com/?key=" + secret}};
    step.results = {{false, "rejected " + secret, ""}, {true, "", ""}};
    step.edits = {{"config.js", 1, "+const key = \"" + secret + "\";\n"}};
    step.url = "https://example.com/?key=" + secret;
    ASSERT_TRUE(store.appendStep(id, step).isOk());
    ASSERT_TRUE(store.addEvent(id, {0, 0, "error", "HTTP 401 for key " + secret}).isOk());

    // While the store is open the step lives in the WAL; afterwards in the database.
    ASSERT_TRUE(fs::exists(dir / "sessions.db-wal"));
    EXPECT_EQ(readBytes(dir / "sessions.db-wal").find(secret), std::string::npos);
    EXPECT_EQ(readBytes(file).find(secret), std::string::npos);

    auto loaded = store.loadSession(id);
    ASSERT_TRUE(loaded) << loaded.status().message();
    EXPECT_EQ(loaded->summary.instruction, "Log in with the key [redacted]");
    EXPECT_EQ(loaded->config["api_key"], "[redacted]");
    const StepRecord& back = loaded->steps[0];
    EXPECT_EQ(back.request.messages[1].content[0].text, "Use [redacted] to log in");
    EXPECT_EQ(back.response->text, "Typing [redacted]");
    EXPECT_EQ(back.actions[0], Action(TypeText{"[redacted]"}));
    EXPECT_EQ(back.results[0].error, "rejected [redacted]");
    EXPECT_EQ(back.edits[0].diff, "+const key = \"[redacted]\";\n");
    EXPECT_EQ(loaded->events[0].message, "HTTP 401 for key [redacted]");
    // Screenshots are bytes, not text: they are kept as they were.
    EXPECT_EQ(back.observationPng, step.observationPng);

    { SessionStore closing = std::move(store); }
    EXPECT_EQ(readBytes(file).find(secret), std::string::npos);
    ::unsetenv("IRIS_TEST_API_KEY");
}

}  // namespace
}  // namespace iris::agent
