#include "agent/visual/visual_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include <opencv2/imgproc.hpp>

#include "agent/visual/ssim.h"

namespace iris::agent {
namespace {

constexpr unsigned kPadNoiseSeed = 0x1215u;

// Both images on one canvas, with masks of the pixels each really covers.
struct Aligned {
    cv::Mat render;
    cv::Mat target;
    cv::Mat renderValid;  // CV_8UC1, 255 where the render has a pixel
    cv::Mat targetValid;
};

Status checkImage(const cv::Mat& image, const char* name) {
    if (image.empty()) return Status::invalidArgument(std::string(name) + " image is empty");
    if (image.type() != CV_8UC3) {
        return Status::invalidArgument(std::string(name) +
                                       " image must be 8-bit BGR (CV_8UC3), got " +
                                       cv::typeToString(image.type()));
    }
    return Status::ok();
}

Status checkOptions(const CompareOptions& o) {
    if (o.gridRows < 1 || o.gridCols < 1) {
        return Status::invalidArgument("gridRows and gridCols must be at least 1");
    }
    if (o.pixelThreshold < 0 || o.pixelThreshold > 254) {
        return Status::invalidArgument("pixelThreshold must be in 0..254");
    }
    if (o.mergeRadius < 0 || o.minBoxPixels < 1 || o.maxBoxes < 0) {
        return Status::invalidArgument(
            "mergeRadius must be >= 0, minBoxPixels >= 1 and maxBoxes >= 0");
    }
    if (!(o.ssimWeight >= 0 && o.ssimWeight <= 1)) {
        return Status::invalidArgument("ssimWeight must be in [0, 1]");
    }
    return Status::ok();
}

cv::Mat onCanvas(const cv::Mat& image, cv::Size canvas, cv::Mat& valid) {
    cv::Mat out(canvas, CV_8UC3);
    cv::RNG rng(kPadNoiseSeed);
    rng.fill(out, cv::RNG::UNIFORM, 0, 256);
    image.copyTo(out(cv::Rect(0, 0, image.cols, image.rows)));
    valid = cv::Mat::zeros(canvas, CV_8UC1);
    valid(cv::Rect(0, 0, image.cols, image.rows)).setTo(255);
    return out;
}

Result<Aligned> align(const cv::Mat& render, const cv::Mat& target, const CompareOptions& options) {
    IRIS_RETURN_IF_ERROR(checkImage(render, "render"));
    IRIS_RETURN_IF_ERROR(checkImage(target, "target"));
    IRIS_RETURN_IF_ERROR(checkOptions(options));
    Aligned a;
    if (options.sizePolicy == SizePolicy::ResizeRenderToTarget || render.size() == target.size()) {
        a.target = target;
        if (render.size() == target.size()) {
            a.render = render;
        } else {
            const bool shrinking = render.cols > target.cols || render.rows > target.rows;
            cv::resize(render, a.render, target.size(), 0, 0,
                       shrinking ? cv::INTER_AREA : cv::INTER_LINEAR);
        }
        a.renderValid = cv::Mat(target.size(), CV_8UC1, cv::Scalar(255));
        a.targetValid = a.renderValid;
    } else {
        const cv::Size canvas(std::max(render.cols, target.cols),
                              std::max(render.rows, target.rows));
        a.render = onCanvas(render, canvas, a.renderValid);
        a.target = onCanvas(target, canvas, a.targetValid);
    }
    if (a.target.rows < kSsimWindow || a.target.cols < kSsimWindow) {
        return Status::invalidArgument("compared area " + std::to_string(a.target.cols) + "x" +
                                       std::to_string(a.target.rows) + " is smaller than the " +
                                       std::to_string(kSsimWindow) + "x" +
                                       std::to_string(kSsimWindow) + " SSIM window");
    }
    return a;
}

std::string fixed(double value, int digits) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
    return buffer;
}

Rgb toRgb(const cv::Scalar& bgr) {
    return {static_cast<int>(std::lround(bgr[2])), static_cast<int>(std::lround(bgr[1])),
            static_cast<int>(std::lround(bgr[0]))};
}

std::string rgbText(Rgb c) {
    return "rgb(" + std::to_string(c.r) + "," + std::to_string(c.g) + "," + std::to_string(c.b) +
           ")";
}

std::string spanText(const cv::Rect& r) {
    return "x " + std::to_string(r.x) + "-" + std::to_string(r.x + r.width) + " y " +
           std::to_string(r.y) + "-" + std::to_string(r.y + r.height);
}

// "top left", "middle", "bottom right": where the centre of `r` falls in thirds of the area.
std::string placeText(const cv::Rect& r, cv::Size area) {
    const double cx = (r.x + r.width / 2.0) / area.width;
    const double cy = (r.y + r.height / 2.0) / area.height;
    const char* vertical = cy < 1.0 / 3 ? "top" : cy < 2.0 / 3 ? "middle" : "bottom";
    const char* horizontal = cx < 1.0 / 3 ? "left" : cx < 2.0 / 3 ? "centre" : "right";
    if (std::string(vertical) == "middle") {
        return std::string(horizontal) == "centre" ? "middle" : "middle " + std::string(horizontal);
    }
    return std::string(vertical) + " " + horizontal;
}

double meanOverChannels(const cv::Scalar& s) {
    return (s[0] + s[1] + s[2]) / 3;
}

// Mean of the SSIM windows centred in `cell`; a cell too close to the border for any centre
// takes the nearest row or column of centres.
double cellSsim(const cv::Mat& map, const cv::Rect& cell) {
    const int half = kSsimWindow / 2;
    auto range = [&](int begin, int end, int mapSize) {
        int lo = std::clamp(begin - half, 0, mapSize - 1);
        int hi = std::clamp(end - half, 0, mapSize);
        if (hi <= lo) hi = lo + 1;
        return cv::Range(lo, hi);
    };
    const cv::Range rows = range(cell.y, cell.y + cell.height, map.rows);
    const cv::Range cols = range(cell.x, cell.x + cell.width, map.cols);
    return cv::mean(map(rows, cols))[0];
}

DiffKind classify(const Aligned& a, const cv::Mat& renderLuma, const cv::Mat& targetLuma,
                  const cv::Rect& rect, const cv::Mat& differing, int count) {
    const cv::Mat outsideRender = differing & ~a.renderValid(rect);
    const cv::Mat outsideTarget = differing & ~a.targetValid(rect);
    if (cv::countNonZero(outsideRender) * 2 > count) return DiffKind::OutsideRender;
    if (cv::countNonZero(outsideTarget) * 2 > count) return DiffKind::OutsideTarget;

    cv::Scalar renderMean, renderStd, targetMean, targetStd;
    cv::meanStdDev(renderLuma(rect), renderMean, renderStd, a.renderValid(rect));
    cv::meanStdDev(targetLuma(rect), targetMean, targetStd, a.targetValid(rect));
    constexpr double kFlat = 6;  // luma standard deviation below which an area has no detail
    if (renderStd[0] < kFlat && targetStd[0] > 2 * renderStd[0] + kFlat) {
        return DiffKind::MissingInRender;
    }
    if (targetStd[0] < kFlat && renderStd[0] > 2 * targetStd[0] + kFlat) {
        return DiffKind::ExtraInRender;
    }
    const double renderDiffLuma = cv::mean(renderLuma(rect), differing)[0];
    const double targetDiffLuma = cv::mean(targetLuma(rect), differing)[0];
    if (renderDiffLuma < targetDiffLuma - 24) return DiffKind::Darker;
    if (renderDiffLuma > targetDiffLuma + 24) return DiffKind::Lighter;
    const cv::Scalar renderColour = cv::mean(a.render(rect), differing);
    const cv::Scalar targetColour = cv::mean(a.target(rect), differing);
    if (cv::norm(renderColour - targetColour) > 24) return DiffKind::ColourDiffers;
    return DiffKind::ContentDiffers;
}

std::vector<DiffBox> findBoxes(const Aligned& a, const cv::Mat& differing,
                               const cv::Mat& renderLuma, const cv::Mat& targetLuma,
                               const CompareOptions& options) {
    cv::Mat merged = differing;
    if (options.mergeRadius > 0) {
        const int size = 2 * options.mergeRadius + 1;
        cv::morphologyEx(differing, merged, cv::MORPH_CLOSE,
                         cv::getStructuringElement(cv::MORPH_RECT, cv::Size(size, size)));
    }
    cv::Mat labels, stats, centroids;
    const int count = cv::connectedComponentsWithStats(merged, labels, stats, centroids, 8, CV_32S);
    std::vector<DiffBox> boxes;
    for (int label = 1; label < count; ++label) {
        const cv::Rect rect(
            stats.at<int>(label, cv::CC_STAT_LEFT), stats.at<int>(label, cv::CC_STAT_TOP),
            stats.at<int>(label, cv::CC_STAT_WIDTH), stats.at<int>(label, cv::CC_STAT_HEIGHT));
        const cv::Mat mine = differing(rect) & (labels(rect) == label);
        const int pixels = cv::countNonZero(mine);
        if (pixels < options.minBoxPixels) continue;
        DiffBox box;
        box.rect = rect;
        box.differingPixels = pixels;
        box.kind = classify(a, renderLuma, targetLuma, rect, mine, pixels);
        box.renderColour = toRgb(cv::mean(a.render(rect), mine & a.renderValid(rect)));
        box.targetColour = toRgb(cv::mean(a.target(rect), mine & a.targetValid(rect)));
        boxes.push_back(box);
    }
    std::sort(boxes.begin(), boxes.end(), [](const DiffBox& l, const DiffBox& r) {
        if (l.differingPixels != r.differingPixels) return l.differingPixels > r.differingPixels;
        if (l.rect.y != r.rect.y) return l.rect.y < r.rect.y;
        return l.rect.x < r.rect.x;
    });
    if (boxes.size() > static_cast<std::size_t>(options.maxBoxes)) {
        boxes.resize(static_cast<std::size_t>(options.maxBoxes));
    }
    return boxes;
}

std::string sizeText(const VisualComparison& c, SizePolicy policy) {
    if (c.renderSize == c.targetSize) return {};
    auto size = [](cv::Size s) { return std::to_string(s.width) + "x" + std::to_string(s.height); };
    std::string text =
        "Sizes differ: render " + size(c.renderSize) + ", target " + size(c.targetSize) + ".";
    if (policy == SizePolicy::ResizeRenderToTarget) {
        return text + " The render was resized to the target's size for comparison.\n";
    }
    auto along = [&](int render, int target, const char* less, const char* more) -> std::string {
        if (render == target) return {};
        return " The render is " + std::to_string(std::abs(render - target)) + " px " +
               (render < target ? less : more) + ".";
    };
    text += along(c.renderSize.height, c.targetSize.height, "shorter", "taller");
    text += along(c.renderSize.width, c.targetSize.width, "narrower", "wider");
    return text + " Compared top-left aligned; area only one image covers counts as different.\n";
}

std::string summarize(const VisualComparison& c, const CompareOptions& options) {
    std::string text = "similarity " + fixed(c.score, 3) + " (SSIM " + fixed(c.ssim, 3) +
                       ", mean abs diff " + fixed(c.meanAbsDiff, 1) + "/255, " +
                       fixed(100 * c.differingFraction, 1) + "% of pixels differ).\n";
    text += sizeText(c, options.sizePolicy);
    if (c.boxes.empty() && c.differingFraction == 0) {
        return text + "No visible differences.\n";
    }

    std::vector<std::size_t> order(c.regions.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t l, std::size_t r) {
        return c.regions[l].ssim < c.regions[r].ssim;
    });
    std::string cells;
    int listed = 0;
    for (std::size_t index : order) {
        const RegionDiff& region = c.regions[index];
        if (listed == 3 || (region.ssim > 0.98 && region.meanAbsDiff < 2)) break;
        cells += (listed++ == 0 ? "" : "; ") + placeText(region.rect, c.comparedSize) + " (" +
                 spanText(region.rect) + "): SSIM " + fixed(region.ssim, 2) + ", mean diff " +
                 fixed(region.meanAbsDiff, 0);
    }
    if (!cells.empty()) text += "Worst grid cells: " + cells + ".\n";

