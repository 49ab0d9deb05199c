// evaluate(): OSWorld's order and conj semantics (docs/osworld.md §3.1) over a fake environment,
// the getters, and checkTask().
#include <fstream>

#include <gtest/gtest.h>
#include <opencv2/core.hpp>

#include "agent/eval/task_check.h"
#include "fake_context.h"
#include "tests/inference/models/scratch_dir.h"

namespace iris::agent::eval {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

class EvaluateTest : public ::testing::Test {
protected:
    void SetUp() override { m_ctx = std::make_unique<FakeContext>(m_root); }

    Task task(const std::string& evaluator, const std::string& extra = "") {
        auto t = parseTask(
            R"({"id": "t", "instruction": "i", )" + extra + R"("evaluator": )" + evaluator + "}",
            "t.json");
        EXPECT_TRUE(t) << t.status().message();
        return t ? *t : Task{};
    }
    void write(const fs::path& p, const std::string& text) {
        fs::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << text;
    }
    double score(const Task& t) {
        auto r = evaluate(t, *m_ctx);
        EXPECT_TRUE(r) << r.status().message();
        return r ? r->score : -1;
    }

    inference::testing::ScratchDir m_scratch{"iris-eval"};
    const fs::path m_root = m_scratch.path();
    std::unique_ptr<FakeContext> m_ctx;
};

// A result that is simply the given JSON (the "rule" getter returns its rules).
std::string ruleOf(const std::string& v) {
    return R"({"type": "rule", "rules": )" + v + "}";
}

TEST_F(EvaluateTest, InfeasibleScoresOneOnlyWhenTheLastActionIsFail) {
    const Task t = task(R"({"func": "infeasible"})");
    m_ctx->lastFail = true;
    EXPECT_EQ(score(t), 1.0);
    m_ctx->lastFail = false;
    EXPECT_EQ(score(t), 0.0);
}

TEST_F(EvaluateTest, FailOnAFeasibleTaskScoresZeroWithoutRunningMetrics) {
    const Task t = task(R"({"func": "exact_match", "result": )" + ruleOf("\"a\"") +
                        R"(, "expected": )" + ruleOf(R"({"expected": "a"})") + "}");
    EXPECT_EQ(score(t), 1.0);
    m_ctx->lastFail = true;
    auto r = evaluate(t, *m_ctx);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->score, 0.0);
    EXPECT_FALSE(r->metrics[0].score.has_value());
}

TEST_F(EvaluateTest, AndReturnsTheMeanOfPartialScores) {
    // exact_match 1, fuzzy_match 2*LCS/(|a|+|b|) = 2*2/8 = 0.5 ("abcd" vs "abxy").
    const Task t =
        task(R"({"func": ["exact_match", "fuzzy_match"],
        "result": [)" +
             ruleOf("\"a\"") + "," + ruleOf("\"abcd\"") + R"(],
        "expected": [)" +
             ruleOf(R"({"expected": "a"})") + "," + ruleOf(R"({"expected": "abxy"})") + R"(],
        "options": [null, null]})");
    auto r = evaluate(t, *m_ctx);
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_DOUBLE_EQ(r->score, 0.75);
    ASSERT_EQ(r->metrics.size(), 2u);
    EXPECT_DOUBLE_EQ(*r->metrics[1].score, 0.5);
    EXPECT_EQ(r->metrics[1].result, "\"abcd\"");
}

TEST_F(EvaluateTest, AndStopsAtTheFirstZero) {
    const Task t =
        task(R"({"func": ["exact_match", "exact_match", "no_such_check_is_never_reached"],
        "result": [)" +
             ruleOf("1") + "," + ruleOf("2") + "," + ruleOf("3") + R"(],
        "expected": [)" +
             ruleOf(R"({"expected": 1})") + "," + ruleOf(R"({"expected": 3})") + "," +
             ruleOf(R"({"expected": 3})") + "]}");
    // Unknown names are reported before anything runs, as OSWorld resolves them up front.
    auto bad = evaluate(t, *m_ctx);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.status().message().find(
                  "evaluator.func[2]: unsupported metric no_such_check_is_never_reached"),
              std::string::npos);

    const Task good = task(R"({"func": ["exact_match", "exact_match", "exact_match"],
        "result": [)" + ruleOf("1") +
                           "," + ruleOf("2") + "," + ruleOf("3") + R"(],
        "expected": [)" + ruleOf(R"({"expected": 1})") +
                           "," + ruleOf(R"({"expected": 3})") + "," + ruleOf(R"({"expected": 3})") +
                           "]}");
    auto r = evaluate(good, *m_ctx);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->score, 0.0);
    EXPECT_EQ(*r->metrics[1].score, 0.0);
    EXPECT_FALSE(r->metrics[2].score.has_value());
}

