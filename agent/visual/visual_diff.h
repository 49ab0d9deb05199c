#pragma once
// How a render differs from its target, as numbers the loop can gate on (score) and as text a
// model can act on (summary: where, how big, which colours). Deterministic: the same two images
// always give the same result, bit for bit.
#include <string>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "base/status.h"

namespace iris::agent {

// Full-page captures differ in height whenever the layout does. Padding keeps both pages
// top-left aligned, so a block that sits 40 px too low is reported there instead of the whole page
// shifting as a resize would make it; the padded area is filled with fixed-seed noise (as
// DesignBench pads for MAE, docs/webloop.md §2.2) so that a missing strip never matches a blank
// one. Resizing suits a render at another device pixel ratio of the same layout.
enum class SizePolicy { PadWithNoise, ResizeRenderToTarget };

struct CompareOptions {
    SizePolicy sizePolicy = SizePolicy::PadWithNoise;
    int gridRows = 4;
    int gridCols = 4;
    int pixelThreshold = 24;  // a pixel differs when a channel differs by more than this (0-255)
    int mergeRadius = 6;      // differing pixels this close (px) merge into one box
    int minBoxPixels = 20;    // boxes with fewer differing pixels are noise (anti-aliasing)
    int maxBoxes = 8;
    double ssimWeight = 0.75;  // in score, see VisualComparison::score
};

struct Rgb {
    int r = 0;
    int g = 0;
    int b = 0;
};

// One cell of the grid laid over the compared area.
struct RegionDiff {
    cv::Rect rect;
    double ssim = 1;         // mean of the SSIM windows centred in the cell
    double meanAbsDiff = 0;  // over the cell's pixels and channels, 0-255
};

enum class DiffKind {
    MissingInRender,  // the target has detail where the render is flat
    ExtraInRender,    // the render has detail where the target is flat
    Darker,           // the render is darker there
    Lighter,          // the render is lighter there
    ColourDiffers,    // similar brightness, another colour
    ContentDiffers,   // both have detail, and it differs (text, layout, position)
    OutsideRender,    // the target continues past the render's edge
    OutsideTarget,    // the render continues past the target's edge
};

// A connected area of differing pixels.
struct DiffBox {
    cv::Rect rect;  // in compared-area pixels (target pixels; top-left aligned when padded)
    int differingPixels = 0;
    DiffKind kind = DiffKind::ContentDiffers;
    Rgb renderColour;  // mean colour of the differing pixels, in the render and in the target
    Rgb targetColour;
};

struct VisualComparison {
    cv::Size renderSize;
    cv::Size targetSize;
    cv::Size comparedSize;         // the target's size, or the larger of both sizes when padded
    double ssim = 1;               // mean SSIM on luma (see ssim.h) over the compared area
    double meanAbsDiff = 0;        // mean |render - target| over pixels and channels, 0-255
    double differingFraction = 0;  // share of pixels over the threshold
    // ssimWeight * max(ssim, 0) + (1 - ssimWeight) * (1 - meanAbsDiff / 255): 1 only for
    // identical images, rising with SSIM and falling with the difference. SSIM sees structure
    // but not hue; the absolute difference sees colour. Keep a revision only if this rises.
    double score = 1;
    std::vector<RegionDiff> regions;  // gridRows x gridCols, row-major
    std::vector<DiffBox> boxes;       // most differing pixels first, at most maxBoxes
    std::string summary;              // a few lines of text for the model
};

// `render` and `target` are 8-bit BGR (CV_8UC3) of any sizes whose compared area is at least
// 11x11; anything else is an InvalidArgument naming the image and what is wrong.
Result<VisualComparison> compareRenders(const cv::Mat& render, const cv::Mat& target,
                                        const CompareOptions& options = {});

// A picture of the comparison for the GUI and recordings: the target in dimmed grey with the
// per-pixel difference as a heat map over it and the boxes outlined and numbered as in the
// summary. Same compared size as `comparison`.
Result<cv::Mat> diffImage(const cv::Mat& render, const cv::Mat& target,
                          const VisualComparison& comparison, const CompareOptions& options = {});

// "content missing in the render", ...: the phrase the summary uses.
const char* diffKindPhrase(DiffKind kind);

// Exact pixel agreement of two screenshots, as replay checks it: a deterministic environment
// gives identical pixels, so any change at all is counted (no threshold, unlike compareRenders).
struct PixelDifference {
    bool sameSize = true;     // same size and type; otherwise changedShare is 1
    double changedShare = 0;  // of pixels with any channel differing
    double meanAbsolute = 0;  // per channel, 0..255
};
PixelDifference pixelDifference(const cv::Mat& a, const cv::Mat& b);

}  // namespace iris::agent