    if (!c.boxes.empty()) text += "Differing areas, largest first:\n";
    for (std::size_t i = 0; i < c.boxes.size(); ++i) {
        const DiffBox& box = c.boxes[i];
        text += std::to_string(i + 1) + ") " + spanText(box.rect) + " (" +
                placeText(box.rect, c.comparedSize) + ", " + std::to_string(box.rect.width) + "x" +
                std::to_string(box.rect.height) + " px): " + diffKindPhrase(box.kind);
        if (box.kind == DiffKind::OutsideRender) {
            text += "; target colour " + rgbText(box.targetColour);
        } else if (box.kind == DiffKind::OutsideTarget) {
            text += "; render colour " + rgbText(box.renderColour);
        } else {
            text +=
                "; render " + rgbText(box.renderColour) + " vs target " + rgbText(box.targetColour);
        }
        text += ".\n";
    }
    return text;
}

}  // namespace

const char* diffKindPhrase(DiffKind kind) {
    switch (kind) {
        case DiffKind::MissingInRender:
            return "content missing in the render";
        case DiffKind::ExtraInRender:
            return "extra content in the render";
        case DiffKind::Darker:
            return "render is darker";
        case DiffKind::Lighter:
            return "render is lighter";
        case DiffKind::ColourDiffers:
            return "colour differs";
        case DiffKind::ContentDiffers:
            return "content differs (text, shape or position)";
        case DiffKind::OutsideRender:
            return "the target continues past the render's edge";
        case DiffKind::OutsideTarget:
            return "the render continues past the target's edge";
    }
    return "differs";
}

