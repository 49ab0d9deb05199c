// `iris models` and `--model NAME` as a person runs them: the real `iris` binary against FakeHub
// (tests/app/models/fake_hub.h) on loopback, with a tiny Qwen2-VL model and projector, in a store
// of the test's own (IRIS_MODELS_DIR).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/temporary_folder.h"
#include "tests/app/models/fake_hub.h"
#include "tests/inference/models/tiny_model.h"
#include "tests/inference/vision/tiny_mmproj.h"

namespace iris::app::models {
namespace {
namespace fs = std::filesystem;
using testing::FakeHub;

struct Ran {
    int status = -1;
    std::string output;  // stdout and stderr
};

Ran iris(const std::string& arguments) {
    Ran run;
    const std::string command = std::string("'") + IRIS_BINARY + "' " + arguments + " 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return run;
    char buffer[4096];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0)
        run.output.append(buffer, n);
    const int status = ::pclose(pipe);
    run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return run;
}

std::string asString(const std::vector<std::byte>& bytes) {
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

class ModelsCli : public ::testing::Test {
protected:
    void SetUp() override {
        Result<TemporaryFolder> folder = TemporaryFolder::create("iris-models-cli");
        ASSERT_TRUE(folder);
        m_folder.emplace(std::move(*folder));
        inference::testing::TinyModelSpec spec;
        spec.arch = "qwen2vl";
        spec.vocab = 288;
        spec.withTokenizer = true;
        spec.withVisionTokens = true;
        spec.seed = 5;
        inference::testing::TinyMmprojOptions projector;
        projector.projection = 64;
        hub.files = {
            {"tiny-vl-Q8_0.gguf", asString(inference::testing::makeTinyModel(spec)), ""},
            {"mmproj-tiny-vl-f16.gguf",
             asString(inference::testing::makeTinyMmproj(projector).bytes), ""},
        };
        ::setenv("IRIS_MODELS_DIR", (m_folder->path() / "store").c_str(), 1);
        ::setenv("HF_TOKEN", "hf_secret_never_shown", 1);
        ::setenv("IRIS_HF_ENDPOINT", hub.endpoint().c_str(), 1);
    }
    void TearDown() override {
        ::unsetenv("IRIS_MODELS_DIR");
        ::unsetenv("HF_TOKEN");
        ::unsetenv("IRIS_HF_ENDPOINT");
    }

    FakeHub hub;
    std::optional<TemporaryFolder> m_folder;
};

TEST_F(ModelsCli, PullListInfoVerifyGenerateAndRemove) {
    const Ran pull = iris("models pull test/tiny-GGUF");
    ASSERT_EQ(pull.status, 0) << pull.output;
    EXPECT_NE(pull.output.find("pulled test/tiny-GGUF:Q8_0 (tiny-vl-Q8_0.gguf"), std::string::npos)
        << pull.output;
    EXPECT_EQ(pull.output.find("hf_secret_never_shown"), std::string::npos);
    // Not a terminal: whole progress lines, the last one at 100%.
    EXPECT_NE(pull.output.find(" 100%"), std::string::npos) << pull.output;
    EXPECT_EQ(pull.output.find('\r'), std::string::npos);
    EXPECT_EQ(hub.hubAuthorizations().front(), "Bearer hf_secret_never_shown");
    EXPECT_TRUE(hub.cdnAuthorizations().empty());

    const Ran list = iris("models list");
    ASSERT_EQ(list.status, 0) << list.output;
    EXPECT_NE(list.output.find("test/tiny-GGUF  Q8_0"), std::string::npos) << list.output;
    EXPECT_NE(list.output.find("yes     never"), std::string::npos) << list.output;

    const Ran info = iris("models info test/tiny-GGUF");
    ASSERT_EQ(info.status, 0) << info.output;
    EXPECT_NE(info.output.find("architecture: qwen2vl"), std::string::npos) << info.output;
    EXPECT_NE(info.output.find("projector:    "), std::string::npos) << info.output;
    EXPECT_NE(info.output.find("64 wide"), std::string::npos) << info.output;

    // The pulled name runs offline: the hub is not asked again.
    const std::uint64_t served = hub.bytesServed;
    const Ran generate = iris("generate --model test/tiny-GGUF --prompt hi -n 2 --threads 1");
    ASSERT_EQ(generate.status, 0) << generate.output;
    EXPECT_EQ(hub.bytesServed, served);
    EXPECT_EQ(iris("models list").output.find("never"), std::string::npos);  // last used now

    ASSERT_EQ(iris("models verify").status, 0);
    // A blob changed on disk: verify says which.
    for (const auto& entry : fs::directory_iterator(m_folder->path() / "store" / "blobs")) {
        if (entry.path().extension().empty()) {
            std::fstream(entry.path(), std::ios::in | std::ios::out | std::ios::binary)
                .write("XXXX", 4);
            break;
        }
    }
    const Ran verify = iris("models verify test/tiny-GGUF");
    EXPECT_EQ(verify.status, 1) << verify.output;
    EXPECT_NE(verify.output.find("BAD: expected SHA-256"), std::string::npos) << verify.output;

    const Ran rm = iris("models rm test/tiny-GGUF");
    ASSERT_EQ(rm.status, 0) << rm.output;
    EXPECT_NE(iris("models list").output.find("no models in"), std::string::npos);
    const Ran missing = iris("generate --model test/tiny-GGUF --prompt hi");
    EXPECT_NE(missing.status, 0);
    EXPECT_NE(missing.output.find("iris models pull test/tiny-GGUF"), std::string::npos)
        << missing.output;
}

// Ctrl-C (SIGINT) stops a pull with the partial file kept; the same command resumes it.
TEST_F(ModelsCli, CtrlCLeavesAPartialFileThatTheNextPullResumes) {
    hub.sleepPerChunkUs = 10000;
    const fs::path log = m_folder->path() / "pull.log";
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        ::execl(IRIS_BINARY, IRIS_BINARY, "models", "pull", "test/tiny-GGUF", "--connections", "1",
                static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ASSERT_GT(pid, 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (hub.bytesServed < 20000 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ::kill(pid, SIGINT);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 1);
    std::ifstream in(log);
    const std::string output((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
    EXPECT_NE(output.find("stopped; run the same command again to resume"), std::string::npos)
        << output;
    bool partial = false;
    for (const auto& entry : fs::directory_iterator(m_folder->path() / "store" / "blobs"))
        partial = partial || entry.path().extension() == ".part";
    EXPECT_TRUE(partial);

    hub.sleepPerChunkUs = 0;
    const Ran again = iris("models pull test/tiny-GGUF");
    ASSERT_EQ(again.status, 0) << again.output;
    EXPECT_NE(again.output.find("(resumed at "), std::string::npos) << again.output;
}

TEST_F(ModelsCli, APullOfAMissingRepositoryNamesItAndNotTheToken) {
    const Ran pull = iris("models pull nobody/nothing-GGUF:Q4_K_M");
    EXPECT_EQ(pull.status, 1);
    EXPECT_NE(pull.output.find("nobody/nothing-GGUF: no such repository"), std::string::npos)
        << pull.output;
    EXPECT_EQ(pull.output.find("hf_secret_never_shown"), std::string::npos);
    const Ran file = iris("models pull test/tiny-GGUF/absent-Q4_K_M.gguf");
    EXPECT_EQ(file.status, 1);
    EXPECT_NE(file.output.find("test/tiny-GGUF: no file absent-Q4_K_M.gguf"), std::string::npos)
        << file.output;
}

}  // namespace
}  // namespace iris::app::models
