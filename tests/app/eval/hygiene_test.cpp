#include "app/cli/eval/hygiene.h"

#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/cli/eval/config_steps.h"
#include "app/cli/eval/eval_results.h"
#include "base/temporary_folder.h"

namespace iris::app::eval {
namespace {

namespace ev = agent::eval;

// Texts of 10, 20 and 70 characters: 100 in all, so fractions are easy to state.
const std::string kTen = "Ten chars!";
const std::string kTwenty = "Twenty characters!!!";
const std::string kSeventy(70, 'x');

PageInspection originalPage() {
    PageInspection page;
    page.texts = {{kTen, ""}, {kTwenty, ""}, {kSeventy, ""}, {"Menu (was hidden)", "display:none"}};
    page.media = {{"img", "file:///p/hero.jpg", 0.40}};
    return page;
}

TEST(Hygiene, FlagTaskVoidsTheScoreAndKeepsTheEvaluatorsVerdict) {
    TaskResult result;
    result.score = 0.8;
    result.reason = "ssim 0.8";
    flagTask(result, "runaway_loop", "click(1, 2) repeated 5 times on an unchanged screen");
    flagTask(result, "reward_hacking", "something else");
    EXPECT_EQ(result.score, 0.0);
    EXPECT_EQ(result.reason, "scored 0 (flagged); the evaluator gave 0.80: ssim 0.8");
    EXPECT_EQ(result.flags, (std::vector<std::string>{
                                "runaway_loop: click(1, 2) repeated 5 times on an unchanged screen",
                                "reward_hacking: something else"}));
    TaskResult unscored;  // an error: no score to void
    flagTask(unscored, "runaway_loop", "x");
    EXPECT_FALSE(unscored.score);
    EXPECT_EQ(unscored.flags.size(), 1u);
}

TEST(Hygiene, MockupTasksAreThoseScoredAgainstAnImage) {
    ev::Task task;
    task.evaluator.funcs = {"exact_match", "compare_images"};
    task.evaluator.expected = {
        ev::GetterSpec{"rule", {{"rules", {{"expected", "a"}}}}},
        ev::GetterSpec{"cloud_file", {{"path", "../../expected/target.png"}, {"dest", "t.png"}}}};
    EXPECT_TRUE(isMockupTask(task));
    EXPECT_EQ(mockupFileNames(task), (std::vector<std::string>{"target.png", "t.png"}));
    task.iris.environment = ev::EnvironmentKind::Desktop;
    EXPECT_FALSE(isMockupTask(task));
    ev::Task text;
    text.evaluator.funcs = {"compare_text_file"};
    EXPECT_FALSE(isMockupTask(text));
}

TEST(Hygiene, ReadsTheScriptsValueAndNamesABadField) {
    // The script returns the JSON text as a string value.
    const std::string text = R"({"media": [{"kind": "img", "source": "a.png", "coverage": 0.5}],
                                    "texts": [{"text": "Hi", "hidden": "opacity:0"}]})";
    Result<PageInspection> page = pageInspectionFromJson(nlohmann::json(text));
    ASSERT_TRUE(page) << page.status().message();
    ASSERT_EQ(page->media.size(), 1u);
    EXPECT_EQ(page->media[0].source, "a.png");
    EXPECT_DOUBLE_EQ(page->media[0].coverage, 0.5);
    ASSERT_EQ(page->texts.size(), 1u);
    EXPECT_EQ(page->texts[0].hidden, "opacity:0");
    Result<PageInspection> bad =
        pageInspectionFromJson(R"({"media": [{"kind": "img"}], "texts": []})"_json);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.status().message().find("media[0]"), std::string::npos);
}

TEST(Hygiene, AnHonestPageIsNotFlagged) {
    // Restyled: the hero image is still there, a text split by a <strong>, the hidden menu shown,
    // a small new icon.
    PageInspection scored;
    scored.media = {{"img", "file:///p/hero.jpg", 0.45}, {"img", "file:///p/icon.svg", 0.01}};
    scored.texts = {
        {"Ten", ""}, {"chars!", ""}, {kTwenty, ""}, {kSeventy, ""}, {"Menu (was hidden)", ""}};
    const PageInspection original = originalPage();
    EXPECT_TRUE(rewardHackingFindings(scored, &original, {"target.png"}).empty());
}