Result<VisualComparison> compareRenders(const cv::Mat& render, const cv::Mat& target,
                                        const CompareOptions& options) {
    Result<Aligned> aligned = align(render, target, options);
    if (!aligned) return aligned.status();
    const Aligned& a = *aligned;

    VisualComparison c;
    c.renderSize = render.size();
    c.targetSize = target.size();
    c.comparedSize = a.target.size();

    const cv::Mat renderLuma = lumaOf(a.render);
    const cv::Mat targetLuma = lumaOf(a.target);
    const cv::Mat map = ssimMap(renderLuma, targetLuma);
    c.ssim = cv::mean(map)[0];

    cv::Mat absDiff;
    cv::absdiff(a.render, a.target, absDiff);
    c.meanAbsDiff = meanOverChannels(cv::mean(absDiff));
    cv::Mat maxDiff = absDiff.reshape(1, absDiff.rows * absDiff.cols);
    cv::reduce(maxDiff, maxDiff, 1, cv::REDUCE_MAX);
    maxDiff = maxDiff.reshape(1, absDiff.rows);
    const cv::Mat differing = maxDiff > options.pixelThreshold;
    c.differingFraction =
        static_cast<double>(cv::countNonZero(differing)) / static_cast<double>(differing.total());
    c.score = options.ssimWeight * std::max(c.ssim, 0.0) +
              (1 - options.ssimWeight) * (1 - c.meanAbsDiff / 255);

    const int rows = std::min(options.gridRows, c.comparedSize.height);
    const int cols = std::min(options.gridCols, c.comparedSize.width);
    for (int r = 0; r < rows; ++r) {
        for (int col = 0; col < cols; ++col) {
            const int x0 = col * c.comparedSize.width / cols;
            const int x1 = (col + 1) * c.comparedSize.width / cols;
            const int y0 = r * c.comparedSize.height / rows;
            const int y1 = (r + 1) * c.comparedSize.height / rows;
            RegionDiff region;
            region.rect = cv::Rect(x0, y0, x1 - x0, y1 - y0);
            region.ssim = cellSsim(map, region.rect);
            region.meanAbsDiff = meanOverChannels(cv::mean(absDiff(region.rect)));
            c.regions.push_back(region);
        }
    }
    c.boxes = findBoxes(a, differing, renderLuma, targetLuma, options);
    c.summary = summarize(c, options);
    return c;
}

