// The model options of the agent subcommands, read into app/session's ModelChoice: what each
// combination chooses, and the errors that name the option (checked before any model loads).
#include "app/cli/agent_setup.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app/models/model_store.h"
#include "base/temporary_folder.h"

namespace iris::app {
namespace {

Result<ModelChoice> choiceOf(std::vector<std::string> words) {
    words.insert(words.begin(), "iris");
    std::vector<char*> argv;
    for (std::string& word : words)
        argv.push_back(word.data());
    argv.push_back(nullptr);
    std::vector<OptionSpec> specs = modelAndDatabaseOptions();
    specs.push_back({"endpoints-file", "", true, "as iris eval run has it"});
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
    EXPECT_EQ(local->device.kind, inference::DeviceKind::Auto) << "--device defaults to auto";
    EXPECT_TRUE(local->shareEngine);
    Result<ModelChoice> gpu = choiceOf({"--model", "m.gguf", "--device", "cuda:1"});
    ASSERT_TRUE(gpu) << gpu.status().message();
    EXPECT_EQ(gpu->device.kind, inference::DeviceKind::Cuda);
    EXPECT_EQ(gpu->device.index, 1);
    Result<ModelChoice> alone = choiceOf({"--model", "m.gguf", "--no-shared-engine"});
    ASSERT_TRUE(alone) << alone.status().message();
    EXPECT_FALSE(alone->shareEngine);
    EXPECT_EQ(local->kvDiskBytes, 0) << "the disk tier is off unless asked for";
    Result<ModelChoice> disk = choiceOf({"--model", "m.gguf", "--kv-disk-gb", "1.5"});
    ASSERT_TRUE(disk) << disk.status().message();
    EXPECT_EQ(disk->kvDiskBytes, std::int64_t(3) << 29);
    EXPECT_EQ(local->kvTiers.computeBytes, 0) << "KV tiers are off unless asked for";
    Result<ModelChoice> tiers = choiceOf({"--model", "m.gguf", "--kv-resident-mb", "64",
                                          "--kv-host-mb", "128", "--kv-disk-gb", "1"});
    ASSERT_TRUE(tiers) << tiers.status().message();
    EXPECT_EQ(tiers->kvTiers.computeBytes, std::int64_t(64) << 20);
    EXPECT_EQ(tiers->kvTiers.hostBytes, std::int64_t(128) << 20);
    EXPECT_EQ(tiers->kvTiers.diskBytes, std::int64_t(1) << 30);
    EXPECT_FALSE(tiers->kvTiers.diskFolder.empty());

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
        {{"--endpoint", "http://h/v1", "--endpoint", "http://h/v1"},
         "--endpoint: http://h/v1 is given twice"},
        {{"--model", "m.gguf", "--threads", "0"}, "--threads must be >= 1"},
        {{"--model", "m.gguf", "--ctx-size", "255"}, "--ctx-size >= 256"},
        {{"--model", "m.gguf", "--kv-disk-gb", "-1"}, "--kv-disk-gb must be 0 (off)"},
        {{"--model", "m.gguf", "--kv-resident-mb", "-1"}, "--kv-resident-mb and --kv-host-mb"},
        {{"--model", "m.gguf", "--device", "gpu"},
         "--device 'gpu' is not one of auto, cpu, cuda, cuda:N"},
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

// A repeated option keeps every value in order (both spellings); value() is the last one.
TEST(CliArguments, RepeatedOptionsKeepEveryValueInOrder) {
    std::vector<std::string> words = {
        "iris",       "--endpoint", "http://a/v1", "task.json", "--endpoint=http://b/v1",
        "--endpoint", "http://a/v1"};
    std::vector<char*> argv;
    for (std::string& word : words)
        argv.push_back(word.data());
    const std::vector<OptionSpec> specs = {{"endpoint", "", true, ""}, {"out", "o", true, ""}};
    Result<Arguments> args = Arguments::parse(int(argv.size()), argv.data(), specs);
    ASSERT_TRUE(args) << args.status().message();
    EXPECT_EQ(args->values("endpoint"),
              (std::vector<std::string>{"http://a/v1", "http://b/v1", "http://a/v1"}));
    EXPECT_EQ(args->value("endpoint"), "http://a/v1");
    EXPECT_TRUE(args->values("out").empty());
    EXPECT_EQ(args->positional(), std::vector<std::string>{"task.json"});
}

// --endpoint given several times and an --endpoints-file: a pool of servers, in the order given
// (the options first, then the file's lines); one --endpoint alone stays a single server.
TEST(CliModelOptions, SeveralEndpointsFromTheOptionAndAFile) {
    Result<TemporaryFolder> folder = TemporaryFolder::create("iris-endpoints");
    ASSERT_TRUE(folder) << folder.status().message();
    const std::filesystem::path list = folder->path() / "endpoints.txt";
    std::ofstream(list)
        << "# the eval servers\n\nhttp://10.0.0.2:8000/v1\n  https://b.example/v1  \n";

    Result<ModelChoice> two = choiceOf({"--endpoint", "http://a/v1", "--endpoint", "http://b/v1"});
    ASSERT_TRUE(two) << two.status().message();
    EXPECT_EQ(two->backend, ModelChoice::Backend::Endpoint);
    EXPECT_EQ(two->endpoints, (std::vector<std::string>{"http://a/v1", "http://b/v1"}));

    Result<ModelChoice> mixed =
        choiceOf({"--endpoints-file", list.string(), "--endpoint", "http://a/v1"});
    ASSERT_TRUE(mixed) << mixed.status().message();
    EXPECT_EQ(mixed->endpoints, (std::vector<std::string>{"http://a/v1", "http://10.0.0.2:8000/v1",
                                                          "https://b.example/v1"}));
    EXPECT_EQ(mixed->endpoint, "http://a/v1");

    Result<ModelChoice> one = choiceOf({"--endpoint", "http://a/v1"});
    ASSERT_TRUE(one);
    EXPECT_TRUE(one->endpoints.empty());

    // A pool: its client describes every server (makeModelClient, nothing is contacted).
    Result<std::unique_ptr<agent::ModelClient>> client = makeModelClient(*two);
    ASSERT_TRUE(client && *client);
    EXPECT_EQ((*client)->describe(), "openai pool http://a/v1, http://b/v1 model=iris");
}

TEST(CliModelOptions, EndpointsFileErrorsNameTheFileAndLine) {
    Result<TemporaryFolder> folder = TemporaryFolder::create("iris-endpoints");
    ASSERT_TRUE(folder) << folder.status().message();
    const std::filesystem::path list = folder->path() / "endpoints.txt";
    const struct {
        std::string text;
        std::string error;
    } cases[] = {
        {"http://a/v1\n# ok\nlocalhost:8000\n",
         ":3: 'localhost:8000' is not an http:// or https:// base URL"},
        {"http://a/v1 http://b/v1\n", ":1: one base URL per line"},
        {"http://a/v1\nhttp://a/v1\n", ":2: http://a/v1 is listed twice"},
        {"# nothing\n\n", ": no endpoint listed"},
    };
    for (const auto& c : cases) {
        std::ofstream(list) << c.text;
        Result<ModelChoice> choice = choiceOf({"--endpoints-file", list.string()});
        ASSERT_FALSE(choice) << c.error;
        EXPECT_EQ(choice.status().message(), "--endpoints-file: " + list.string() + c.error);
    }
    Result<ModelChoice> missing =
        choiceOf({"--endpoints-file", (folder->path() / "none.txt").string()});
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.status().message().find("none.txt: cannot be read"), std::string::npos);
    Result<ModelChoice> both = choiceOf({"--model", "m.gguf", "--endpoints-file", list.string()});
    ASSERT_FALSE(both);
}

// --model NAME: a pulled model from the store (IRIS_MODELS_DIR), with its projector and the
// catalogue's image budget; a name not pulled says how to pull it.
TEST(CliModelOptions, APulledModelByNameBringsItsProjectorAndImageBudget) {
    Result<TemporaryFolder> folder = TemporaryFolder::create("iris-agent-setup");
    ASSERT_TRUE(folder);
    ::setenv("IRIS_MODELS_DIR", folder->path().c_str(), 1);
    Result<ModelChoice> missing = choiceOf({"--model", "ui-tars-1.5-7b"});
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.status().message().find("--model ui-tars-1.5-7b: no model 'ui-tars-1.5-7b'"),
              std::string::npos)
        << missing.status().message();
    EXPECT_NE(missing.status().message().find("iris models pull ui-tars-1.5-7b"), std::string::npos);

