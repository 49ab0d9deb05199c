#pragma once
// Design2Code's four text-block metrics (docs/webloop.md §2.1; arXiv 2403.03163), computed from
// text blocks (page_blocks.h) instead of the paper's colour-coded re-renders. CLIP is left out:
// Iris has no CLIP model here, so "overall" is the mean of the four instead of 0.2 x five.
//
// Steps: boxes are normalised by each page's own width and height; blocks with identical boxes are
// merged; adjacent blocks (document order) are greedily merged on either side while the mean
// matched cost improves by more than 0.05; blocks are assigned by the Hungarian method on
// cost(i, j) = -ratio(text_i, text_j) with a context bonus of 0.1 x the two best costs among the
// neighbours within 1 row and column (only for pairs already similar beyond 0.5); pairs with a
// text ratio below 0.5 are dropped. Then, over the matched pairs M and unmatched blocks U:
//   block    = sum_M (S(r)+S(g)) / (sum_M (S(r)+S(g)) + sum_U S),  S = normalised area
//   text     = mean_M SequenceMatcher ratio
//   position = mean_M 1 - max(|dx|, |dy|) of the normalised box centres
//   color    = mean_M max(0, 1 - CIEDE2000(Lab(rgb_r), Lab(rgb_g)) / 100)   (sRGB, D65)
// With no match all four are 0. The merge step (one assignment per candidate merge) is skipped
// when a side has more than 64 blocks, so that long pages stay fast.
#include <array>
#include <vector>

#include "agent/eval/page_blocks.h"

namespace iris::agent::eval {

struct Design2CodeScores {
    double block = 0;
    double text = 0;
    double position = 0;
    double color = 0;
    double overall = 0;  // mean of the four
    int matched = 0;
    int unmatchedCandidate = 0;
    int unmatchedReference = 0;
};

Design2CodeScores design2codeScores(const PageTextBlocks& candidate,
                                    const PageTextBlocks& reference);

// CIE L*a*b* (D65 white) of an 8-bit sRGB colour.
std::array<double, 3> srgbToLab(int r, int g, int b);
// CIEDE2000 colour difference (Sharma, Wu, Dalal 2005) with kL = kC = kH = 1.
double ciede2000(const std::array<double, 3>& lab1, const std::array<double, 3>& lab2);

// Minimum-cost assignment of a rows x cols cost matrix (row-major), rectangular allowed: for each
// row the assigned column or -1 (more rows than columns). Same optimum as scipy's
// linear_sum_assignment.
std::vector<int> hungarianAssign(const std::vector<double>& cost, int rows, int cols);

}  // namespace iris::agent::eval
