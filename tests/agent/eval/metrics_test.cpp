// Each metric with cases taken from OSWorld's documented semantics (docs/osworld.md §3.2),
// called through the registry as evaluate() calls them: (result, expected, options).
#include <fstream>

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "agent/eval/evaluator.h"
#include "agent/eval/python_like.h"
#include "agent/eval/url_match.h"
#include "tests/inference/models/scratch_dir.h"

namespace iris::agent::eval {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

Result<double> run(std::string_view func, const Value& result, const std::optional<Value>& expected,
                   const json& options = json::object()) {
    const MetricInfo* m = findMetric(func);
    if (m == nullptr) return Status::notFound(std::string(func));
    MetricDetail d;
    return m->score(result, expected ? &*expected : nullptr, options, d);
}

double score(std::string_view func, const json& result, const std::optional<json>& expected,
             const json& options = json::object()) {
    auto r = run(func, Value(result),
                 expected ? std::optional<Value>(Value(*expected)) : std::nullopt, options);
    EXPECT_TRUE(r) << func << ": " << r.status().message();
    return r ? *r : -1;
}

class FileMetrics : public ::testing::Test {
protected:
    std::string file(const std::string& name, const std::string& text) {
        std::ofstream(m_dir / name, std::ios::binary) << text;
        return (m_dir / name).string();
    }
    inference::testing::ScratchDir m_scratch{"iris-eval-metrics"};
    const fs::path m_dir = m_scratch.path();
};

// OSWorld's metrics take their options as keyword arguments, where an unknown one is an error;
// every metric refuses it by name before it reads anything, rather than ignoring a typo.
TEST(Metrics, EveryMetricRefusesAnUnknownOption) {
    for (const MetricInfo& metric : allMetrics()) {
        if (metric.name == "infeasible") continue;  // evaluate() scores it; it has no options
        MetricDetail detail;
        const Value result(json("x"));
        const Value expected(json{{"expected", "x"}});
        const Result<double> scored =
            metric.score(result, &expected, json{{"no_such_option", 1}}, detail);
        ASSERT_FALSE(scored) << metric.name;
        EXPECT_EQ(scored.status().code(), StatusCode::InvalidArgument) << metric.name;
        EXPECT_NE(scored.status().message().find("unknown option \"no_such_option\""),
                  std::string::npos)
            << metric.name << ": " << scored.status().message();
    }
}

TEST(Metrics, ExactMatchUsesPythonEquality) {
    EXPECT_EQ(score("exact_match", "true", json{{"expected", "true"}}), 1.0);
    EXPECT_EQ(score("exact_match", "true", json{{"expected", "True"}}), 0.0);
    EXPECT_EQ(score("exact_match", 1, json{{"expected", 1.0}}), 1.0);  // 1 == 1.0 in Python
    EXPECT_EQ(
        score("exact_match", json{{"a", json::array({1, 2})}}, json{{"expected", {{"a", {1, 2}}}}}),
        1.0);
    EXPECT_EQ(score("exact_match", nullptr, json{{"expected", "x"}}), 0.0);
    EXPECT_FALSE(run("exact_match", Value(json("x")), Value(json{{"wrong", 1}})));
    EXPECT_FALSE(
        run("exact_match", Value(json("x")), Value(json{{"expected", "x"}}), json{{"bogus", 1}}));
    EXPECT_FALSE(run("exact_match", Value(json("x")), std::nullopt));
}

TEST(Metrics, ListMembership) {
    // match_in_list: result in rules.expected
    EXPECT_EQ(score("match_in_list", "Bing", json{{"expected", {"Google", "Bing"}}}), 1.0);
    EXPECT_EQ(score("match_in_list", "Yahoo", json{{"expected", {"Google", "Bing"}}}), 0.0);
    // is_in_list: rules.expected in result (a list, or a substring of a string)
    EXPECT_EQ(score("is_in_list", json{"/ext/a", "/ext/b"}, json{{"expected", "/ext/b"}}), 1.0);
    EXPECT_EQ(score("is_in_list", json{"/ext/a"}, json{{"expected", "/ext"}}), 0.0);
    EXPECT_EQ(
        score("is_in_list", "/home/user/helloExtension", json{{"expected", "helloExtension"}}),
        1.0);
    EXPECT_EQ(score("is_in_list", nullptr, json{{"expected", "x"}}), 0.0);
}

TEST(Metrics, CheckIncludeExclude) {
    const json rules = {{"include", {"Permission denied", "file"}}, {"exclude", {"No such"}}};
    EXPECT_EQ(score("check_include_exclude", "file: Permission denied", rules), 1.0);
    EXPECT_EQ(score("check_include_exclude", "file: Permission denied; No such file", rules), 0.0);
    EXPECT_EQ(score("check_include_exclude", "Permission denied", rules), 0.0);
    EXPECT_EQ(score("check_include_exclude", nullptr, rules), 0.0);
    EXPECT_EQ(score("check_include_exclude", "anything", json::object()),
              1.0);  // no rules: vacuous
}

TEST(Metrics, CheckDirectJsonObject) {
    const json result = {{"from", "NYC"}, {"to", "LAX"}, {"extra", "ignored"}};
    EXPECT_EQ(score("check_direct_json_object", result,
                    json{{"expected", {{"from", "NYC"}, {"to", "LAX"}}}}),
              1.0);
    EXPECT_EQ(score("check_direct_json_object", result,
                    json{{"expected", {{"from", "NYC"}, {"to", "SFO"}}}}),
              0.0);
    // A missing key reads as None.
    EXPECT_EQ(score("check_direct_json_object", result, json{{"expected", {{"date", nullptr}}}}),
              1.0);
    // A string result is parsed after ' -> ".
    EXPECT_EQ(score("check_direct_json_object", " {'from': 'NYC'} ",
                    json{{"expected", {{"from", "NYC"}}}}),
              1.0);
    EXPECT_EQ(score("check_direct_json_object", "not json", json{{"expected", {{"from", "NYC"}}}}),
              0.0);
    EXPECT_EQ(score("check_direct_json_object", nullptr, json{{"expected", {{"from", "NYC"}}}}),
              0.0);
    EXPECT_EQ(score("check_direct_json_object", result,
                    json{{"expected", {{"from", "__EVALUATION_FAILED__"}}}}),
              0.0);
    // expect_in_result: a list means any of; a string means a substring of the result's value.
    const json rules = {{"expect_in_result", true},
                        {"expected", {{"from", {"JFK", "NYC"}}, {"to", "LA"}}}};
    EXPECT_EQ(score("check_direct_json_object", result, rules), 1.0);
    EXPECT_EQ(
        score("check_direct_json_object", json{{"from", {"EWR", "JFK"}}, {"to", "LAX"}}, rules),
        1.0);
    EXPECT_EQ(score("check_direct_json_object", json{{"from", "EWR"}, {"to", "LAX"}}, rules), 0.0);
    EXPECT_EQ(score("check_direct_json_object", json{{"from", "NYC"}}, rules),
              0.0);  // "LA" in None
    // ignore_list_order
    EXPECT_EQ(score("check_direct_json_object", json{{"tags", {"b", "a"}}},
                    json{{"ignore_list_order", true}, {"expected", {{"tags", {"a", "b"}}}}}),
              1.0);
    EXPECT_EQ(score("check_direct_json_object", json{{"tags", {"b", "a"}}},
                    json{{"expected", {{"tags", {"a", "b"}}}}}),
              0.0);
}

TEST(Metrics, LiteralMatchComparesPythonStr) {
    EXPECT_EQ(score("literal_match", 1, json("1")), 1.0);
    EXPECT_EQ(score("literal_match", 1.0, json("1.0")), 1.0);
    EXPECT_EQ(score("literal_match", true, json("True")), 1.0);
    EXPECT_EQ(score("literal_match", nullptr, json("None")), 1.0);
    EXPECT_EQ(score("literal_match", json{"a", 1}, json("['a', 1]")), 1.0);
    EXPECT_EQ(score("literal_match", "Paris", json("paris")), 0.0);
    EXPECT_EQ(score("literal_match", "Paris", json("paris"), json{{"ignore_case", true}}), 1.0);
    EXPECT_EQ(score("literal_match", json{"A", 2}, json{"a", "2"},
                    json{{"type", "list"}, {"ignore_case", true}}),
              1.0);
    EXPECT_EQ(score("literal_match", json{"A"}, json{"a", "b"}, json{{"type", "list"}}), 0.0);
    EXPECT_FALSE(run("literal_match", Value(json(1)), Value(json(1)), json{{"type", "set"}}));
}

TEST(Metrics, FuzzyMatchIsRapidfuzzRatio) {
    EXPECT_NEAR(score("fuzzy_match", "this is a test", json{{"expected", "this is a test!"}}),
                0.9655172413793103, 1e-12);
    EXPECT_EQ(score("fuzzy_match", nullptr, json{{"expected", "x"}}), 0.0);
}

TEST_F(FileMetrics, CompareTextFile) {
    const std::string a = file("a.txt", "Hello  World\n\tagain\r\n");
    const std::string b = file("b.txt", "Hello World again");
    const std::string c = file("c.txt", "Hello  World\n\tagain\n");
    EXPECT_EQ(score("compare_text_file", a, json(b)), 0.0);
    EXPECT_EQ(score("compare_text_file", a, json(b), json{{"ignore_blanks", true}}), 1.0);
    EXPECT_EQ(score("compare_text_file", a, json(c)), 1.0);  // \r\n read as \n
    EXPECT_EQ(score("compare_text_file", file("d.txt", "HELLO"), json(file("e.txt", "hello")),
                    json{{"ignore_case", true}}),
              1.0);
    EXPECT_EQ(score("compare_text_file", nullptr, json(b)), 0.0);
    EXPECT_FALSE(
        run("compare_text_file", Value(json(a)), Value(json((m_dir / "missing").string()))));
}

TEST_F(FileMetrics, DiffTextFileIsTheLineRatio) {
    const std::string a = file("a.txt", "one\ntwo\nthree\n");
    const std::string b = file("b.txt", "one\nthree\nfour");
    EXPECT_DOUBLE_EQ(score("diff_text_file", a, json(b)), 4.0 / 6.0);
    EXPECT_EQ(score("diff_text_file", nullptr, json(b)), 0.0);
}

TEST_F(FileMetrics, CheckListAndFileContains) {
    const std::string log = file("log.txt", "INFO start\nERROR disk full\nINFO done\n");
    EXPECT_EQ(score("check_list", log,
                    json{{"expect", {"^INFO start$", "done"}}, {"unexpect", {"WARN"}}}),
              1.0);
    EXPECT_EQ(score("check_list", log, json{{"expect", {"done"}}, {"unexpect", {"^ERROR"}}}), 0.0);
    EXPECT_EQ(score("check_list", log, json{{"expect", {"missing"}}}), 0.0);
    EXPECT_EQ(score("file_contains", log, json{{"expected", {"disk full", "start"}}}), 1.0);
    EXPECT_EQ(score("file_contains", log, json{{"expected", {"disk empty"}}}), 0.0);
}

TEST_F(FileMetrics, CheckJsonMethods) {
    const std::string settings = file(
        "s.json", R"J({"editor": {"fontSize": 14, "theme": "Dark+ (default)"}, "ratio": "0.51"})J");
    const json expect = {
        {"expect",
         {{{"key", {"editor", "fontSize"}}, {"method", "eq"}, {"ref", 14}},
          {{"key", {"editor", "theme"}}, {"method", "re.I"}, {"ref", "^dark"}},
          {{"key", {"ratio"}}, {"method", "approx:0.02"}, {"ref", 0.5}},
          {{"key", {"editor", "fontSize"}}, {"method", "gt"}, {"ref", 12}}}},
        {"unexpect", {{{"key", {"editor", "wordWrap"}}, {"method", "eq"}, {"ref", "on"}}}}};
    EXPECT_EQ(score("check_json", settings, expect), 1.0);
    EXPECT_EQ(
        score("check_json", settings,
              json{{"expect", {{{"key", {"editor", "fontSize"}}, {"method", "le"}, {"ref", 12}}}}}),
        0.0);
    EXPECT_EQ(score("check_json", settings,
                    json{{"expect", {{{"key", {"nope"}}, {"method", "eq"}, {"ref", 1}}}}}),
              0.0);
    EXPECT_EQ(score("check_json", settings,
                    json{{"unexpect",
                          {{{"key", {"editor", "fontSize"}}, {"method", "eq"}, {"ref", 14}}}}}),
              0.0);
    EXPECT_FALSE(
        run("check_json", Value(json(settings)), Value(json::object()), json{{"is_yaml", true}}));
}

TEST(Metrics, UrlPatternMatchNeedsEveryRegex) {
    const json rules = {
        {"expected", {"^https://(www\\.)?drugs\\.com/tamiflu\\.html", "side-effects$"}}};
    EXPECT_EQ(score("is_expected_url_pattern_match",
                    "https://www.drugs.com/tamiflu.html#side-effects", rules),
              1.0);
    EXPECT_EQ(score("is_expected_url_pattern_match",
                    json{{"url", "https://drugs.com/tamiflu.html#side-effects"}}, rules),
              1.0);
    EXPECT_EQ(score("is_expected_url_pattern_match", "https://www.drugs.com/tamiflu.html", rules),
              0.0);
    EXPECT_EQ(score("is_expected_url_pattern_match", "", rules), 0.0);
    // Python's named groups are accepted.
    EXPECT_EQ(score("is_expected_url_pattern_match", "https://a.com/p/42",
                    json{{"expected", {"/p/(?P<id>\\d+)\\Z"}}}),
              1.0);
}

TEST(Metrics, ActiveTabAndTabsUseCompareUrls) {
    const json rule = {{"type", "url"}, {"url", "https://www.airbnb.com/"}};
    EXPECT_EQ(score("is_expected_active_tab", "https://airbnb.com.sg", rule),
              1.0);  // www, suffix, "/" dropped
    EXPECT_EQ(score("is_expected_active_tab", json{{"url", "https://www.airbnb.com"}}, rule), 1.0);
    EXPECT_EQ(score("is_expected_active_tab", "http://airbnb.com", rule),
              0.0);  // the scheme counts
    EXPECT_EQ(score("is_expected_active_tab", "https://airbnb.com/?q=1", rule), 0.0);
    EXPECT_EQ(score("is_expected_active_tab", "https://x.com", json{{"type", "title"}}), 0.0);
    EXPECT_EQ(score("is_expected_active_tab_approximate", "https://a.com/p?x=1",
                    json{{"type", "url"}, {"url", "https://a.com/p?y=2"}}),
              1.0);
    const json tabs = {{{"title", "A"}, {"url", "https://www.lonelyplanet.com/"}},
                       {{"title", "B"}, {"url", "https://www.airbnb.com/"}}};
    EXPECT_EQ(
        score("is_expected_tabs", tabs,
              json{{"type", "url"}, {"urls", {"https://airbnb.com", "https://lonelyplanet.com"}}}),
        1.0);
    EXPECT_EQ(
        score("is_expected_tabs", tabs, json{{"type", "url"}, {"urls", {"https://airbnb.com"}}}),
        0.0);
    EXPECT_EQ(
        score("is_expected_tabs", json::array(), json{{"type", "url"}, {"urls", json::array()}}),
        0.0);
    EXPECT_EQ(score("is_expected_search_query", json{{"url", "https://google.com/search?q=iris"}},
                    json{{"expect", {{"pattern", "q=iris"}}}}),
              1.0);
}

TEST(UrlMatch, ParsesLikeUrllib) {
    const UrlParts p = parseUrl("HTTPS://user@Example.com:8080/a/b;p?q=1#frag");
    EXPECT_EQ(p.scheme, "https");
    EXPECT_EQ(p.netloc, "user@Example.com:8080");
    EXPECT_EQ(p.path, "/a/b");
    EXPECT_EQ(p.params, "p");
    EXPECT_EQ(p.query, "q=1");
    EXPECT_EQ(p.fragment, "frag");
    const auto q = parseQuery("a=1&b=x+y%21&a=2&blank=&novalue&c=%E2%82%AC");
    EXPECT_EQ(q.at("a"), (std::vector<std::string>{"1", "2"}));
    EXPECT_EQ(q.at("b")[0], "x y!");
    EXPECT_EQ(q.count("blank"), 0u);
    EXPECT_EQ(q.count("novalue"), 0u);
    EXPECT_EQ(q.at("c")[0], "\xe2\x82\xac");
    EXPECT_EQ(normalizeUrlForCompare("www.Example.co.uk/"), "http://example");
    EXPECT_EQ(normalizeUrlForCompare("https://blog.eleuther.ai/rotary-embeddings/"),
              "https://blog.eleuther/rotary-embeddings/");
    EXPECT_TRUE(compareUrls("file:///tmp/p/index.html", "file:///tmp/p/index.html"));
    EXPECT_FALSE(compareUrls("file:///tmp/p/index.html", "file:///tmp/p/about.html"));
}

TEST(PythonLike, StrAndEquality) {
    EXPECT_EQ(pyStr(json{{"k", nullptr}, {"l", {true, 1.5, "it's"}}}),
              "{'k': None, 'l': [True, 1.5, \"it's\"]}");
    EXPECT_TRUE(pyEquals(json(true), json(1)));
    EXPECT_FALSE(pyEquals(json("1"), json(1)));
    EXPECT_FALSE(pyTruthy(json::object()));
    EXPECT_TRUE(pyTruthy(json("0")));
}

cv::Mat pattern(int w, int h, int seed) {
    cv::Mat m(h, w, CV_8UC3);
    cv::RNG rng(static_cast<uint64_t>(seed));
    rng.fill(m, cv::RNG::UNIFORM, 0, 256);
    cv::GaussianBlur(m, m, cv::Size(5, 5), 1.5);
    return m;
}

TEST_F(FileMetrics, CompareImagesIsSsimWithOptionalRescaling) {
    const cv::Mat img = pattern(64, 48, 1);
    const std::string path = (m_dir / "a.png").string();
    ASSERT_TRUE(cv::imwrite(path, img));
    auto same = run("compare_images", Value(json(path)), Value(img));
    ASSERT_TRUE(same) << same.status().message();
    EXPECT_NEAR(*same, 1.0, 1e-12);

    // A flat grey 100 against a flat grey 120: SSIM reduces to its luminance term.
    const cv::Mat g100(32, 32, CV_8UC3, cv::Scalar(100, 100, 100)),
        g120(32, 32, CV_8UC3, cv::Scalar(120, 120, 120));
    const double c1 = 0.01 * 255 * 0.01 * 255;
    const double flat = (2 * 100.0 * 120 + c1) / (100.0 * 100 + 120 * 120 + c1);
    auto raw = run("compare_images", Value(g100), Value(g120));
    ASSERT_TRUE(raw);
    EXPECT_NEAR(*raw, flat, 1e-12);
    // reference_base_result: (s - base) / (1 - base) when s >= base + 0.01, else 0.
    auto rescaled =
        run("compare_images", Value(g100), Value(g120), json{{"reference_base_result", 0.9}});
    ASSERT_TRUE(rescaled);
    EXPECT_NEAR(*rescaled, (flat - 0.9) / 0.1, 1e-12);
    auto below = run("compare_images", Value(g100), Value(g120),
                     json{{"reference_base_result", flat - 0.005}});
    ASSERT_TRUE(below);
    EXPECT_EQ(*below, 0.0);

    // Sizes differ: both are resized to the smaller; an upscaled copy stays very similar.
    cv::Mat big;
    cv::resize(img, big, cv::Size(128, 96), 0, 0, cv::INTER_CUBIC);
    auto resized = run("compare_images", Value(big), Value(img));
    ASSERT_TRUE(resized);
    EXPECT_GT(*resized, 0.9);
    EXPECT_LT(*resized, 1.0);

    cv::Mat bgra;
    cv::cvtColor(img, bgra, cv::COLOR_BGR2BGRA);
    auto withAlpha = run("compare_images", Value(bgra), Value(json(path)));
    ASSERT_TRUE(withAlpha) << withAlpha.status().message();
    EXPECT_NEAR(*withAlpha, 1.0, 1e-12);

    EXPECT_EQ(score("compare_images", nullptr, json(path)), 0.0);
    EXPECT_FALSE(run("compare_images", Value(json((m_dir / "nope.png").string())), Value(img)));

    // check_structure_sim: same size and SSIM >= 0.9; _with_threshold reads ssim_threshold.
    auto ss = run("check_structure_sim", Value(img), Value(big));
    ASSERT_TRUE(ss);
    EXPECT_EQ(*ss, 0.0);
    auto st = run("check_structure_sim_with_threshold", Value(g100), Value(g120),
                  json{{"ssim_threshold", flat - 0.001}});
    ASSERT_TRUE(st);
    EXPECT_EQ(*st, 1.0);
    auto st2 = run("check_structure_sim_with_threshold", Value(g100), Value(g120),
                   json{{"ssim_threshold", flat + 0.001}});
    ASSERT_TRUE(st2);
    EXPECT_EQ(*st2, 0.0);
}

TEST(Metrics, RegistryIsClosedAndNamed) {
    EXPECT_EQ(findMetric("compare_table"), nullptr);
    EXPECT_EQ(findGetter("bookmarks"), nullptr);
    for (const auto& m : allMetrics())
        EXPECT_EQ(findMetric(m.name), &m);
    for (const auto& g : allGetters())
        EXPECT_EQ(findGetter(g.name), &g);
    EXPECT_NE(findGetter("page_text_blocks"), nullptr);
    EXPECT_NE(findMetric("design2code"), nullptr);
}

}  // namespace
}  // namespace iris::agent::eval