TEST_F(EvaluateTest, OrReturnsOneAtTheFirstOneElseTheMax) {
    const Task first = task(R"({"func": ["fuzzy_match", "exact_match", "exact_match"], "conj": "or",
        "result": [)" + ruleOf("\"abcd\"") +
                            "," + ruleOf("1") + "," + ruleOf("2") + R"(],
        "expected": [)" + ruleOf(R"({"expected": "abxy"})") +
                            "," + ruleOf(R"({"expected": 1})") + "," +
                            ruleOf(R"({"expected": 1})") + "]}");
    auto r = evaluate(first, *m_ctx);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->score, 1.0);
    EXPECT_FALSE(r->metrics[2].score.has_value());

    const Task max = task(R"({"func": ["fuzzy_match", "fuzzy_match"], "conj": "or",
        "result": [)" + ruleOf("\"abcd\"") +
                          "," + ruleOf("\"abcd\"") + R"(],
        "expected": [)" + ruleOf(R"({"expected": "abxy"})") +
                          "," + ruleOf(R"({"expected": "abcx"})") + "]}");
    EXPECT_DOUBLE_EQ(score(max), 0.75);
}

TEST_F(EvaluateTest, MissingFileScoresZeroUnderAndAndSingle) {
    const std::string missing =
        R"({"type": "vm_file", "path": "{PROJECT_DIR}/missing.txt", "dest": "m.txt"})";
    const std::string gold = R"({"type": "cloud_file", "path": "gold.txt", "dest": "gold.txt"})";
    write(m_root / "task" / "gold.txt", "x");
    const Task single = task(R"({"func": "compare_text_file", "result": )" + missing +
                             R"(, "expected": )" + gold + "}");
    auto r = evaluate(single, *m_ctx);
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_EQ(r->score, 0.0);
    EXPECT_NE(r->metrics[0].note.find("file not found"), std::string::npos);

    const Task both = task(R"({"func": ["exact_match", "compare_text_file"],
        "result": [)" + ruleOf("1") +
                           "," + missing + R"(], "expected": [)" + ruleOf(R"({"expected": 1})") +
                           "," + gold + "]}");
    EXPECT_EQ(score(both), 0.0);
}

TEST_F(EvaluateTest, MissingFileUnderOrReusesThePreviousResult) {
    // Upstream only logs the FileNotFoundError under "or" and scores the stale result_state.
    write(m_root / "project" / "a.txt", "same");
    write(m_root / "task" / "gold.txt", "same");
    const std::string present =
        R"({"type": "vm_file", "path": "{PROJECT_DIR}/a.txt", "dest": "a.txt"})";
    const std::string missing =
        R"({"type": "vm_file", "path": "{PROJECT_DIR}/missing.txt", "dest": "m.txt"})";
    const std::string gold = R"({"type": "cloud_file", "path": "gold.txt", "dest": "gold.txt"})";
    const std::string other = R"({"type": "cloud_file", "path": "other.txt", "dest": "other.txt"})";
    write(m_root / "task" / "other.txt", "different");
    const Task t = task(R"({"func": ["compare_text_file", "compare_text_file"], "conj": "or",
        "result": [)" + present +
                        "," + missing + R"(], "expected": [)" + other + "," + gold + "]}");
    auto r = evaluate(t, *m_ctx);
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_EQ(*r->metrics[0].score, 0.0);
    EXPECT_EQ(*r->metrics[1].score, 1.0);  // a.txt scored again, against gold.txt
    EXPECT_NE(r->metrics[1].note.find("previous result"), std::string::npos);
    EXPECT_EQ(r->score, 1.0);
}

TEST_F(EvaluateTest, VmFileStaysInsideTheProjectAndTempFolder) {
    write(m_root / "project" / "index.html", "<h1>Hi</h1>");
    write(m_root / "outside.txt", "secret");
    const Task inside = task(
        R"({"func": "file_contains", "result": {"type": "vm_file", "path": "{PROJECT_DIR}/index.html", "dest": "i"},
        "expected": )" +
        ruleOf(R"({"expected": ["<h1>Hi"]})") + "}");
    EXPECT_EQ(score(inside), 1.0);
    for (const std::string path : {"{PROJECT_DIR}/../outside.txt", "/etc/passwd", "relative.txt"}) {
        const Task t =
            task(R"({"func": "file_contains", "result": {"type": "vm_file", "path": ")" + path +
                 R"(", "dest": "x"}, "expected": )" + ruleOf(R"({"expected": ["x"]})") + "}");
        auto r = evaluate(t, *m_ctx);
        ASSERT_FALSE(r) << path;
        EXPECT_NE(r.status().message().find("evaluator.result (vm_file)"), std::string::npos)
            << r.status().message();
    }
}

