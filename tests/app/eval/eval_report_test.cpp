#include "app/cli/eval/eval_report.h"

#include <fstream>
#include <regex>

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

TEST(EvalReport, HistogramBinsEqualWidths) {
    const Histogram h = histogram({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 5);
    ASSERT_EQ(h.counts.size(), 5u);
    ASSERT_EQ(h.edges.size(), 6u);
    EXPECT_DOUBLE_EQ(h.edges[0], 0);
    EXPECT_DOUBLE_EQ(h.edges[1], 1.8);
    EXPECT_DOUBLE_EQ(h.edges[5], 9);
    // [0,1.8): 0 1; [1.8,3.6): 2 3; [3.6,5.4): 4 5; [5.4,7.2): 6 7; [7.2,9]: 8 9.
    EXPECT_EQ(h.counts, (std::vector<int>{2, 2, 2, 2, 2}));
    const Histogram skew = histogram({1, 1, 1, 10}, 3);
    EXPECT_EQ(skew.counts, (std::vector<int>{3, 0, 1}));
    const Histogram same = histogram({4, 4, 4}, 10);
    EXPECT_EQ(same.counts, (std::vector<int>{3}));
    EXPECT_TRUE(histogram({}, 4).counts.empty());
}

TEST(EvalReport, SvgHasOneBarPerBinAndNoScript) {
    const std::string svg = histogramSvg({1, 2, 3, 4}, 4, "Steps <per> task", "steps");
    EXPECT_EQ(count(svg, "<rect "), 4);
    EXPECT_NE(svg.find("Steps &lt;per&gt; task"), std::string::npos);
    EXPECT_EQ(svg.find("<script"), std::string::npos);
    EXPECT_NE(histogramSvg({}, 4, "t", "u").find("no data"), std::string::npos);
}

TEST(EvalReport, PageShowsBothRatesDomainsAndTrajectories) {
    const inference::testing::ScratchDir scratch("iris-eval-report-test");
    const fs::path dir = scratch.path();
    const std::string taskDir = "tools/demo/web/a";
    fs::create_directories(dir / taskDir);
    std::ofstream(dir / taskDir / "traj.jsonl")
        << R"json({"step_num": 1, "action_timestamp": "20260101@000000000000", "action": "click(1, 2)", "response": "I click <here>", "reward": 0, "done": false, "info": {}, "screenshot_file": "step_1_20260101@000000000000.png"})json"
        << "\n";
    std::ofstream(dir / taskDir / "evaluation.json")
        << R"json({"score": 1.0, "reason": "one metric", "metrics": [{"index": 0, "func": "exact_match", "result_type": "rule", "expected_type": "rule", "result": "\"x\"", "expected": "\"x\"", "score": 1.0, "note": "", "parts": {}}]})json";

    RunResults run;
    run.settings.model = "demo";
    run.tasksTotal = 4;
    TaskResult a;
    a.id = "a";
    a.domain = "web";
    a.file = "web/a.json";
    a.status = TaskStatus::Scored;
    a.score = 1.0;
    a.steps = 3;
    a.promptTokens = 100;
    a.stepLatencyMs = {1000, 2000, 3000};
    a.resultDir = taskDir;
    run.put(a);
    TaskResult b = a;
    b.id = "b";
    b.file = "web/b.json";
    b.score = 0.5;
    b.resultDir.clear();
    b.endpoint = "http://10.0.0.2:8000/v1, http://10.0.0.3:8000/v1";  // two servers answered
    run.put(b);
    TaskResult c;
    c.id = "c<script>";
    c.domain = "forms";
    c.file = "forms/c.json";
    c.status = TaskStatus::Error;
    c.error = "evaluator.func: expected a string";
    run.put(c);

    const std::string html = reportHtml(run, dir, dir);
    EXPECT_NE(html.find("75.00%"), std::string::npos);  // 1.5 / 2 attempted
    EXPECT_NE(html.find("37.50%"), std::string::npos);  // 1.5 / 4 tasks
    EXPECT_EQ(html.find("<script"), std::string::npos);
    EXPECT_NE(html.find("c&lt;script&gt;"), std::string::npos);
    EXPECT_NE(html.find("evaluator.func: expected a string"), std::string::npos);
    EXPECT_EQ(count(html, "<svg "), 3);
    EXPECT_NE(html.find("src=\"tools/demo/web/a/step_1_20260101@000000000000.png\""),
              std::string::npos);
    EXPECT_NE(html.find("I click &lt;here&gt;"), std::string::npos);
    EXPECT_NE(html.find("exact_match"), std::string::npos);
    // Which servers answered b, in its section; a's section names none.
    EXPECT_NE(html.find(", endpoint http://10.0.0.2:8000/v1, http://10.0.0.3:8000/v1</span>"),
              std::string::npos);
    EXPECT_EQ(count(html, ", endpoint "), 1);
    // Two domains in the table.
    EXPECT_TRUE(std::regex_search(html, std::regex("<td>forms</td><td class=\"num\">1</td>")));
    EXPECT_TRUE(std::regex_search(html, std::regex("<td>web</td><td class=\"num\">2</td>")));

    // From another folder the links climb back.
    const std::string elsewhere = reportHtml(run, dir, dir / "sub");
    EXPECT_NE(elsewhere.find("src=\"../tools/demo/web/a/"), std::string::npos);

    ASSERT_TRUE(saveRunResults(run, dir).isOk());
    Result<std::string> summary = writeReport(dir, dir / "report.html");
    ASSERT_TRUE(summary) << summary.status().message();
    EXPECT_NE(summary->find("75.00% of 2 attempted"), std::string::npos);
    EXPECT_GT(fs::file_size(dir / "report.html"), 1000u);
}

}  // namespace
}  // namespace iris::app::eval
