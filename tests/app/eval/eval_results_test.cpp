#include "app/cli/eval/eval_results.h"

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/inference/models/scratch_dir.h"

namespace iris::app::eval {
namespace {

namespace fs = std::filesystem;
using inference::testing::ScratchDir;

TaskResult scored(std::string domain, std::string id, double score) {
    TaskResult r;
    r.domain = std::move(domain);
    r.id = std::move(id);
    r.file = r.domain + "/" + r.id + ".json";
    r.status = TaskStatus::Scored;
    r.score = score;
    return r;
}

TEST(EvalResults, TaskResultSurvivesJson) {
    TaskResult r = scored("web", "a", 0.5);
    r.loopEnd = "done";
    r.steps = 3;
    r.promptTokens = 1200;
    r.completionTokens = 80;
    r.stepLatencyMs = {10.5, 20, 30};
    r.error = "note";
    r.session = 7;
    r.resultDir = "tools/m/web/a";
    Result<TaskResult> back = taskResultFromJson(toJson(r), "t");
    ASSERT_TRUE(back) << back.status().message();
    EXPECT_EQ(back->file, r.file);
    EXPECT_EQ(back->status, TaskStatus::Scored);
    EXPECT_DOUBLE_EQ(*back->score, 0.5);
    EXPECT_EQ(back->steps, 3);
    EXPECT_EQ(back->promptTokens, 1200);
    EXPECT_EQ(back->stepLatencyMs, r.stepLatencyMs);
    EXPECT_EQ(back->session, 7);
    EXPECT_EQ(back->resultDir, r.resultDir);
}

TEST(EvalResults, BadFieldsAreNamed) {
    nlohmann::json j = toJson(scored("web", "a", 1));
    j["score"] = "high";
    Result<TaskResult> bad = taskResultFromJson(j, "results.json: tasks[2]");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.status().message(), "results.json: tasks[2].score: expected a number");
    j = toJson(scored("web", "a", 1));
    j["status"] = "great";
    bad = taskResultFromJson(j, "x");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.status().message().find("x.status: unknown task status 'great'"),
              std::string::npos);
}

TEST(EvalResults, PutKeepsOrderAndReplacesByFile) {
    RunResults run;
    run.put(scored("web", "b", 0));
    run.put(scored("forms", "z", 1));
    run.put(scored("web", "a", 1));
    run.put(scored("web", "b", 1));  // a rerun replaces
    ASSERT_EQ(run.tasks.size(), 3u);
    EXPECT_EQ(run.tasks[0].id, "z");
    EXPECT_EQ(run.tasks[1].id, "a");
    EXPECT_EQ(run.tasks[2].id, "b");
    EXPECT_DOUBLE_EQ(*run.tasks[2].score, 1.0);
}

TEST(EvalResults, SummaryGivesBothDenominators) {
    RunResults run;
    run.tasksTotal = 5;  // two tasks never ran
    run.put(scored("web", "a", 1.0));
    run.put(scored("web", "b", 0.5));
    TaskResult unsupported;
    unsupported.domain = "desktop";
    unsupported.id = "c";
    unsupported.file = "desktop/c.json";
    unsupported.status = TaskStatus::Unsupported;
    run.put(unsupported);
    const RunSummary s = summarize(run);
    EXPECT_EQ(s.tasks, 5);
    EXPECT_EQ(s.attempted, 2);
    EXPECT_EQ(s.unsupported, 1);
    EXPECT_DOUBLE_EQ(s.scoreSum, 1.5);
    EXPECT_DOUBLE_EQ(s.rateAttempted(), 1.5 / 2);
    EXPECT_DOUBLE_EQ(s.rateAll(), 1.5 / 5);
    ASSERT_EQ(s.domains.size(), 2u);
    EXPECT_EQ(s.domains[0].domain, "desktop");
    EXPECT_EQ(s.domains[0].attempted, 0);
    EXPECT_EQ(s.domains[1].tasks, 2);
    const std::string text = summaryText(run);
    EXPECT_NE(text.find("75.00% of 2 attempted"), std::string::npos) << text;
    EXPECT_NE(text.find("30.00% of all 5 tasks"), std::string::npos) << text;
}