Result<cv::Mat> diffImage(const cv::Mat& render, const cv::Mat& target,
                          const VisualComparison& comparison, const CompareOptions& options) {
    Result<Aligned> aligned = align(render, target, options);
    if (!aligned) return aligned.status();
    const Aligned& a = *aligned;
    if (render.size() != comparison.renderSize || target.size() != comparison.targetSize ||
        a.target.size() != comparison.comparedSize) {
        return Status::invalidArgument(
            "the comparison was made for images of other sizes (render " +
            std::to_string(comparison.renderSize.width) + "x" +
            std::to_string(comparison.renderSize.height) + ", target " +
            std::to_string(comparison.targetSize.width) + "x" +
            std::to_string(comparison.targetSize.height) + ")");
    }
    cv::Mat grey;
    cv::cvtColor(a.target, grey, cv::COLOR_BGR2GRAY);
    grey.convertTo(grey, CV_8U, 0.5, 96);  // dimmed so the heat map stands out
    cv::Mat out;
    cv::cvtColor(grey, out, cv::COLOR_GRAY2BGR);

    cv::Mat absDiff;
    cv::absdiff(a.render, a.target, absDiff);
    cv::Mat maxDiff = absDiff.reshape(1, absDiff.rows * absDiff.cols);
    cv::reduce(maxDiff, maxDiff, 1, cv::REDUCE_MAX);
    maxDiff = maxDiff.reshape(1, absDiff.rows);
    maxDiff.setTo(255, ~(a.renderValid & a.targetValid));  // padding: wholly different, not noise
    cv::Mat heat;
    cv::applyColorMap(maxDiff, heat, cv::COLORMAP_JET);
    cv::Mat blended;
    cv::addWeighted(out, 0.35, heat, 0.65, 0, blended);
    blended.copyTo(out, maxDiff > options.pixelThreshold);

    const cv::Scalar magenta(255, 0, 255);
    for (std::size_t i = 0; i < comparison.boxes.size(); ++i) {
        const cv::Rect& rect = comparison.boxes[i].rect;
        cv::rectangle(out, rect, magenta, 2);
        cv::putText(out, std::to_string(i + 1), cv::Point(rect.x + 3, std::max(rect.y - 4, 12)),
                    cv::FONT_HERSHEY_SIMPLEX, 0.5, magenta, 1, cv::LINE_8);
    }
    return out;
}

PixelDifference pixelDifference(const cv::Mat& a, const cv::Mat& b) {
    PixelDifference d;
    if (a.size() != b.size() || a.type() != b.type()) {
        d.sameSize = false;
        d.changedShare = 1;
        return d;
    }
    if (a.empty()) return d;
    cv::Mat absolute;
    cv::absdiff(a, b, absolute);
    const cv::Scalar mean = cv::mean(absolute);
    const int channels = a.channels();
    for (int c = 0; c < channels; ++c)
        d.meanAbsolute += mean[c] / channels;
    // A pixel differs when any of its channels does.
    cv::Mat anyChannel = absolute.reshape(1, int(absolute.total()));
    cv::reduce(anyChannel, anyChannel, 1, cv::REDUCE_MAX);
    d.changedShare = double(cv::countNonZero(anyChannel)) / double(absolute.total());
    return d;
}

}  // namespace iris::agent
