#include "app/cli/eval/progress.h"

#include <sstream>

#include <gtest/gtest.h>

namespace iris::app::eval {
namespace {

TEST(EvalProgress, EtaIsMeanDurationTimesRemainingOverLanes) {
    EXPECT_FALSE(estimateRemainingSeconds({}, 3, 1));
    EXPECT_DOUBLE_EQ(*estimateRemainingSeconds({}, 0, 1), 0.0);
    // mean 20 s; 5 left on 2 lanes: 50 s; 1 left on 4 lanes runs alone: 20 s.
    EXPECT_DOUBLE_EQ(*estimateRemainingSeconds({10, 20, 30}, 5, 2), 50.0);
    EXPECT_DOUBLE_EQ(*estimateRemainingSeconds({10, 20, 30}, 1, 4), 20.0);
    EXPECT_DOUBLE_EQ(*estimateRemainingSeconds({10, 20, 30}, 6, 1), 120.0);
}

TEST(EvalProgress, DurationsReadLikeAClock) {
    EXPECT_EQ(formatDuration(0), "0s");
    EXPECT_EQ(formatDuration(42.4), "42s");
    EXPECT_EQ(formatDuration(187), "3m07s");
    EXPECT_EQ(formatDuration(3720), "1h02m");
    EXPECT_EQ(formatDuration(-5), "0s");
}

TEST(EvalProgress, BarFillsInProportion) {
    EXPECT_EQ(progressBar(0, 10, 10), "[..........]");
    EXPECT_EQ(progressBar(5, 10, 10), "[#####.....]");
    EXPECT_EQ(progressBar(10, 10, 10), "[##########]");
    EXPECT_EQ(progressBar(1, 3, 6), "[##....]");
    EXPECT_EQ(progressBar(0, 0, 4), "[....]");
}

TEST(EvalProgress, PlainLinesWhenNotATerminal) {
    std::ostringstream out;
    Progress progress(out, 2, 1, false);
    progress.started("web/a");
    progress.finished("web/a", 1.0, 10, "");
    progress.started("web/b");
    progress.finished("web/b", std::nullopt, 30, "unsupported");
    progress.close();
    const std::string text = out.str();
    EXPECT_EQ(text.find('\r'), std::string::npos);
    EXPECT_NE(text.find("start web/a\nweb/a: score 1 in 10s\n[############............] 1/2 tasks, "
                        "success 100.0%, ETA 10s\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("web/b: not scored in 30s (unsupported)\n"), std::string::npos) << text;
    EXPECT_NE(text.find("2/2 tasks, success 100.0%, ETA 0s\n"), std::string::npos) << text;
}

TEST(EvalProgress, RedrawsInPlaceOnATerminal) {
    std::ostringstream out;
    Progress progress(out, 4, 2, true);
    progress.started("a");
    EXPECT_EQ(progress.line(), "[........................] 0/4 tasks, 1 running, ETA --");
    progress.finished("a", 0.0, 8, "");
    progress.close();
    EXPECT_NE(out.str().find("\r\033[Ka: score 0 in 8s\n"), std::string::npos);
    // 3 left, 2 lanes, mean 8 s: 12 s.
    EXPECT_EQ(progress.line(), "[######..................] 1/4 tasks, success 0.0%, ETA 12s");
}

}  // namespace
}  // namespace iris::app::eval
