// Config steps on their own: an execute step's `until` polls the command again until its
// condition holds (OSWorld's setup controller), and without `until` it runs once.
#include "app/cli/eval/config_steps.h"

#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/inference/models/scratch_dir.h"

namespace iris::app::eval {
namespace {

using inference::testing::ScratchDir;
namespace ev = agent::eval;

// A shell command that counts its runs in FOLDER/count and prints the new count.
nlohmann::json countingStep(const std::filesystem::path& folder, const nlohmann::json& until) {
    const std::string file = (folder / "count").string();
    nlohmann::json step = {
        {"type", "execute"},
        {"parameters",
         {{"command", "n=$(cat '" + file + "' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '" +
                          file + "'; echo run $n; echo err $n >&2; exit $n"},
          {"shell", true},
          {"stdout", "out.txt"}}}};
    if (!until.is_null()) step["parameters"]["until"] = until;
    return step;
}

int runs(const std::filesystem::path& folder) {
    int n = 0;
    std::ifstream(folder / "count") >> n;
    return n;
}

Status runOne(const nlohmann::json& json, const std::filesystem::path& folder) {
    Result<ev::ConfigStep> step = ev::parseConfigStep(json, "config[0]");
    EXPECT_TRUE(step) << step.status().message();
    if (!step) return step.status();
    StepTarget target;
    target.commands = true;
    target.cacheDir = folder / "cache";
    return runConfigSteps({*step}, {}, target);
}

TEST(ConfigSteps, ExecuteWithoutUntilRunsOnce) {
    ScratchDir dir("iris-config-steps");
    ASSERT_TRUE(runOne(countingStep(dir.path(), nullptr), dir.path()).isOk());
    EXPECT_EQ(runs(dir.path()), 1);
}

TEST(ConfigSteps, ExecuteUntilPollsUntilStdoutStderrOrReturnCodeMatch) {
    const nlohmann::json conditions[] = {{{"stdout", "run 3"}},
                                         {{"stderr", "err 2"}},
                                         {{"returncode", 4}},
                                         {{"stdout", "never"}, {"returncode", 2}}};
    const int expected[] = {3, 2, 4, 2};
    for (int i = 0; i < 4; ++i) {
        ScratchDir dir("iris-config-steps");
        const Status status = runOne(countingStep(dir.path(), conditions[i]), dir.path());
        EXPECT_TRUE(status.isOk()) << status.message();
        EXPECT_EQ(runs(dir.path()), expected[i]) << conditions[i].dump();
        // The stdout file holds the last run's output.
        std::string out;
        std::getline(std::ifstream(dir.path() / "cache" / "out.txt"), out);
        EXPECT_EQ(out, "run " + std::to_string(expected[i])) << conditions[i].dump();
    }
}

TEST(ConfigSteps, ExecuteUntilStopsOnAStopRequest) {
    ScratchDir dir("iris-config-steps");
    Result<ev::ConfigStep> step =
        ev::parseConfigStep(countingStep(dir.path(), {{"stdout", "never"}}), "config[0]");
    ASSERT_TRUE(step);
    std::atomic<bool> stop{false};
    StepTarget target;
    target.commands = true;
    target.cacheDir = dir.path() / "cache";
    target.stop = &stop;
    std::thread stopper([&] {
        while (runs(dir.path()) < 2)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        stop = true;
    });
    const Status status = runConfigSteps({*step}, {}, target);
    stopper.join();
    EXPECT_EQ(status.code(), StatusCode::Cancelled) << status.message();
    EXPECT_NE(status.message().find("config[0]"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace iris::app::eval
