// The model options of the agent subcommands, read into app/session's ModelChoice: what each
// combination chooses, and the errors that name the option (checked before any model loads).
#include "app/cli/agent_setup.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace iris::app {
namespace {

Result<ModelChoice> choiceOf(std::vector<std::string> words) {
    words.insert(words.begin(), "iris");
    std::vector<char*> argv;
    for (std::string& word : words)
        argv.push_back(word.data());
    argv.push_back(nullptr);
    const std::vector<OptionSpec> specs = modelAndDatabaseOptions();
    Result<Arguments> args = Arguments::parse(int(words.size()), argv.data(), specs);
    if (!args) return args.status();
    return modelChoiceFromArguments(*args);
}

TEST(CliModelOptions, ChooseTheLocalEngineTheEndpointOrNone) {
    Result<ModelChoice> none = choiceOf({});
    ASSERT_TRUE(none) << none.status().message();
    EXPECT_EQ(none->backend, ModelChoice::Backend::None);

    Result<ModelChoice> local =
        choiceOf({"--model", "m.gguf", "--mmproj", "p.gguf", "-t", "2", "--ctx-size", "4096"});
    ASSERT_TRUE(local) << local.status().message();
    EXPECT_EQ(local->backend, ModelChoice::Backend::LocalEngine);
    EXPECT_EQ(local->modelPath, "m.gguf");
    EXPECT_EQ(local->mmprojPath, "p.gguf");
    EXPECT_EQ(local->threads, 2);
    EXPECT_EQ(local->contextSize, 4096);

    Result<ModelChoice> endpoint = choiceOf({"--endpoint", "http://127.0.0.1:9/v1"});
    ASSERT_TRUE(endpoint) << endpoint.status().message();
    EXPECT_EQ(endpoint->backend, ModelChoice::Backend::Endpoint);
    EXPECT_EQ(endpoint->endpoint, "http://127.0.0.1:9/v1");
    EXPECT_EQ(endpoint->modelName, "iris");
    EXPECT_EQ(endpoint->apiKeyEnv, "IRIS_API_KEY");
}

TEST(CliModelOptions, ErrorsNameTheOption) {
    const struct {
        std::vector<std::string> words;
        std::string error;
    } cases[] = {
        {{"--model", "m.gguf", "--endpoint", "http://h/v1"},
         "give --model or --endpoint, not both"},
        {{"--mmproj", "p.gguf"}, "--mmproj needs --model"},
        {{"--model", "m.gguf", "--threads", "0"}, "--threads must be >= 1"},
        {{"--model", "m.gguf", "--ctx-size", "255"}, "--ctx-size >= 256"},
        {{"--endpoint", "http://h/v1", "--api-key-env", "IRIS_TEST_UNSET_KEY_VARIABLE"},
         "--api-key-env: the environment variable IRIS_TEST_UNSET_KEY_VARIABLE is not set"},
    };
    for (const auto& c : cases) {
        Result<ModelChoice> choice = choiceOf(c.words);
        ASSERT_FALSE(choice) << c.error;
        EXPECT_NE(choice.status().message().find(c.error), std::string::npos)
            << choice.status().message();
    }
}

}  // namespace
}  // namespace iris::app