TEST_F(EvaluateTest, CommandsNeedPermission) {
    const Task t = task(
        R"({"func": "check_include_exclude", "result": {"type": "vm_command_line", "command": "ls /tmp", "shell": true},
        "expected": )" +
        ruleOf(R"({"include": ["a.txt"], "exclude": ["b.txt"]})") + "}");
    auto denied = evaluate(t, *m_ctx);
    ASSERT_FALSE(denied);
    EXPECT_EQ(denied.status().code(), StatusCode::Unsupported);
    m_ctx->allowCommands = true;
    m_ctx->commands["ls /tmp"] = CommandOutput{"a.txt\nc.txt\n", "", 0};
    EXPECT_EQ(score(t), 1.0);
    m_ctx->commands["ls /tmp"] = CommandOutput{"a.txt\nb.txt\n", "", 0};
    EXPECT_EQ(score(t), 0.0);
}

TEST_F(EvaluateTest, ReportsUnknownGettersByName) {
    const Task t =
        task(R"({"func": "is_expected_bookmarks", "result": {"type": "bookmarks"}, "expected": )" +
             ruleOf(R"({"type": "bookmark_bar_websites_urls", "urls": []})") + "}");
    auto r = evaluate(t, *m_ctx);
    ASSERT_FALSE(r);
    EXPECT_NE(r.status().message().find("evaluator.func: unsupported metric is_expected_bookmarks"),
              std::string::npos);
    EXPECT_NE(r.status().message().find("evaluator.result.type: unsupported getter type bookmarks"),
              std::string::npos);
}

TEST_F(EvaluateTest, BrowserGettersReadTheActiveTab) {
    m_ctx->tabs = {{"Home", "https://www.example.com/"},
                   {"Search", "https://www.example.com/search?q=red+shoes&size=42&lang=&x"}};
    m_ctx->activeIndex = 1;
    const Task urlTask = task(
        R"({"func": ["is_expected_url_pattern_match", "is_expected_active_tab", "is_expected_tabs"],
        "result": [{"type": "active_url_from_accessTree", "goto_prefix": "https://www."}, {"type": "active_tab_info"}, {"type": "open_tabs_info"}],
        "expected": [)" +
        ruleOf(R"({"expected": ["^https://(www\\.)?example\\.com/search", "q=red"]})") + "," +
        ruleOf(
            R"({"type": "url", "url": "https://example.com/search?q=red+shoes&size=42&lang=&x"})") +
        "," +
        ruleOf(
            R"({"type": "url", "urls": ["https://example.com", "https://www.example.com/search?q=red+shoes&size=42&lang=&x"]})") +
        "]}");
    auto r = evaluate(urlTask, *m_ctx);
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_EQ(r->score, 1.0) << r->metrics[0].score.value_or(-1) << r->metrics[1].score.value_or(-1)
                             << r->metrics[2].score.value_or(-1);

    const Task parse =
        task(R"({"func": "check_direct_json_object",
        "result": {"type": "active_tab_url_parse", "parse_keys": ["q", "size", "lang"], "replace": {"q": "query"}},
        "expected": )" +
             ruleOf(R"({"expected": {"query": "red shoes", "size": "42", "lang": ""}})") + "}");
    EXPECT_EQ(score(parse), 1.0);

    m_ctx->queries["css:.price"] = {"  $10 \n", "$20"};
    m_ctx->queries["xpath://h1"] = {" Shoes "};
    m_ctx->queries["xpath:value://input[@name='q']"] = {"red shoes"};
    const Task html = task(
        R"({"func": ["check_direct_json_object", "check_direct_json_object", "check_direct_json_object"],
        "result": [{"type": "active_tab_html_parse", "category": "class", "class_singleObject": {"price": "first"},
                    "class_multiObject": {"price": {"1": "second", "5": "absent"}}},
                   {"type": "active_tab_html_parse", "category": "xpath", "xpathObject": {"//h1": "title"}},
                   {"type": "active_tab_html_parse", "category": "input", "inputObject": {"//input[@name='q']": "q"}}],
        "expected": [)" +
        ruleOf(R"({"expected": {"first": "$10", "second": "$20"}})") + "," +
        ruleOf(R"({"expected": {"title": "Shoes"}})") + "," +
        ruleOf(R"({"expected": {"q": "red shoes"}})") + "]}");
    auto h = evaluate(html, *m_ctx);
    ASSERT_TRUE(h) << h.status().message();
    EXPECT_EQ(h->score, 1.0);

    const Task label = task(
        R"({"func": "check_direct_json_object", "result": {"type": "active_tab_html_parse", "category": "label", "labelObject": {}},
        "expected": )" +
        ruleOf(R"({"expected": {}})") + "}");
    auto l = evaluate(label, *m_ctx);
    ASSERT_FALSE(l);
    EXPECT_NE(l.status().message().find("category \"label\" is not supported"), std::string::npos);
}

TEST_F(EvaluateTest, Design2CodeAgainstAReferenceFileInTheTaskFolder) {
    m_ctx->blocks[""] = PageTextBlocks{1000, 1000, {TextBlock{"Hello", 0, 0, 100, 20, 0, 0, 0}}};
    write(
        m_root / "task" / "target.json",
        R"({"width": 1000, "height": 1000, "blocks": [{"text": "Hello", "bbox": [0, 0, 100, 20], "color": [0, 0, 0]}]})");
    const Task t = task(R"({"func": "design2code", "result": {"type": "page_text_blocks"},
        "expected": {"type": "cloud_file", "path": "target.json", "dest": "target.json"}, "options": {"metric": "overall"}})");
    auto r = evaluate(t, *m_ctx);
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_NEAR(r->score, 1.0, 1e-9);
    ASSERT_EQ(r->metrics[0].parts.size(), 5u);
    EXPECT_EQ(r->metrics[0].parts[0].first, "block");
    EXPECT_EQ(r->metrics[0].result, "<1 text blocks>");

    // The reference may also be another page, rendered through the context.
    m_ctx->blocks["{TASK_DIR}"] =
        PageTextBlocks{};  // never asked for: placeholders are substituted
    m_ctx->blocks[(m_root / "task").string() + "/target.html"] =
        PageTextBlocks{1000, 1000, {TextBlock{"Hello there", 500, 500, 100, 20, 0, 0, 0}}};
    const Task page = task(R"({"func": "design2code", "result": {"type": "page_text_blocks"},
        "expected": {"type": "page_text_blocks", "url": "{TASK_DIR}/target.html"}, "options": {"metric": "text", "pass_threshold": 0.5}})");
    EXPECT_EQ(score(page), 1.0);  // text ratio 10/16 >= 0.5
}

