#include "app/cli/eval/eval_stats.h"

#include <cmath>
#include <fstream>

#include <gtest/gtest.h>

#include "app/cli/eval/task_plan.h"
#include "tests/inference/models/scratch_dir.h"

namespace iris::app::eval {
namespace {

TaskResult attempt(const std::string& id, int index, std::optional<double> score) {
    TaskResult r;
    r.domain = "web";
    r.id = id;
    r.file = "web/" + id + ".json";
    r.attempt = index;
    r.status = score ? TaskStatus::Scored : TaskStatus::Error;
    r.score = score;
    return r;
}

// Four tasks, three attempts each, and a fifth whose only attempt errored:
//   a: 1 1 1    b: 1 0 1    c: 0 0.5 0 (a partial score is no success)    d: 0 1 1    e: error
RunResults threeRuns() {
    RunResults run;
    run.settings.repeat = 3;
    run.tasksTotal = 5;
    const std::vector<std::pair<std::string, std::vector<double>>> scores = {
        {"a", {1, 1, 1}}, {"b", {1, 0, 1}}, {"c", {0, 0.5, 0}}, {"d", {0, 1, 1}}};
    for (const auto& [id, values] : scores)
        for (int i = 0; i < 3; ++i)
            run.put(attempt(id, i, values[std::size_t(i)]));
    run.put(attempt("e", 0, std::nullopt));
    return run;
}

TEST(EvalStats, WilsonMatchesHandComputedIntervals) {
    // 3 of 10, z = 1.959964, z^2 = 3.841459: p = 0.3, denominator 1 + z^2/n = 1.3841459,
    // centre (0.3 + z^2/20) / 1.3841459 = 0.355507, half-width
    // z / 1.3841459 * sqrt(0.3 * 0.7 / 10 + z^2 / 400) = 1.416015 * 0.174939 = 0.247716:
    // [0.1078, 0.6032].
    Interval i = wilsonInterval(3, 10);
    EXPECT_NEAR(i.low, 0.107791, 1e-6);
    EXPECT_NEAR(i.high, 0.603222, 1e-6);
    // 0 of 20: [0, z^2 / (n + z^2)] = [0, 3.841459 / 23.841459].
    i = wilsonInterval(0, 20);
    EXPECT_DOUBLE_EQ(i.low, 0);
    EXPECT_NEAR(i.high, 3.841459 / 23.841459, 1e-6);
    // 20 of 20: [n / (n + z^2), 1].
    i = wilsonInterval(20, 20);
    EXPECT_NEAR(i.low, 20 / 23.841459, 1e-6);
    EXPECT_DOUBLE_EQ(i.high, 1);
    // 81 of 263: [0.2553, 0.3662] (the same formula, four places).
    i = wilsonInterval(81, 263);
    EXPECT_NEAR(i.low, 0.2553, 5e-5);
    EXPECT_NEAR(i.high, 0.3662, 5e-5);
    i = wilsonInterval(0, 0);
    EXPECT_EQ(i.low, 0);
    EXPECT_EQ(i.high, 0);
}

TEST(EvalStats, PassAtKAndPassHatKForSmallCounts) {
    // n = 5, c = 2. C(5,1) = 5, C(5,2) = 10, C(5,3) = 10; C(3,1) = 3, C(3,2) = 3, C(3,3) = 1.
    EXPECT_NEAR(passAtK(5, 2, 1), 1 - 3.0 / 5, 1e-12);   // 0.4
    EXPECT_NEAR(passAtK(5, 2, 2), 1 - 3.0 / 10, 1e-12);  // 0.7
    EXPECT_NEAR(passAtK(5, 2, 3), 1 - 1.0 / 10, 1e-12);  // 0.9
    EXPECT_NEAR(passAtK(5, 2, 4), 1.0, 1e-12);           // C(3,4) = 0
    EXPECT_NEAR(passHatK(5, 2, 1), 2.0 / 5, 1e-12);
    EXPECT_NEAR(passHatK(5, 2, 2), 1.0 / 10, 1e-12);  // C(2,2) / C(5,2)
    EXPECT_EQ(passHatK(5, 2, 3), 0);                  // C(2,3) = 0
    EXPECT_NEAR(passHatK(5, 4, 2), 6.0 / 10, 1e-12);  // C(4,2) / C(5,2)
    EXPECT_EQ(passAtK(3, 0, 3), 0);
    EXPECT_EQ(passHatK(3, 3, 3), 1);
    // Binomials far beyond 64 bits: C(100,50) / C(200,50) = 2.2229697512e-19 (exact rational,
    // evaluated with arbitrary-precision integers).
    EXPECT_NEAR(passHatK(200, 100, 50) / 2.2229697512078617e-19, 1, 1e-9);
    EXPECT_NEAR(passAtK(200, 100, 50), 1, 1e-12);
    // Where the binomials overflow a double (C(2000,1000) ~ 2e600): against log-gamma,
    // log C(n,k) = lgamma(n+1) - lgamma(k+1) - lgamma(n-k+1).
    auto logChoose = [](long double n, long double k) {
        return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1);
    };
    const long double expected = std::exp(logChoose(1900, 1000) - logChoose(2000, 1000));
    EXPECT_GT(expected, 0);
    EXPECT_NEAR(passHatK(2000, 1900, 1000) / double(expected), 1, 1e-6);
}

TEST(EvalStats, RepeatStatsOverThreeRuns) {
    const RepeatStats s = repeatStats(threeRuns());
    EXPECT_EQ(s.repeat, 3);
    ASSERT_EQ(s.tasks.size(), 5u);
    EXPECT_EQ(s.tasks[2].id, "c");
    EXPECT_EQ(s.tasks[2].successes, 0);
    EXPECT_DOUBLE_EQ(s.tasks[2].meanScore(), 0.5 / 3);
    EXPECT_EQ(s.tasks[4].scored, 0);
    // 3 + 2 + 0 + 2 = 7 successes of 12 scored attempts; Wilson for 7/12 computed as above:
    // p = 0.583333, denominator 1.320122, centre 0.563127, half-width 0.243614.
    EXPECT_EQ(s.successes, 7);
    EXPECT_EQ(s.scored, 12);
    EXPECT_DOUBLE_EQ(s.rate, 7.0 / 12);
    EXPECT_NEAR(s.wilson.low, 0.319511, 1e-6);
    EXPECT_NEAR(s.wilson.high, 0.806740, 1e-6);
    ASSERT_EQ(s.passK.size(), 3u);
    // pass@1 = mean(c/n) = (1 + 2/3 + 0 + 2/3) / 4; pass@2: 1, 1 - C(1,2)/C(3,2) = 1, 0, 1;
    // pass^2: 1, C(2,2)/C(3,2) = 1/3, 0, 1/3; pass^3: 1, 0, 0, 0. Task e has no scored attempt.
    EXPECT_NEAR(s.passK[0].passAt, 7.0 / 12, 1e-12);
    EXPECT_NEAR(s.passK[0].passHat, 7.0 / 12, 1e-12);
    EXPECT_NEAR(s.passK[1].passAt, 3.0 / 4, 1e-12);
    EXPECT_NEAR(s.passK[1].passHat, 5.0 / 12, 1e-12);
    EXPECT_NEAR(s.passK[2].passAt, 3.0 / 4, 1e-12);
    EXPECT_NEAR(s.passK[2].passHat, 1.0 / 4, 1e-12);
    EXPECT_EQ(s.passK[2].tasks, 4);
    // Runs: 0: a b = 2/4, 1: a d = 2/4, 2: a b d = 3/4. Mean 7/12, deviations -1/12, -1/12,
    // 2/12: variance (1 + 1 + 4) / 144 / 2 = 1/48.
    ASSERT_EQ(s.runs.size(), 3u);
    EXPECT_DOUBLE_EQ(s.runs[0].rate(), 0.5);
    EXPECT_DOUBLE_EQ(s.runs[2].rate(), 0.75);
    EXPECT_NEAR(s.runVariance, 1.0 / 48, 1e-12);
    EXPECT_NEAR(s.runStdDev, std::sqrt(1.0 / 48), 1e-12);
}

TEST(EvalStats, BootstrapIsDeterministicAndBracketsTheEstimate) {
    const RunResults run = threeRuns();
    const RepeatStats first = repeatStats(run, 7);
    const RepeatStats again = repeatStats(run, 7);
    EXPECT_EQ(first.bootstrap.low, again.bootstrap.low);
    EXPECT_EQ(first.bootstrap.high, again.bootstrap.high);
    EXPECT_LE(first.bootstrap.low, first.rate);
    EXPECT_GE(first.bootstrap.high, first.rate);
    EXPECT_LT(first.bootstrap.low, first.bootstrap.high);
    // Resampled task sums are k/12 for whole k: every quantile lies in [0, 1].
    EXPECT_GE(first.bootstrap.low, 0);
    EXPECT_LE(first.bootstrap.high, 1);
    // Units that all have the same ratio leave no spread.
    const Interval flat = bootstrapRatio({{1, 2}, {2, 4}, {3, 6}}, 3, 500);
    EXPECT_DOUBLE_EQ(flat.low, 0.5);
    EXPECT_DOUBLE_EQ(flat.high, 0.5);
    // A single unit: the statistic is that unit's ratio every time.
    const Interval one = bootstrapRatio({{1, 4}}, 3, 50);
    EXPECT_DOUBLE_EQ(one.low, 0.25);
    EXPECT_DOUBLE_EQ(one.high, 0.25);
}

TEST(EvalStats, VarianceUsesTheSampleDenominator) {
    EXPECT_DOUBLE_EQ(sampleVariance({}), 0);
    EXPECT_DOUBLE_EQ(sampleVariance({0.4}), 0);
    // mean 0.75, squares 0.0625 + 0 + 0.0625, over n - 1 = 2.
    EXPECT_DOUBLE_EQ(sampleVariance({0.5, 0.75, 1.0}), 0.0625);
}

TEST(EvalStats, PairedDifferenceMatchesHandComputedValues) {
    // d = B - A = 0, 1, -1, 0.5: mean 0.125; squared deviations 0.015625 + 0.765625 +
    // 1.265625 + 0.140625 = 2.1875, / 3 = 0.729167, sd 0.853913, se = sd / 2 = 0.426956;
    // 0.125 -+ 1.959964 * 0.426956.
    const PairedDifference d = pairedDifference({1, 0, 1, 0.5}, {1, 1, 0, 1}, 11, 1000);
    EXPECT_EQ(d.pairs, 4);
    EXPECT_DOUBLE_EQ(d.meanA, 0.625);
    EXPECT_DOUBLE_EQ(d.meanB, 0.75);
    EXPECT_DOUBLE_EQ(d.mean, 0.125);
    EXPECT_NEAR(d.stdError, 0.426956, 1e-6);
    EXPECT_NEAR(d.normal.low, -0.711819, 1e-6);
    EXPECT_NEAR(d.normal.high, 0.961819, 1e-6);
    EXPECT_LE(d.bootstrap.low, d.mean);
    EXPECT_GE(d.bootstrap.high, d.mean);
    // Resampled means of four values from {-1, 0, 0.5, 1} lie in [-1, 1].
    EXPECT_GE(d.bootstrap.low, -1);
    EXPECT_LE(d.bootstrap.high, 1);
}

TEST(EvalStats, SummaryTextShowsRepeatsOnlyWhenThereAreSome) {
    const std::string text = summaryText(threeRuns());
    EXPECT_NE(text.find("of all 15 attempts (5 tasks x 3)"), std::string::npos) << text;
    EXPECT_NE(text.find("7/12 scored attempts = 58.33%, 95% CI 31.95%-80.67% (Wilson)"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("pass@k: 58.33% 75.00% 75.00%"), std::string::npos) << text;
    EXPECT_NE(text.find("pass^k: 58.33% 41.67% 25.00%"), std::string::npos) << text;
    EXPECT_NE(text.find("tasks by successes (0..3 of 3): 1 0 2 1"), std::string::npos) << text;
    EXPECT_NE(text.find("runs: 50.00% 50.00% 75.00%"), std::string::npos) << text;

    // results.json keeps the task count (not the entries: 13 here) and each attempt.
    const inference::testing::ScratchDir scratch("iris-eval-stats-test");
    ASSERT_TRUE(saveRunResults(threeRuns(), scratch.path()).isOk());
    Result<RunResults> back = loadRunResults(scratch.path());
    ASSERT_TRUE(back) << back.status().message();
    EXPECT_EQ(back->tasksTotal, 5);
    EXPECT_EQ(back->settings.repeat, 3);
    ASSERT_TRUE(back->find("web/b.json", 1));
    EXPECT_EQ(*back->find("web/b.json", 1)->score, 0);
    EXPECT_EQ(summaryText(*back), text);

    RunResults single;
    single.tasksTotal = 1;
    single.put(attempt("a", 0, 1.0));
    const std::string one = summaryText(single);
    EXPECT_NE(one.find("of all 1 tasks\n"), std::string::npos) << one;
    EXPECT_NE(one.find("1/1 scored attempts = 100.00%"), std::string::npos) << one;
    EXPECT_EQ(one.find("pass@k"), std::string::npos) << one;
    EXPECT_EQ(one.find("bootstrap"), std::string::npos) << one;
}

TEST(EvalStats, ReportSectionShowsRepeatsOnlyWhenThereAreSome) {
    const std::string html = successRateHtml(repeatStats(threeRuns()));
    EXPECT_NE(html.find("<h2>Repeated runs (3 attempts per task)</h2>"), std::string::npos);
    EXPECT_NE(html.find("7 / 12; 95% CI 31.95% &ndash; 80.67% (Wilson)"), std::string::npos)
        << html;
    // pass@2 and pass^2 (worked out in RepeatStatsOverThreeRuns), and task b's 2 of 3.
    EXPECT_NE(html.find("<td class=\"num\">2</td><td class=\"num\">75.00%</td>"
                        "<td class=\"num\">41.67%</td>"),
              std::string::npos)
        << html;
    EXPECT_NE(html.find("<td>web/b</td><td class=\"num\">3</td><td class=\"num\">3</td>"
                        "<td class=\"num\">2</td><td class=\"num warn\">66.67%</td>"),
              std::string::npos)
        << html;

    // 0 of 1: [0, z^2 / (1 + z^2)] = [0, 0.793451].
    RunResults single;
    single.put(attempt("a", 0, 0.0));
    const std::string one = successRateHtml(repeatStats(single));
    EXPECT_NE(one.find("0 / 1; 95% CI 0.00% &ndash; 79.35% (Wilson)"), std::string::npos) << one;
    EXPECT_EQ(one.find("Repeated runs"), std::string::npos);
}

TEST(EvalStats, RepeatedPlansGetTheirOwnFoldersAndResumeSeparately) {
    std::vector<TaskPlan> plans(2);
    plans[0].key = "web/a.json";
    plans[0].resultDir = "pyautogui/m/web/a";
    plans[1].key = "web/b.json";
    plans[1].resultDir = "pyautogui/m/web/b";
    const std::vector<TaskPlan> repeated = repeatPlans(plans, 3);
    ASSERT_EQ(repeated.size(), 6u);
    EXPECT_EQ(repeated[0].resultDir, "pyautogui/m/web/a");
    EXPECT_EQ(repeated[1].attempt, 0);
    EXPECT_EQ(repeated[2].key, "web/a.json");
    EXPECT_EQ(repeated[2].attempt, 1);
    EXPECT_EQ(repeated[2].resultDir, "attempt_1/pyautogui/m/web/a");
    EXPECT_EQ(repeated[5].resultDir, "attempt_2/pyautogui/m/web/b");
    EXPECT_EQ(repeatPlans(plans, 1).size(), 2u);

    // Every attempt is finished on its own: only attempt 1 of a lacks its result.txt.
    const inference::testing::ScratchDir scratch("iris-eval-repeat-test");
    for (const TaskPlan& plan : repeated) {
        std::filesystem::create_directories(scratch.path() / plan.resultDir);
        if (plan.resultDir != "attempt_1/pyautogui/m/web/a")
            std::ofstream(scratch.path() / plan.resultDir / "result.txt") << "1.0\n";
    }
    const std::vector<std::size_t> todo = unfinishedTasks(
        scratch.path(), repeated.size(), [&](std::size_t i) { return repeated[i].resultDir; });
    EXPECT_EQ(todo, (std::vector<std::size_t>{2}));
}

}  // namespace
}  // namespace iris::app::eval
