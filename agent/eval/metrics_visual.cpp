// Image metrics (OSWorld's compare_images and check_structure_sim*, on Iris's SSIM) and Iris's
// design2code over page text blocks.
#include <algorithm>
#include <filesystem>
#include <system_error>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "agent/eval/design2code.h"
#include "agent/eval/metric_support.h"
#include "agent/visual/ssim.h"

namespace iris::agent::eval::metric {

// --- images -------------------------------------------------------------------------------------

namespace {

// Greyscale 8-bit image of a value: an image file path or a BGR image; empty when the value is
// falsy; an error when a path cannot be read.
Result<cv::Mat> greyOf(const Value& v) {
    cv::Mat bgr;
    if (std::holds_alternative<cv::Mat>(v.data)) {
        bgr = std::get<cv::Mat>(v.data);
    } else if (auto path = pathOf(v)) {
        std::error_code ec;
        if (!std::filesystem::is_regular_file(*path, ec)) {
            return Status::invalidArgument(*path + ": no such image file");
        }
        bgr = cv::imread(*path, cv::IMREAD_COLOR);
        if (bgr.empty()) return Status::invalidArgument(*path + ": not a readable image");
    } else {
        return cv::Mat();
    }
    // A context may hand over BGRA (a QImage's ARGB32) or grey; alpha is ignored as PIL's
    // convert('L') ignores it.
    if (bgr.type() == CV_8UC4) {
        cv::cvtColor(bgr, bgr, cv::COLOR_BGRA2BGR);
    } else if (bgr.type() == CV_8UC1) {
        cv::cvtColor(bgr, bgr, cv::COLOR_GRAY2BGR);
    }
    if (bgr.type() != CV_8UC3)
        return Status::invalidArgument("images must be 8-bit BGR, BGRA or grey");
    cv::Mat grey;
    iris::agent::lumaOf(bgr).convertTo(grey, CV_8U);  // rounds, as PIL's convert('L')
    return grey;
}

}  // namespace

namespace {

double meanSsim(const cv::Mat& a8, const cv::Mat& b8) {
    cv::Mat a, b;
    a8.convertTo(a, CV_64F);
    b8.convertTo(b, CV_64F);
    return cv::mean(iris::agent::ssimMap(a, b))[0];
}

}  // namespace

namespace {

bool tooSmall(const cv::Mat& m) {
    return m.rows < kSsimWindow || m.cols < kSsimWindow;
}

}  // namespace

Result<double> compareImages(const Value& result, const Value* expected, const json& options,
                             MetricDetail& detail) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {"reference_base_result"}, "compare_images"));
    if (expected == nullptr)
        return Status::invalidArgument("compare_images needs an expected image");
    auto a = greyOf(result);
    if (!a) return a.status();
    auto b = greyOf(*expected);
    if (!b) return b.status();
    if (a->empty() || b->empty()) return 0.0;
    // PIL compares (width, height) tuples: the smaller width wins, height breaks ties.
    const cv::Size sa = a->size(), sb = b->size();
    const bool aSmaller = sa.width < sb.width || (sa.width == sb.width && sa.height <= sb.height);
    const cv::Size size = aSmaller ? sa : sb;
    cv::Mat ra = *a, rb = *b;
    if (ra.size() != size) cv::resize(*a, ra, size, 0, 0, cv::INTER_LANCZOS4);
    if (rb.size() != size) cv::resize(*b, rb, size, 0, 0, cv::INTER_LANCZOS4);
    if (tooSmall(ra)) {
        detail.note = "image smaller than the SSIM window";
        return 0.0;
    }
    const double ssim = meanSsim(ra, rb);
    detail.parts.emplace_back("ssim", ssim);
    auto base = options.find("reference_base_result");
    if (base == options.end() || base->is_null()) return std::clamp(ssim, 0.0, 1.0);
    if (!base->is_number())
        return Status::invalidArgument("compare_images: reference_base_result must be a number");
    const double b0 = base->get<double>();
    constexpr double kEpsilon = 0.01;
    if (ssim >= b0 + kEpsilon && b0 < 1) return (ssim - b0) / (1 - b0);
    return 0.0;
}