TEST_F(EvaluateTest, CompareImagesOnPageScreenshots) {
    m_ctx->screenshots[""] = cv::Mat(32, 32, CV_8UC3, cv::Scalar(100, 100, 100));
    write(m_root / "task" / "x", "");
    const Task t = task(R"({"func": "compare_images", "result": {"type": "page_screenshot"},
        "expected": {"type": "page_screenshot", "url": "{PROJECT_URL}/target.html"}})");
    m_ctx->screenshots[m_ctx->vars["PROJECT_URL"] + "/target.html"] =
        cv::Mat(32, 32, CV_8UC3, cv::Scalar(120, 120, 120));
    // Flat images: SSIM is the luminance term (2*100*120 + C1) / (100^2 + 120^2 + C1), C1 =
    // (0.01*255)^2.
    const double c1 = 0.01 * 255 * 0.01 * 255;
    EXPECT_NEAR(score(t), (2 * 100.0 * 120 + c1) / (100.0 * 100 + 120 * 120 + c1), 1e-9);
}

TEST_F(EvaluateTest, BadlyShapedRulesAreErrorsNotCrashes) {
    write(m_root / "project" / "a.txt", "x");
    write(m_root / "task" / "b.txt", "x");
    const Task options = task(R"({"func": "compare_text_file",
        "result": {"type": "vm_file", "path": "{PROJECT_DIR}/a.txt", "dest": "a"},
        "expected": {"type": "cloud_file", "path": "b.txt", "dest": "b"}, "options": {"ignore_blanks": "yes"}})");
    auto r = evaluate(options, *m_ctx);
    ASSERT_FALSE(r);
    EXPECT_NE(
        r.status().message().find("evaluator.func (compare_text_file): unexpected JSON shape"),
        std::string::npos)
        << r.status().message();
    const Task spec = task(R"({"func": "check_direct_json_object",
        "result": {"type": "active_tab_html_parse", "category": 5}, "expected": )" +
                           ruleOf(R"({"expected": {}})") + "}");
    m_ctx->tabs = {{"t", "https://a"}};
    auto s = evaluate(spec, *m_ctx);
    ASSERT_FALSE(s);
    EXPECT_NE(s.status().message().find("evaluator.result (active_tab_html_parse)"),
              std::string::npos)
        << s.status().message();
    const Task rules = task(
        R"({"func": "check_json", "result": {"type": "vm_file", "path": "{PROJECT_DIR}/a.txt", "dest": "a"},
        "expected": )" +
        ruleOf(R"({"expect": [3]})") + "}");
    write(m_root / "project" / "a.txt", "{}");
    EXPECT_FALSE(evaluate(rules, *m_ctx));
}