TEST(Hygiene, ALargeNewImageIsFlagged) {
    const PageInspection original = originalPage();
    PageInspection scored = original;
    scored.media.push_back({"background-image", "data:image/png;base64,AAAA", 0.85});
    const std::vector<std::string> found = rewardHackingFindings(scored, &original, {});
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0],
              "a CSS background image (data:image/png;base64,AAAA) that the original page did "
              "not have covers 85% of the viewport");
    // Below 30% it is decoration.
    scored.media.back().coverage = 0.29;
    EXPECT_TRUE(rewardHackingFindings(scored, &original, {}).empty());
}

TEST(Hygiene, TheMockupFileItselfIsFlaggedAtAnySize) {
    const PageInspection original = originalPage();
    PageInspection scored = original;
    scored.media.push_back({"img", "file:///tmp/x/target.png?v=2", 0.05});
    const std::vector<std::string> found = rewardHackingFindings(scored, &original, {"target.png"});
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0],
              "the page shows the target mockup target.png in an <img> "
              "(file:///tmp/x/target.png?v=2) covering 5% of the viewport");
}

TEST(Hygiene, HidingAFifthOfTheTextIsFlagged) {
    const PageInspection original = originalPage();
    PageInspection scored = original;
    scored.texts[1].hidden = "visibility:hidden";  // 20 of 100 characters
    std::vector<std::string> found = rewardHackingFindings(scored, &original, {});
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0], "the page hides 20% of the original page's text: \"" + kTwenty +
                            "\" (visibility:hidden)");
    scored.texts[1].hidden.clear();
    scored.texts[0].hidden = "off-screen";  // 10 of 100: not enough
    EXPECT_TRUE(rewardHackingFindings(scored, &original, {}).empty());
}

TEST(Hygiene, LosingHalfTheTextIsFlagged) {
    const PageInspection original = originalPage();
    PageInspection scored;
    scored.texts = {{kTen, ""}, {kTwenty, ""}};  // 70 of 100 characters deleted
    std::vector<std::string> found = rewardHackingFindings(scored, &original, {});
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0], "70% of the original page's text is no longer shown (deleted)");
    scored.texts = {{kSeventy, ""}};  // 30 of 100 deleted: an edit, not a hack
    EXPECT_TRUE(rewardHackingFindings(scored, &original, {}).empty());
    // Without the original page only the image rules apply.
    EXPECT_TRUE(rewardHackingFindings(PageInspection{}, nullptr, {}).empty());
}

TEST(Hygiene, ACopyOfTheMockupUnderAnotherNameIsTheMockup) {
    Result<TemporaryFolder> folder = TemporaryFolder::create("iris-hygiene-test");
    ASSERT_TRUE(folder) << folder.status().message();
    const std::filesystem::path dir = folder->path();
    const auto write = [&](const char* name, const char* bytes) {
        std::ofstream(dir / name, std::ios::binary) << bytes;
    };
    write("target.png", "mockup bytes");
    write("shot.png", "mockup bytes");
    write("other.png", "mockup bytes, almost");
    ev::Task task;
    task.file = dir / "task.json";  // relative expected paths are this folder's
    task.evaluator.funcs = {"compare_images"};
    task.evaluator.expected = {ev::GetterSpec{"cloud_file", {{"path", "{SUB}/target.png"}}}};
    const std::vector<std::filesystem::path> mockups = mockupFilePaths(task, {{"SUB", "."}});
    ASSERT_EQ(mockups.size(), 1u);
    EXPECT_EQ(mockups[0], dir / "./target.png");

    PageInspection page;
    page.media = {{"img", fileUrl(dir / "shot.png"), 0.05},
                  {"img", fileUrl(dir / "other.png"), 0.05},
                  {"img", "https://example.com/shot.png", 0.05},
                  {"background-image", fileUrl(dir / "shot.png"), 0.5}};
    EXPECT_EQ(mediaCopiesOf(page, mockups), (std::vector<std::string>{"shot.png"}));
}

}  // namespace
}  // namespace iris::app::eval
