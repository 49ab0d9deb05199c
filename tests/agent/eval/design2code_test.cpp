// Design2Code block metrics on synthetic block lists with hand-computed values, CIEDE2000 on
// Sharma, Wu & Dalal's published test pairs, and the assignment against brute force.
#include "agent/eval/design2code.h"

#include <algorithm>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

namespace iris::agent::eval {
namespace {

TextBlock block(std::string text, double x, double y, double w, double h, int r = 0, int g = 0,
                int b = 0) {
    return TextBlock{std::move(text), x, y, w, h, r, g, b};
}

TEST(Ciede2000, MatchesSharmaTestData) {
    struct Pair {
        std::array<double, 3> a, b;
        double de;
    };
    // Sharma, Wu, Dalal (2005), Table 1: pairs 1, 2, 7, 17, 25.
    const Pair pairs[] = {
        {{50.0, 2.6772, -79.7751}, {50.0, 0.0, -82.7485}, 2.0425},
        {{50.0, 3.1571, -77.2803}, {50.0, 0.0, -82.7485}, 2.8615},
        {{50.0, 0.0, 0.0}, {50.0, -1.0, 2.0}, 2.3669},
        {{50.0, 2.5, 0.0}, {73.0, 25.0, -18.0}, 27.1492},
        {{60.2574, -34.0099, 36.2677}, {60.4626, -34.1751, 39.4387}, 1.2644},
    };
    for (const auto& p : pairs) {
        EXPECT_NEAR(ciede2000(p.a, p.b), p.de, 5e-5);
        EXPECT_NEAR(ciede2000(p.b, p.a), p.de, 5e-5);
    }
}

TEST(SrgbToLab, MatchesStandardValues) {
    const auto white = srgbToLab(255, 255, 255);
    EXPECT_NEAR(white[0], 100.0, 1e-3);
    EXPECT_NEAR(white[1], 0.0, 1e-2);
    EXPECT_NEAR(white[2], 0.0, 1e-2);
    const auto red = srgbToLab(255, 0, 0);  // CIE L*a*b* of sRGB red, D65: 53.24, 80.09, 67.20
    EXPECT_NEAR(red[0], 53.24, 0.01);
    EXPECT_NEAR(red[1], 80.09, 0.01);
    EXPECT_NEAR(red[2], 67.20, 0.01);
}

double bruteForceCost(const std::vector<double>& cost, int rows, int cols) {
    // Rows <= cols here: try every injective row -> column map via column permutations.
    std::vector<int> perm(static_cast<size_t>(cols));
    std::iota(perm.begin(), perm.end(), 0);
    double best = 1e300;
    do {
        double c = 0;
        for (int i = 0; i < rows; ++i)
            c += cost[static_cast<size_t>(i * cols + perm[static_cast<size_t>(i)])];
        best = std::min(best, c);
    } while (std::next_permutation(perm.begin(), perm.end()));
    return best;
}

TEST(Hungarian, FindsTheMinimumLikeBruteForce) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-1, 1);
    for (int trial = 0; trial < 50; ++trial) {
        const int rows = 1 + trial % 5, cols = rows + trial % 3;
        std::vector<double> cost(static_cast<size_t>(rows * cols));
        for (auto& c : cost)
            c = u(rng);
        const auto match = hungarianAssign(cost, rows, cols);
        double total = 0;
        std::vector<int> used;
        for (int i = 0; i < rows; ++i) {
            ASSERT_GE(match[static_cast<size_t>(i)], 0);
            used.push_back(match[static_cast<size_t>(i)]);
            total += cost[static_cast<size_t>(i * cols + match[static_cast<size_t>(i)])];
        }
        std::sort(used.begin(), used.end());
        EXPECT_EQ(std::unique(used.begin(), used.end()), used.end());
        EXPECT_NEAR(total, bruteForceCost(cost, rows, cols), 1e-12);

        // The transpose (more rows than columns) leaves rows - cols rows unassigned.
        std::vector<double> t(cost.size());
        for (int i = 0; i < rows; ++i)
            for (int j = 0; j < cols; ++j)
                t[static_cast<size_t>(j * rows + i)] = cost[static_cast<size_t>(i * cols + j)];
        const auto tm = hungarianAssign(t, cols, rows);
        double tt = 0;
        int assigned = 0;
        for (int j = 0; j < cols; ++j) {
            if (tm[static_cast<size_t>(j)] < 0) continue;
            ++assigned;
            tt += t[static_cast<size_t>(j * rows + tm[static_cast<size_t>(j)])];
        }
        EXPECT_EQ(assigned, rows);
        EXPECT_NEAR(tt, total, 1e-12);
    }
}

TEST(Design2Code, IdenticalPagesScoreOne) {
    PageTextBlocks page{
        1280,
        2000,
        {block("Welcome", 10, 10, 200, 40, 20, 20, 20), block("About us", 10, 300, 150, 30)}};
    const auto s = design2codeScores(page, page);
    EXPECT_EQ(s.matched, 2);
    EXPECT_DOUBLE_EQ(s.block, 1.0);
    EXPECT_DOUBLE_EQ(s.text, 1.0);
    EXPECT_DOUBLE_EQ(s.position, 1.0);
    EXPECT_NEAR(s.color, 1.0, 1e-12);
    EXPECT_NEAR(s.overall, 1.0, 1e-12);
}

