// `iris eval run --model F --parallel N` in process, on a tiny random Qwen2-VL model with a tiny
// projector and three browser tasks of one step each: every task asks the one engine the run
// loaded for N sequences at once. The test holds three engines of the same files beforehand,
// with pools of 1, 2 and 3 contexts; the registry hands a run that needs 3 the third, so the
// requests it counts, and none on the other two, show that all tasks went to one scheduler and
// that the run asked for a pool of N.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "app/cli/eval/eval_results.h"
#include "app/cli/eval/eval_runner.h"
#include "app/session/model_choice.h"
#include "tests/inference/models/scratch_dir.h"
#include "tests/inference/models/tiny_model.h"
#include "tests/inference/vision/tiny_mmproj.h"

namespace iris::app::eval {
namespace {

namespace fs = std::filesystem;

constexpr int kTasks = 3;

// A task on a one-line page, small enough that its screenshot is 12 image tokens.
std::string taskJson(int i) {
    return R"({"id": "blank-)" + std::to_string(i) + R"(", "instruction": "Look at the page.",
  "config": [], "evaluator": {"func": "infeasible"},
  "iris": {"project": "site", "viewport": [112, 84], "action_format": "pyautogui",
           "max_steps": 1}})";
}

class EvalParallelModelTest : public ::testing::Test {
protected:
    void SetUp() override {
        inference::testing::TinyModelSpec spec;
        spec.arch = "qwen2vl";
        spec.vocab = 288;
        spec.withTokenizer = true;
        spec.withVisionTokens = true;
        spec.seed = 5;
        m_choice.backend = ModelChoice::Backend::LocalEngine;
        m_choice.modelPath =
            m_scratch.write("tiny-vl.gguf", inference::testing::makeTinyModel(spec));
        inference::testing::TinyMmprojOptions projector;
        projector.projection = 64;
        m_choice.mmprojPath =
            m_scratch.write("mmproj.gguf", inference::testing::makeTinyMmproj(projector).bytes);
        m_choice.threads = 2;
        m_choice.contextSize = 8192;
        fs::create_directories(m_scratch.path() / "tasks" / "site");
        std::ofstream(m_scratch.path() / "tasks" / "site" / "index.html") << "<p>Hello</p>\n";
        for (int i = 0; i < kTasks; ++i)
            std::ofstream(m_scratch.path() / "tasks" / ("blank-" + std::to_string(i) + ".json"))
                << taskJson(i);
    }

    std::shared_ptr<inference::Scheduler> engineFor(int parallel) {
        ModelChoice choice = m_choice;
        choice.parallel = parallel;
        Result<std::shared_ptr<inference::Scheduler>> s = sharedScheduler(choice);
        EXPECT_TRUE(s) << s.status().message();
        return s ? *s : nullptr;
    }

    inference::testing::ScratchDir m_scratch{"iris_eval_parallel"};
    ModelChoice m_choice;
};

TEST_F(EvalParallelModelTest, AllTasksRunOnOneEngineWithAPoolForEachTaskAtOnce) {
    // Held in this order, so that the registry would offer the smaller ones first.
    const auto one = engineFor(1);
    const auto two = engineFor(2);
    const auto three = engineFor(kTasks);
    ASSERT_TRUE(one && two && three);
    ASSERT_TRUE(one != two && two != three);

    EvalRunOptions options;
    options.tasks = m_scratch.path() / "tasks";
    options.out = m_scratch.path() / "out";
    options.answers = AnswerSource::Model;
    options.model = m_choice;  // parallel 1: the run sets it
    options.modelName = "tiny-vl";
    options.parallel = kTasks;
    options.maxSteps = 1;
    std::ostringstream out, err;
    EXPECT_EQ(runEvaluation(options, out, err, nullptr), 0) << out.str() << err.str();

    Result<RunResults> results = loadRunResults(options.out);
    ASSERT_TRUE(results) << results.status().message();
    ASSERT_EQ(results->tasks.size(), std::size_t(kTasks)) << out.str() << err.str();
    std::int64_t modelCalls = 0;
    for (const TaskResult& task : results->tasks) {
        EXPECT_EQ(task.steps, 1) << task.file << ": " << task.error;
        modelCalls += task.steps;
    }
    EXPECT_EQ(results->settings.modelDescription, "local tiny-vl.gguf");
    EXPECT_EQ(three->stats().requests, modelCalls);
    EXPECT_EQ(three->stats().finished, modelCalls);
    EXPECT_EQ(one->stats().requests, 0);
    EXPECT_EQ(two->stats().requests, 0);
}

}  // namespace
}  // namespace iris::app::eval