TEST(EvalResults, RunResultsRoundTripThroughTheFolder) {
    const ScratchDir scratch("iris-eval-results-test-roundtrip");
    const fs::path dir = scratch.path();
    RunResults run;
    run.settings.model = "demonstration";
    run.settings.actionFormat = "pyautogui";
    run.settings.maxSteps = 15;
    run.tasksTotal = 2;
    run.put(scored("web", "a", 1.0));
    ASSERT_TRUE(saveRunResults(run, dir).isOk());
    EXPECT_FALSE(fs::exists(dir / "results.json.tmp"));
    Result<RunResults> back = loadRunResults(dir);
    ASSERT_TRUE(back) << back.status().message();
    EXPECT_EQ(back->settings.model, "demonstration");
    EXPECT_EQ(back->tasksTotal, 2);
    ASSERT_EQ(back->tasks.size(), 1u);
    EXPECT_DOUBLE_EQ(*back->tasks[0].score, 1.0);

    Result<RunResults> missing = loadRunResults(dir / "nothing");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.status().code(), StatusCode::NotFound);
    std::ofstream(dir / "results.json") << "{\"tasks\": [";
    Result<RunResults> broken = loadRunResults(dir);
    ASSERT_FALSE(broken);
    EXPECT_NE(broken.status().message().find("results.json: byte"), std::string::npos);
}

TEST(EvalResults, PathComponentsCannotEscape) {
    EXPECT_EQ(pathComponent("qwen2.5-vl-3b"), "qwen2.5-vl-3b");
    EXPECT_EQ(pathComponent("a/b\\c"), "a_b_c");
    EXPECT_EQ(pathComponent(".."), "_..");
    EXPECT_EQ(pathComponent(""), "_");
    EXPECT_EQ(taskResultDir("tools", "m", "web", "../x"), "tools/m/web/_.._x");
}

TEST(EvalResults, ResultTxtParsesAsOsworldDoes) {
    const ScratchDir scratch("iris-eval-results-test-resulttxt");
    const fs::path dir = scratch.path();
    EXPECT_FALSE(readResultTxt(dir));
    std::ofstream(dir / "result.txt") << "0.873\n";
    ASSERT_TRUE(readResultTxt(dir));
    EXPECT_DOUBLE_EQ(*readResultTxt(dir), 0.873);
    std::ofstream(dir / "result.txt") << "1.0 and more\n";
    EXPECT_FALSE(readResultTxt(dir));
    std::ofstream(dir / "result.txt") << "";
    EXPECT_FALSE(readResultTxt(dir));
}

TEST(EvalResults, ResumeRedoesExactlyTheTasksWithoutAResult) {
    const ScratchDir scratch("iris-eval-results-test-resume");
    const fs::path out = scratch.path();
    const std::vector<std::string> dirs = {"f/m/d/done", "f/m/d/garbled", "f/m/d/never", "",
                                           "f/m/d/zero"};
    fs::create_directories(out / dirs[0]);
    std::ofstream(out / dirs[0] / "result.txt") << "1.0\n";
    fs::create_directories(out / dirs[1]);
    std::ofstream(out / dirs[1] / "result.txt") << "oops\n";
    std::ofstream(out / dirs[1] / "traj.jsonl") << "{}\n";
    fs::create_directories(out / dirs[4]);
    std::ofstream(out / dirs[4] / "result.txt") << "0\n";
    const std::vector<std::size_t> todo =
        unfinishedTasks(out, dirs.size(), [&](std::size_t i) { return dirs[i]; });
    EXPECT_EQ(todo, (std::vector<std::size_t>{1, 2, 3}));
}

// The servers that answered a task (several --endpoint), as results.json keeps them.
TEST(EvalResults, TheEndpointsThatAnsweredSurviveJson) {
    TaskResult r = scored("web", "a", 1.0);
    r.endpoint = "http://10.0.0.2:8000/v1, http://10.0.0.3:8000/v1";
    EXPECT_EQ(toJson(r)["endpoint"], r.endpoint);
    Result<TaskResult> back = taskResultFromJson(toJson(r), "t");
    ASSERT_TRUE(back) << back.status().message();
    EXPECT_EQ(back->endpoint, r.endpoint);
}

}  // namespace
}  // namespace iris::app::eval