namespace {

Result<double> structureSim(const Value& result, const Value* expected, double threshold,
                            MetricDetail& detail) {
    if (expected == nullptr)
        return Status::invalidArgument("check_structure_sim needs an expected image");
    auto a = greyOf(result);
    if (!a) return a.status();
    auto b = greyOf(*expected);
    if (!b) return b.status();
    if (a->empty() || b->empty()) return 0.0;
    if (a->size() != b->size() || tooSmall(*a)) return 0.0;
    const double ssim = meanSsim(*a, *b);
    detail.parts.emplace_back("ssim", ssim);
    return ssim >= threshold ? 1.0 : 0.0;
}

}  // namespace

Result<double> checkStructureSim(const Value& result, const Value* expected, const json& options,
                                 MetricDetail& detail) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {}, "check_structure_sim"));
    return structureSim(result, expected, 0.9, detail);
}

Result<double> checkStructureSimWithThreshold(const Value& result, const Value* expected,
                                              const json& options, MetricDetail& detail) {
    IRIS_RETURN_IF_ERROR(
        onlyOptions(options, {"ssim_threshold"}, "check_structure_sim_with_threshold"));
    const json t = options.value("ssim_threshold", json(0.85));
    if (!t.is_number())
        return Status::invalidArgument(
            "check_structure_sim_with_threshold: ssim_threshold must be a number");
    return structureSim(result, expected, t.get<double>(), detail);
}

// --- design2code --------------------------------------------------------------------------------

namespace {

Result<PageTextBlocks> blocksOf(const Value& v, const char* which) {
    if (std::holds_alternative<PageTextBlocks>(v.data)) return std::get<PageTextBlocks>(v.data);
    if (!v.isJson())
        return Status::invalidArgument(std::string("design2code: the ") + which +
                                       " is not text blocks");
    json j = v.json();
    if (j.is_string()) {  // a .json file (cloud_file, vm_file)
        auto text = readText(j.get<std::string>());
        if (!text) return text.status();
        j = json::parse(*text, nullptr, false);
        if (j.is_discarded())
            return Status::invalidArgument(v.json().get<std::string>() + ": not valid JSON");
    }
    auto blocks = pageTextBlocksFromJson(j);
    if (!blocks)
        return blocks.status().withContext(std::string("design2code: the ") + which + ": ");
    return blocks;
}

}  // namespace

Result<double> design2code(const Value& result, const Value* expected, const json& options,
                           MetricDetail& detail) {
    IRIS_RETURN_IF_ERROR(onlyOptions(options, {"metric", "pass_threshold"}, "design2code"));
    if (expected == nullptr)
        return Status::invalidArgument("design2code needs the reference page's blocks");
    auto candidate = blocksOf(result, "result");
    if (!candidate) return candidate.status();
    auto reference = blocksOf(*expected, "expected value");
    if (!reference) return reference.status();
    const Design2CodeScores s = design2codeScores(*candidate, *reference);
    detail.parts = {{"block", s.block},
                    {"text", s.text},
                    {"position", s.position},
                    {"color", s.color},
                    {"overall", s.overall}};
    detail.note = std::to_string(s.matched) + " matched, " + std::to_string(s.unmatchedCandidate) +
                  " extra, " + std::to_string(s.unmatchedReference) + " missing blocks";
    const std::string metric = options.value("metric", "overall");
    double score = 0;
    if (metric == "overall") {
        score = s.overall;
    } else if (metric == "block") {
        score = s.block;
    } else if (metric == "text") {
        score = s.text;
    } else if (metric == "position") {
        score = s.position;
    } else if (metric == "color") {
        score = s.color;
    } else {
        return Status::invalidArgument("design2code: metric \"" + metric +
                                       "\" is not one of overall, block, text, position, color");
    }
    if (auto t = options.find("pass_threshold"); t != options.end() && !t->is_null()) {
        if (!t->is_number())
            return Status::invalidArgument("design2code: pass_threshold must be a number");
        return score >= t->get<double>() ? 1.0 : 0.0;
    }
    return score;
}

}  // namespace iris::agent::eval::metric
