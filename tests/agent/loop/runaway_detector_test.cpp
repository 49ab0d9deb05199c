#include "agent/runaway_detector.h"

#include <gtest/gtest.h>
#include <opencv2/imgproc.hpp>

namespace iris::agent {
namespace {

// A 1280 x 800 page: white, a black heading bar and a text field. Its print has 64 x 40 cells of
// exactly 20 x 20 pixels, so the tests can say which cells a change touches.
cv::Mat page() {
    cv::Mat image(800, 1280, CV_8UC3, cv::Scalar(255, 255, 255));
    cv::rectangle(image, cv::Rect(40, 40, 600, 60), cv::Scalar(0, 0, 0), cv::FILLED);
    cv::rectangle(image, cv::Rect(40, 300, 400, 40), cv::Scalar(90, 90, 90), 1);
    return image;
}

// The page with a text caret (2 x 24 px, black) in the field: it spans at most 2 x 2 cells.
cv::Mat pageWithCaret() {
    cv::Mat image = page();
    cv::rectangle(image, cv::Rect(59, 308, 2, 24), cv::Scalar(0, 0, 0), cv::FILLED);
    return image;
}

// The page with `cells` whole cells of the bottom row painted black.
cv::Mat pageWithBlackCells(int cells) {
    cv::Mat image = page();
    cv::rectangle(image, cv::Rect(0, 780, 20 * cells, 20), cv::Scalar(0, 0, 0), cv::FILLED);
    return image;
}

const std::vector<Action> kClickButton = {Click{Point{640, 400}}};

TEST(ScreenPrint, IsSixtyFourCellsAcrossOfMeanGray) {
    const cv::Mat print = screenPrint(page());
    ASSERT_EQ(print.cols, 64);
    ASSERT_EQ(print.rows, 40);
    EXPECT_EQ(print.at<std::uint8_t>(0, 0), 255);  // white corner
    EXPECT_EQ(print.at<std::uint8_t>(3, 5), 0);    // inside the heading bar (y 60..79, x 100..119)
    // The heading bar starts at (40, 40), a cell corner: cell (1, 1) (x, y 20..39) stays white.
    EXPECT_EQ(print.at<std::uint8_t>(1, 1), 255);
}

TEST(ScreenPrint, ToleratesTwentyFiveChangedCellsOfTwoThousandFiveHundredSixty) {
    // 1% of 64 x 40 = 2560 cells is 25.6: 25 black cells are the same screen, 26 are not.
    const cv::Mat base = screenPrint(page());
    EXPECT_TRUE(sameScreen(base, screenPrint(pageWithBlackCells(25))));
    EXPECT_FALSE(sameScreen(base, screenPrint(pageWithBlackCells(26))));
    EXPECT_TRUE(sameScreen(base, screenPrint(page())));
    EXPECT_FALSE(sameScreen(base, screenPrint(cv::Mat(400, 640, CV_8UC3, cv::Scalar::all(255)))));
    EXPECT_FALSE(sameScreen(base, cv::Mat()));
}

TEST(ScreenPrint, ACaretBlinkIsTheSameScreen) {
    EXPECT_TRUE(sameScreen(screenPrint(page()), screenPrint(pageWithCaret())));
}

TEST(CanonicalActions, EqualActionsOnlyAreEqual) {
    EXPECT_EQ(canonicalActions(kClickButton), canonicalActions({Click{Point{640, 400}}}));
    EXPECT_NE(canonicalActions(kClickButton), canonicalActions({Click{Point{641, 400}}}));
    EXPECT_NE(canonicalActions(kClickButton),
              canonicalActions({Click{Point{640, 400}, MouseButton::Right}}));
    EXPECT_NE(canonicalActions({TypeText{"a"}, PressKeys{{"enter"}}}),
              canonicalActions({PressKeys{{"enter"}}, TypeText{"a"}}));
}

TEST(RunawayDetector, FlagsTheFifthRepeatNotTheFourth) {
    RunawayDetector detector;  // the default limit: 5
    for (int step = 1; step <= 4; ++step) {
        EXPECT_FALSE(detector.observe(page(), kClickButton)) << "step " << step;
        EXPECT_EQ(detector.repeats(), step);
    }
    const std::optional<std::string> seen = detector.observe(page(), kClickButton);
    ASSERT_TRUE(seen);
    EXPECT_EQ(*seen, "click(640, 400) repeated 5 times on an unchanged screen");
}

TEST(RunawayDetector, CountsToItsLimit) {
    RunawayDetector detector(3);
    EXPECT_FALSE(detector.observe(page(), kClickButton));
    EXPECT_FALSE(detector.observe(page(), kClickButton));
    EXPECT_TRUE(detector.observe(page(), kClickButton));
}

TEST(RunawayDetector, ACaretBlinkingBetweenStepsIsNoChange) {
    RunawayDetector detector(4);
    EXPECT_FALSE(detector.observe(page(), kClickButton));
    EXPECT_FALSE(detector.observe(pageWithCaret(), kClickButton));
    EXPECT_FALSE(detector.observe(page(), kClickButton));
    EXPECT_TRUE(detector.observe(pageWithCaret(), kClickButton));
}

TEST(RunawayDetector, AChangedScreenStartsAgain) {
    RunawayDetector detector(3);
    EXPECT_FALSE(detector.observe(page(), kClickButton));
    EXPECT_FALSE(detector.observe(page(), kClickButton));
    // A dialog-sized change (200 of 2560 cells) between the second and third click.
    cv::Mat dialog = page();
    cv::rectangle(dialog, cv::Rect(400, 200, 400, 200), cv::Scalar(40, 40, 40), cv::FILLED);
    EXPECT_FALSE(detector.observe(dialog, kClickButton));
    EXPECT_EQ(detector.repeats(), 1);
    EXPECT_FALSE(detector.observe(dialog, kClickButton));
    EXPECT_TRUE(detector.observe(dialog, kClickButton));
}

TEST(RunawayDetector, ADifferentActionOrNoActionStartsAgain) {
    RunawayDetector detector(3);
    EXPECT_FALSE(detector.observe(page(), kClickButton));
    EXPECT_FALSE(detector.observe(page(), kClickButton));
    EXPECT_FALSE(detector.observe(page(), {Click{Point{640, 420}}}));
    EXPECT_EQ(detector.repeats(), 1);
    EXPECT_FALSE(detector.observe(page(), kClickButton));
    EXPECT_FALSE(detector.observe(page(), kClickButton));
    EXPECT_FALSE(detector.observe(page(), {}));  // an answer that did not parse
    EXPECT_EQ(detector.repeats(), 0);
    EXPECT_FALSE(detector.observe(page(), kClickButton));
    EXPECT_FALSE(detector.observe(page(), kClickButton));
    EXPECT_TRUE(detector.observe(page(), kClickButton));
}

TEST(RunawayDetector, DriftAddsUpAgainstTheStreaksFirstScreen) {
    // Each step paints 10 more cells: every step is within 1% of the one before, but the third
    // differs from the first by 20 cells and the fourth by 30 (> 25.6): the streak starts again.
    RunawayDetector detector(4);
    EXPECT_FALSE(detector.observe(pageWithBlackCells(0), kClickButton));
    EXPECT_FALSE(detector.observe(pageWithBlackCells(10), kClickButton));
    EXPECT_FALSE(detector.observe(pageWithBlackCells(20), kClickButton));
    EXPECT_FALSE(detector.observe(pageWithBlackCells(30), kClickButton));
    EXPECT_EQ(detector.repeats(), 1);
}

TEST(RunawayDetector, LimitZeroNeverFlags) {
    RunawayDetector detector(0);
    for (int step = 0; step < 20; ++step)
        EXPECT_FALSE(detector.observe(page(), kClickButton));
}

TEST(RunawayDetector, NamesEveryActionOfTheStep) {
    RunawayDetector detector(2);
    const std::vector<Action> actions = {Click{Point{10, 20}}, TypeText{"hi"}};
    EXPECT_FALSE(detector.observe(page(), actions));
    const std::optional<std::string> seen = detector.observe(page(), actions);
    ASSERT_TRUE(seen);
    EXPECT_EQ(seen->rfind("click(10, 20); ", 0), 0u) << *seen;
    EXPECT_NE(seen->find(" repeated 2 times on an unchanged screen"), std::string::npos);
}

}  // namespace
}  // namespace iris::agent
