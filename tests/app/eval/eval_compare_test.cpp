#include "app/cli/eval/eval_compare.h"

#include <fstream>

#include <gtest/gtest.h>

#include "tests/inference/models/scratch_dir.h"

namespace iris::app::eval {
namespace {

namespace fs = std::filesystem;

int count(const std::string& text, const std::string& what) {
    int n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

// A results folder with one scored attempt per task, each with a one-step trajectory and its
// screenshot (an empty file: the page only links it).
RunResults writeRun(const fs::path& dir, const std::string& model,
                    const std::vector<std::pair<std::string, double>>& scores) {
    RunResults run;
    run.settings.model = model;
    run.settings.actionFormat = "pyautogui";
    run.tasksTotal = int(scores.size());
    for (const auto& [id, score] : scores) {
        TaskResult r;
        r.domain = "web";
        r.id = id;
        r.file = "web/" + id + ".json";
        r.status = TaskStatus::Scored;
        r.score = score;
        r.steps = id.size() > 1 ? 4 : 2;
        r.promptTokens = 1000;
        r.stepLatencyMs = {100, 200};
        r.resultDir = taskResultDir("pyautogui", model, "web", id);
        const fs::path taskDir = dir / r.resultDir;
        fs::create_directories(taskDir);
        const std::string shot = "step_1_20260101@000000000000.png";
        std::ofstream(taskDir / "traj.jsonl")
            << R"json({"step_num": 1, "action": "click(1, 2)", "screenshot_file": ")json" << shot
            << "\"}\n";
        std::ofstream(taskDir / shot) << "";
        std::ofstream(taskDir / "result.txt") << score << "\n";
        run.put(std::move(r));
    }
    EXPECT_TRUE(saveRunResults(run, dir).isOk());
    return run;
}

TEST(EvalCompare, FindsFlipsPairsTasksAndListsTheUnpaired) {
    const inference::testing::ScratchDir scratch("iris-eval-compare-test");
    const fs::path dirA = scratch.path() / "a", dirB = scratch.path() / "b";
    // a: 1 -> 1 (same), b: 0 -> 1 (fixed), c: 1 -> 0 (broken), d: 0.5 -> 1 (fixed: a partial
    // score is no success); "onlyA" and "onlyB" are in one folder each.
    writeRun(dirA, "q8", {{"a", 1}, {"b", 0}, {"c", 1}, {"d", 0.5}, {"onlyA", 1}});
    writeRun(dirB, "q4", {{"a", 1}, {"b", 1}, {"c", 0}, {"d", 1}, {"onlyB", 0}});
    const fs::path page = scratch.path() / "compare.html";
    Result<std::string> text = writeComparison(dirA, dirB, page);
    ASSERT_TRUE(text) << text.status().message();

    Result<RunResults> a = loadRunResults(dirA);
    Result<RunResults> b = loadRunResults(dirB);
    ASSERT_TRUE(a && b);
    const Comparison c = compareRuns(*a, *b);
    EXPECT_EQ(c.fixed, 2);
    EXPECT_EQ(c.broken, 1);
    EXPECT_EQ(c.onlyA, 1);
    EXPECT_EQ(c.onlyB, 1);
    ASSERT_EQ(c.tasks.size(), 6u);
    EXPECT_EQ(c.tasks[1].id, "b");
    EXPECT_EQ(c.tasks[1].change, TaskChange::Fixed);
    EXPECT_EQ(c.tasks[2].change, TaskChange::Broken);
    EXPECT_EQ(c.tasks[4].change, TaskChange::OnlyA);
    // Paired over a, b, c, d: d = 0, 1, -1, 0.5 (eval_stats_test.cpp works the interval out).
    EXPECT_EQ(c.difference.pairs, 4);
    EXPECT_DOUBLE_EQ(c.difference.mean, 0.125);
    EXPECT_NEAR(c.difference.normal.low, -0.711819, 1e-6);
    EXPECT_NEAR(c.difference.normal.high, 0.961819, 1e-6);

    EXPECT_NE(text->find("B - A: +12.50 points, 95% CI -71.18 to +96.18 (paired normal)"),
              std::string::npos)
        << *text;
    EXPECT_NE(text->find("2 fixed, 1 broken"), std::string::npos) << *text;
    EXPECT_NE(text->find("  only_a web/onlyA.json\n"), std::string::npos) << *text;
    EXPECT_NE(text->find("  only_b web/onlyB.json\n"), std::string::npos) << *text;
    EXPECT_NE(text->find("  broken web/c.json\n"), std::string::npos) << *text;

    std::ifstream in(page);
    const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Three flipped tasks, each with both final screenshots linked relative to the page.
    EXPECT_EQ(count(html, "class=\"flip\""), 3);
    EXPECT_NE(html.find("src=\"a/pyautogui/q8/web/b/step_1_20260101@000000000000.png\""),
              std::string::npos);
    EXPECT_NE(html.find("src=\"b/pyautogui/q4/web/b/step_1_20260101@000000000000.png\""),
              std::string::npos);
    EXPECT_NE(html.find("href=\"b/pyautogui/q4/web/d/traj.jsonl\""), std::string::npos);
    EXPECT_EQ(count(html, "<svg "), 3);
    EXPECT_NE(html.find("<td>only_a</td>"), std::string::npos);
    EXPECT_NE(html.find("<td>only_b</td>"), std::string::npos);
    EXPECT_EQ(html.find("<script"), std::string::npos);
}

TEST(EvalCompare, RepeatedAttemptsPairByTheirMeanScore) {
    // A: task x succeeds in 1 of 3 attempts (mean 1/3, a failure); B: in 2 of 3 (a success).
    RunResults a, b;
    for (int i = 0; i < 3; ++i) {
        TaskResult r;
        r.domain = "web";
        r.id = "x";
        r.file = "web/x.json";
        r.status = TaskStatus::Scored;
        r.attempt = i;
        r.score = i == 0 ? 1.0 : 0.0;
        a.put(r);
        r.score = i == 0 ? 0.0 : 1.0;
        b.put(r);
    }
    const Comparison c = compareRuns(a, b);
    ASSERT_EQ(c.tasks.size(), 1u);
    EXPECT_EQ(c.tasks[0].change, TaskChange::Fixed);
    EXPECT_EQ(c.tasks[0].a->scored, 3);
    EXPECT_NEAR(c.difference.mean, 1.0 / 3, 1e-12);
    EXPECT_EQ(c.difference.stdError, 0);  // one pair: no spread to estimate
}

}  // namespace
}  // namespace iris::app::eval