    const models::ModelStore store(folder->path());
    models::Manifest manifest;
    manifest.name = "ui-tars-1.5-7b";
    manifest.quant = "Q4_K_M";
    manifest.repo = "mradermacher/UI-TARS-1.5-7B-GGUF";
    manifest.model = {"m.gguf", std::string(64, 'a'), 1};
    manifest.mmproj = models::StoredFile{"mmproj.gguf", std::string(64, 'b'), 1};
    ASSERT_TRUE(store.writeManifest(manifest).isOk());
    std::filesystem::create_directories(folder->path() / "blobs");
    for (const char* sha : {"a", "b"})
        std::ofstream(store.blobPath(std::string(64, sha[0]))) << "x";

    Result<ModelChoice> pulled = choiceOf({"--model", "ui-tars-1.5-7b"});
    ASSERT_TRUE(pulled) << pulled.status().message();
    EXPECT_EQ(pulled->modelPath, store.blobPath(std::string(64, 'a')));
    EXPECT_EQ(pulled->mmprojPath, store.blobPath(std::string(64, 'b')));
    EXPECT_EQ(pulled->imageMaxPixels, 2116800);  // resources/models/catalogue.json
    EXPECT_EQ(pulled->chatTemplate, inference::ChatTemplateKind::Qwen2Vl);
    Result<ModelChoice> ownProjector =
        choiceOf({"--model", "ui-tars-1.5-7b:Q4_K_M", "--mmproj", "other.gguf"});
    ASSERT_TRUE(ownProjector) << ownProjector.status().message();
    EXPECT_EQ(ownProjector->mmprojPath, "other.gguf");
    ::unsetenv("IRIS_MODELS_DIR");
}

}  // namespace
}  // namespace iris::app