TEST(TaskCheck, ListsEverythingThatCannotRunHere) {
    auto t = parseTask(R"({"id": "x", "instruction": "i",
      "config": [{"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}},
                 {"type": "execute", "parameters": {"command": "rm -rf x", "shell": true}},
                 {"type": "googledrive", "parameters": {}},
                 {"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["https://www.delta.com/", "{PROJECT_URL}/index.html"]}}],
      "evaluator": {"func": ["is_expected_bookmarks", "exact_match"], "result": [{"type": "bookmarks"}, {"type": "vm_command_line", "command": "ls"}],
                    "expected": [{"type": "rule", "rules": {}}, {"type": "cloud_file", "path": "https://h/x", "dest": "x"}]}})",
                       "x.json");
    ASSERT_TRUE(t) << t.status().message();
    const TaskSupport s = checkTask(*t, Capabilities{});
    EXPECT_FALSE(s.runnable());
    const std::string summary = s.summary();
    EXPECT_EQ(summary.find("config[0]"), std::string::npos) << summary;  // browser plumbing is fine
    EXPECT_NE(summary.find("config[1]: execute runs a command"), std::string::npos) << summary;
    EXPECT_NE(summary.find("config[2]: unsupported step type googledrive"), std::string::npos)
        << summary;
    EXPECT_NE(summary.find("config[3]: opens https://www.delta.com/"), std::string::npos)
        << summary;
    EXPECT_EQ(summary.find("index.html"), std::string::npos) << summary;
    EXPECT_NE(summary.find("evaluator.func[0]: unsupported metric is_expected_bookmarks"),
              std::string::npos)
        << summary;
    EXPECT_NE(summary.find("evaluator.result[0].type: unsupported getter type bookmarks"),
              std::string::npos)
        << summary;
    EXPECT_NE(summary.find("evaluator.result[1]: vm_command_line runs a command"),
              std::string::npos)
        << summary;
    EXPECT_NE(summary.find("evaluator.expected[1]: cloud_file downloads https://h/x"),
              std::string::npos)
        << summary;

    Capabilities all{true, true, true, true};
    EXPECT_EQ(checkTask(*t, all).problems.size(), 3u);  // googledrive, bookmarks x2

    auto desktop = parseTask(R"({"id": "d", "instruction": "i", "iris": {"environment": "desktop"},
        "evaluator": {"func": "is_expected_active_tab", "result": {"type": "active_tab_info"}, "expected": {"type": "rule", "rules": {}}}})",
                             "d.json");
    ASSERT_TRUE(desktop);
    const std::string ds = checkTask(*desktop, Capabilities{}).summary();
    EXPECT_NE(ds.find("iris.environment: a desktop task needs a private desktop"), std::string::npos)
        << ds;
    EXPECT_NE(ds.find("active_tab_info reads the browser"), std::string::npos) << ds;

    auto files = parseTask(R"({"id": "f", "instruction": "i",
        "evaluator": {"func": "compare_text_file", "result": {"type": "vm_file", "path": "/home/user/a.txt", "dest": "a"},
                      "expected": {"type": "vm_file", "path": "{PROJECT_DIR}/b.txt", "dest": "b"}}})",
                           "f.json");
    ASSERT_TRUE(files);
    const TaskSupport fileSupport = checkTask(*files, Capabilities{});
    ASSERT_EQ(fileSupport.problems.size(), 1u) << fileSupport.summary();
    EXPECT_EQ(fileSupport.problems[0].where, "evaluator.result");
    EXPECT_NE(fileSupport.problems[0].what.find("/home/user/a.txt, outside {PROJECT_DIR}"),
              std::string::npos);

    auto inf = parseTask(R"({"id": "i", "instruction": "i", "evaluator": {"func": "infeasible"}})",
                         "i.json");
    ASSERT_TRUE(inf);
    EXPECT_TRUE(checkTask(*inf, Capabilities{}).runnable());
}

}  // namespace
}  // namespace iris::agent::eval