TEST(Design2Code, ScoresShiftedRecolouredAndExtraBlocksByHand) {
    const PageTextBlocks reference{
        1000,
        1000,
        {block("Welcome home", 100, 100, 200, 50), block("Contact us", 100, 500, 200, 50)}};
    const PageTextBlocks candidate{1000,
                                   1000,
                                   {block("Welcome home", 150, 100, 200, 50),
                                    block("Contact us today", 100, 500, 200, 50, 255, 255, 255),
                                    block("Extra", 0, 900, 100, 100)}};
    const auto s = design2codeScores(candidate, reference);
    EXPECT_EQ(s.matched, 2);
    EXPECT_EQ(s.unmatchedCandidate, 1);
    EXPECT_EQ(s.unmatchedReference, 0);
    // Areas (normalised): every block 0.01. Matched 0.04 of 0.05.
    EXPECT_NEAR(s.block, 0.8, 1e-12);
    // ratio("Contact us", "Contact us today") = 2*10/26.
    EXPECT_NEAR(s.text, (1.0 + 20.0 / 26.0) / 2, 1e-12);
    // The first pair's centres differ by 50/1000 in x.
    EXPECT_NEAR(s.position, (0.95 + 1.0) / 2, 1e-12);
    // Black vs white: CIEDE2000 = 100 (L* 0 vs 100, chroma 0), so that pair scores 0.
    EXPECT_NEAR(s.color, 0.5, 1e-3);
    EXPECT_NEAR(s.overall, (0.8 + (1.0 + 20.0 / 26.0) / 2 + 0.975 + 0.5) / 4, 1e-3);
}

TEST(Design2Code, MergesSplitBlocksWhenThatMatchesBetter) {
    // The candidate split one line into two blocks; merging them matches the reference exactly.
    const PageTextBlocks reference{1000, 1000, {block("Hello world", 0, 0, 200, 20)}};
    const PageTextBlocks candidate{
        1000, 1000, {block("Hello", 0, 0, 100, 20), block("world", 100, 0, 100, 20)}};
    const auto s = design2codeScores(candidate, reference);
    EXPECT_EQ(s.matched, 1);
    EXPECT_EQ(s.unmatchedCandidate, 0);
    EXPECT_DOUBLE_EQ(s.block, 1.0);
    EXPECT_DOUBLE_EQ(s.text, 1.0);
    EXPECT_DOUBLE_EQ(s.position, 1.0);
}

TEST(Design2Code, NormalisesByEachPageSize) {
    // Same layout at twice the size: normalised boxes are equal.
    const PageTextBlocks small{500, 400, {block("Title", 50, 40, 100, 20)}};
    const PageTextBlocks large{1000, 800, {block("Title", 100, 80, 200, 40)}};
    const auto s = design2codeScores(small, large);
    EXPECT_DOUBLE_EQ(s.position, 1.0);
    EXPECT_DOUBLE_EQ(s.block, 1.0);
}

TEST(Design2Code, NothingSimilarScoresZero) {
    const PageTextBlocks a{100, 100, {block("abc", 0, 0, 10, 10)}};
    const PageTextBlocks b{100, 100, {block("xyz", 0, 0, 10, 10)}};
    const auto s = design2codeScores(a, b);
    EXPECT_EQ(s.matched, 0);
    EXPECT_EQ(s.overall, 0.0);
    EXPECT_EQ(design2codeScores(PageTextBlocks{100, 100, {}}, b).overall, 0.0);
}

TEST(PageTextBlocksJson, RoundTripsAndNamesBadFields) {
    const PageTextBlocks page{1280, 900, {block("A", 1, 2, 3, 4, 10, 20, 30)}};
    auto back = pageTextBlocksFromJson(toJson(page));
    ASSERT_TRUE(back);
    ASSERT_EQ(back->blocks.size(), 1u);
    EXPECT_EQ(back->blocks[0].text, "A");
    EXPECT_EQ(back->blocks[0].g, 20);
    EXPECT_DOUBLE_EQ(back->blocks[0].height, 4);
    auto bad = pageTextBlocksFromJson(nlohmann::json::parse(
        R"({"width": 10, "height": 10, "blocks": [{"text": "a", "bbox": [0, 0, 1, 1]}, {"text": "b", "bbox": [0, 0]}]})"));
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.status().message().find("blocks[1].bbox"), std::string::npos);
    EXPECT_FALSE(pageTextBlocksFromJson(
        nlohmann::json::parse(R"({"width": 0, "height": 10, "blocks": []})")));
    EXPECT_NE(kPageTextBlocksScript.find("getClientRects"), std::string_view::npos);
}

}  // namespace
}  // namespace iris::agent::eval
