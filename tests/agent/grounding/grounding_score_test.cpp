// Scoring the grounding self-test: inside/outside a box at its edges, distances from the
// centre, and the summary statistics against a plain computation written here.
#include "agent/grounding/grounding_score.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/grounding/grounding_report.h"

namespace iris::agent::grounding {
namespace {

TEST(GroundingScoreTest, InsideIncludesTheTopLeftEdgeAndExcludesTheBottomRight) {
    const Rect box{10, 20, 30, 40};
    EXPECT_TRUE(isInside(box, {10, 20}));
    EXPECT_TRUE(isInside(box, {39.9, 59.9}));
    EXPECT_FALSE(isInside(box, {40, 30}));
    EXPECT_FALSE(isInside(box, {20, 60}));
    EXPECT_FALSE(isInside(box, {9.9, 30}));
    EXPECT_FALSE(isInside(box, {20, 19.9}));
}

TEST(GroundingScoreTest, DistanceIsFromTheCentre) {
    const Rect box{10, 20, 30, 40};  // centre (25, 40)
    EXPECT_DOUBLE_EQ(distanceToCentre(box, {25, 40}), 0);
    EXPECT_DOUBLE_EQ(distanceToCentre(box, {28, 44}), 5);
    EXPECT_DOUBLE_EQ(distanceToCentre(box, {25 - 24, 40 - 32}), 40);
}

TEST(GroundingScoreTest, VerdictOfAClickOrNone) {
    const Rect box{0, 0, 10, 10};
    EXPECT_EQ(verdictFor(box, ClickPoint{5, 5}), PageVerdict::Hit);
    EXPECT_EQ(verdictFor(box, ClickPoint{15, 5}), PageVerdict::Miss);
    EXPECT_EQ(verdictFor(box, std::nullopt), PageVerdict::NoClick);
}

// Linear interpolation between closest ranks, written out independently.
double reference(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    const double h = (double(v.size()) - 1) * p / 100;
    const double lower = v[std::size_t(h)];
    const double upper = v[std::min(v.size() - 1, std::size_t(h) + 1)];
    return lower + (h - std::floor(h)) * (upper - lower);
}

TEST(GroundingScoreTest, PercentilesMatchAPlainComputation) {
    EXPECT_FALSE(percentile({}, 50));
    EXPECT_DOUBLE_EQ(*percentile({7}, 90), 7);
    EXPECT_DOUBLE_EQ(*percentile({4, 1, 3, 2}, 50), 2.5);
    EXPECT_DOUBLE_EQ(*percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90), 9.1);
    std::vector<double> values;
    for (int i = 0; i < 37; ++i)
        values.push_back(std::fmod(i * 7.31, 13.0));
    for (double p : {0.0, 10.0, 50.0, 90.0, 100.0})
        EXPECT_DOUBLE_EQ(*percentile(values, p), reference(values, p)) << "p" << p;
}

PageOutcome outcome(ElementKind kind, ScreenSize screen, std::optional<ClickPoint> click,
                    PageVerdict verdict, double stepMs) {
    PageOutcome o;
    o.kind = kind;
    o.screen = screen;
    o.target = {100, 100, 40, 20};  // centre (120, 110)
    o.click = click;
    o.verdict = verdict;
    o.stepMs = stepMs;
    o.modelMs = stepMs / 2;
    return o;
}

TEST(GroundingScoreTest, SummaryCountsEveryVerdictAndMeasuresOnlyClicks) {
    const ScreenSize small{800, 600};
    const ScreenSize large{1920, 1080};
    const std::vector<PageOutcome> pages = {
        outcome(ElementKind::Button, small, ClickPoint{120, 110}, PageVerdict::Hit, 100),
        outcome(ElementKind::Button, large, ClickPoint{123, 114}, PageVerdict::Hit, 300),
        outcome(ElementKind::Link, small, ClickPoint{120, 140}, PageVerdict::Miss, 200),
        outcome(ElementKind::Link, large, std::nullopt, PageVerdict::ParseError, 400),
        outcome(ElementKind::Icon, small, std::nullopt, PageVerdict::NoClick, 500),
        outcome(ElementKind::Icon, large, std::nullopt, PageVerdict::ModelError, 0),
    };
    const GroupStats s = summarize(pages);
    EXPECT_EQ(s.pages, 6);
    EXPECT_EQ(s.hits, 2);
    EXPECT_EQ(s.misses, 1);
    EXPECT_EQ(s.parseErrors, 1);
    EXPECT_EQ(s.noClick, 1);
    EXPECT_EQ(s.modelErrors, 1);
    EXPECT_DOUBLE_EQ(s.hitRate, 2.0 / 6.0);
    // Distances 0, 5 and 30.
    EXPECT_DOUBLE_EQ(*s.medianDistance, 5);
    EXPECT_DOUBLE_EQ(*s.p90Distance, reference({0, 5, 30}, 90));
    // Steps whose model answered: 100, 300, 200, 400, 500.
    EXPECT_DOUBLE_EQ(*s.medianStepMs, 300);
    EXPECT_DOUBLE_EQ(*s.medianModelMs, 150);

    GroundingReport report;
    report.pages = pages;
    const std::vector<NamedStats> kinds = statsByKind(report);
    ASSERT_EQ(kinds.size(), 3u);
    EXPECT_EQ(kinds[0].name, "button");
    EXPECT_DOUBLE_EQ(kinds[0].stats.hitRate, 1.0);
    EXPECT_EQ(kinds[1].name, "link");
    EXPECT_EQ(kinds[1].stats.parseErrors, 1);
    EXPECT_EQ(kinds[2].name, "icon");
    const std::vector<NamedStats> screens = statsByScreen(report);
    ASSERT_EQ(screens.size(), 2u);
    EXPECT_EQ(screens[0].name, "800x600");
    EXPECT_EQ(screens[0].stats.pages, 3);
    EXPECT_EQ(screens[1].name, "1920x1080");
    EXPECT_EQ(screens[1].stats.hits, 1);

    const nlohmann::ordered_json json = reportJson(report, true);
    EXPECT_EQ(json["overall"]["hits"], 2);
    EXPECT_EQ(json["by_kind"]["link"]["misses"], 1);
    EXPECT_EQ(json["pages"].size(), 6u);
    EXPECT_TRUE(json["pages"][3]["distance_px"].is_null());
    const std::string text = reportText(report, false);
    EXPECT_NE(text.find("hit rate: 33.3% (2/6)"), std::string::npos) << text;
}

TEST(GroundingScoreTest, AnEmptyGroupHasNoDistances) {
    const GroupStats s = summarize({});
    EXPECT_EQ(s.pages, 0);
    EXPECT_DOUBLE_EQ(s.hitRate, 0);
    EXPECT_FALSE(s.medianDistance);
    EXPECT_FALSE(s.p90Distance);
}

}  // namespace
}  // namespace iris::agent::grounding
