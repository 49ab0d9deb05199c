#include "agent/visual/visual_diff.h"

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "agent/visual/ssim.h"

namespace iris::agent {
namespace {

// SSIM straight from Wang et al. (2004), in float64 with plain loops: the 11x11 Gaussian
// (sigma 1.5) built here, each whole window's weighted moments summed directly. Returns the map
// of window values, (rows - 10) x (cols - 10).
std::vector<std::vector<double>> referenceSsimMap(const cv::Mat& a, const cv::Mat& b) {
    auto luma = [](const cv::Mat& image, int y, int x) {
        const cv::Vec3b p = image.at<cv::Vec3b>(y, x);
        return 0.299 * p[2] + 0.587 * p[1] + 0.114 * p[0];
    };
    double weights[11][11];
    double total = 0;
    for (int i = 0; i < 11; ++i) {
        for (int j = 0; j < 11; ++j) {
            weights[i][j] = std::exp(-((i - 5) * (i - 5) + (j - 5) * (j - 5)) / (2 * 1.5 * 1.5));
            total += weights[i][j];
        }
    }
    const double c1 = std::pow(0.01 * 255, 2);
    const double c2 = std::pow(0.03 * 255, 2);
    std::vector<std::vector<double>> map(
        static_cast<std::size_t>(a.rows - 10),
        std::vector<double>(static_cast<std::size_t>(a.cols - 10)));
    for (int y = 0; y + 11 <= a.rows; ++y) {
        for (int x = 0; x + 11 <= a.cols; ++x) {
            double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
            for (int i = 0; i < 11; ++i) {
                for (int j = 0; j < 11; ++j) {
                    const double w = weights[i][j] / total;
                    const double u = luma(a, y + i, x + j);
                    const double v = luma(b, y + i, x + j);
                    mx += w * u;
                    my += w * v;
                    sxx += w * u * u;
                    syy += w * v * v;
                    sxy += w * u * v;
                }
            }
            sxx -= mx * mx;
            syy -= my * my;
            sxy -= mx * my;
            map[static_cast<std::size_t>(y)][static_cast<std::size_t>(x)] =
                ((2 * mx * my + c1) * (2 * sxy + c2)) /
                ((mx * mx + my * my + c1) * (sxx + syy + c2));
        }
    }
    return map;
}

double referenceSsim(const cv::Mat& a, const cv::Mat& b) {
    const auto map = referenceSsimMap(a, b);
    double sum = 0;
    std::size_t count = 0;
    for (const auto& row : map) {
        for (double v : row) {
            sum += v;
            ++count;
        }
    }
    return sum / static_cast<double>(count);
}

cv::Mat noise(cv::Size size, unsigned seed) {
    cv::Mat image(size, CV_8UC3);
    cv::RNG rng(seed);
    rng.fill(image, cv::RNG::UNIFORM, 0, 256);
    return image;
}

// A synthetic page: header bar, text-like stripes, a coloured button, on white.
cv::Mat page(cv::Size size) {
    cv::Mat image(size, CV_8UC3, cv::Scalar(255, 255, 255));
    cv::rectangle(image, cv::Rect(0, 0, size.width, size.height / 8), cv::Scalar(80, 40, 20),
                  cv::FILLED);
    for (int y = size.height / 4; y < size.height * 3 / 4; y += 14) {
        cv::rectangle(image, cv::Rect(size.width / 10, y, size.width / 2, 6),
                      cv::Scalar(30, 30, 30), cv::FILLED);
    }
    cv::rectangle(image, cv::Rect(size.width * 7 / 10, size.height / 3, size.width / 5, 30),
                  cv::Scalar(40, 160, 40), cv::FILLED);
    return image;
}

cv::Mat shifted(const cv::Mat& image, int dx, int dy) {
    cv::Mat out(image.size(), image.type(), cv::Scalar(255, 255, 255));
    const cv::Mat m = (cv::Mat_<double>(2, 3) << 1, 0, dx, 0, 1, dy);
    cv::warpAffine(image, out, m, image.size(), cv::INTER_NEAREST, cv::BORDER_CONSTANT,
                   cv::Scalar(255, 255, 255));
    return out;
}

VisualComparison compare(const cv::Mat& render, const cv::Mat& target,
                         const CompareOptions& options = {}) {
    Result<VisualComparison> c = compareRenders(render, target, options);
    EXPECT_TRUE(c.isOk()) << c.status().message();
    return c.isOk() ? std::move(c).value() : VisualComparison{};
}

TEST(VisualDiff, SsimMatchesTheFloat64Reference) {
    const cv::Size size(97, 61);
    const cv::Mat base = page(size);
    cv::Mat noisy = base.clone();
    cv::Mat jitter(size, CV_8UC3);
    cv::RNG(5).fill(jitter, cv::RNG::UNIFORM, 0, 40);
    cv::subtract(noisy, jitter, noisy);
    cv::Mat recoloured = base.clone();
    recoloured.setTo(cv::Scalar(200, 230, 255), base == 255);  // tinted background
    const std::vector<std::pair<const char*, std::pair<cv::Mat, cv::Mat>>> cases = {
        {"random", {noise(size, 1), noise(size, 2)}},
        {"shifted", {shifted(base, 3, 2), base}},
        {"noise", {noisy, base}},
        {"colour", {recoloured, base}},
        {"structured vs random", {base, noise(size, 3)}},
        {"tall, several strips", {shifted(page(cv::Size(40, 600)), 1, 1), page(cv::Size(40, 600))}},
    };
    for (const auto& [name, images] : cases) {
        const VisualComparison c = compare(images.first, images.second);
        const double expected = referenceSsim(images.first, images.second);
        EXPECT_NEAR(c.ssim, expected, 1e-6 * std::abs(expected)) << name;
        EXPECT_LT(c.ssim, 0.999) << name;
    }
}

TEST(VisualDiff, GridCellSsimIsTheMeanOfItsWindowsInTheReference) {
    const cv::Size size(80, 64);
    const cv::Mat render = noise(size, 11);
    const cv::Mat target = page(size);
    const VisualComparison c = compare(render, target);
    const auto map = referenceSsimMap(render, target);
    ASSERT_EQ(c.regions.size(), 16u);
    for (const RegionDiff& region : c.regions) {
        double sum = 0;
        int count = 0;
        for (int y = std::max(region.rect.y, 5); y < std::min(region.rect.br().y, size.height - 5);
             ++y) {
            for (int x = std::max(region.rect.x, 5);
                 x < std::min(region.rect.br().x, size.width - 5); ++x) {
                sum += map[static_cast<std::size_t>(y - 5)][static_cast<std::size_t>(x - 5)];
                ++count;
            }
        }
        ASSERT_GT(count, 0);
        EXPECT_NEAR(region.ssim, sum / count, 1e-6 * std::abs(sum / count));
    }
}

TEST(VisualDiff, IdenticalImagesScoreOneWithNothingToReport) {
    const cv::Mat target = page(cv::Size(320, 200));
    const VisualComparison c = compare(target.clone(), target);
    EXPECT_NEAR(c.ssim, 1.0, 1e-12);
    EXPECT_EQ(c.meanAbsDiff, 0);
    EXPECT_NEAR(c.score, 1.0, 1e-12);
    EXPECT_TRUE(c.boxes.empty());
    EXPECT_NE(c.summary.find("No visible differences"), std::string::npos) << c.summary;
}

TEST(VisualDiff, ScoreFallsAsTheRenderDrifts) {
    const cv::Mat target = page(cv::Size(320, 200));
    double previous = 1.0;
    for (int shift : {1, 3, 8, 20}) {
        const double score = compare(shifted(target, 0, shift), target).score;
        EXPECT_LT(score, previous) << "shift " << shift;
        previous = score;
    }
}

TEST(VisualDiff, NamesTheRedBoxWithItsPlaceSizeAndColours) {
    const cv::Mat target = page(cv::Size(1280, 720));
    cv::Mat render = target.clone();
    const cv::Rect box(880, 520, 300, 120);  // on the white background, bottom right
    cv::rectangle(render, box, cv::Scalar(0, 0, 255), cv::FILLED);
    const VisualComparison c = compare(render, target);
    ASSERT_FALSE(c.boxes.empty()) << c.summary;
    EXPECT_EQ(c.boxes[0].rect, box);
    EXPECT_EQ(c.boxes[0].differingPixels, box.area());
    EXPECT_EQ(c.boxes[0].kind, DiffKind::Darker);
    EXPECT_EQ(c.boxes[0].renderColour.r, 255);
    EXPECT_EQ(c.boxes[0].renderColour.g, 0);
    EXPECT_EQ(c.boxes[0].targetColour.g, 255);
    EXPECT_EQ(c.boxes.size(), 1u);
    // The worst grid cell holds most of the box.
    const RegionDiff* worst = &c.regions[0];
    for (const RegionDiff& r : c.regions) {
        if (r.ssim < worst->ssim) worst = &r;
    }
    EXPECT_GT((worst->rect & box).area() * 4, box.area());
    EXPECT_NE(c.summary.find("x 880-1180 y 520-640 (bottom right, 300x120 px): render is darker; "
                             "render rgb(255,0,0) vs target rgb(255,255,255)"),
              std::string::npos)
        << c.summary;
    EXPECT_NE(c.summary.find("Worst grid cells: bottom right"), std::string::npos) << c.summary;
}

TEST(VisualDiff, FlatRenderWhereTheTargetHasTextIsMissingContent) {
    const cv::Mat target = page(cv::Size(640, 480));
    cv::Mat render = target.clone();
    const cv::Rect text(64, 120, 320, 240);  // covers the text stripes
    render(text).setTo(cv::Scalar(255, 255, 255));
    const VisualComparison c = compare(render, target);
    ASSERT_FALSE(c.boxes.empty());
    EXPECT_EQ(c.boxes[0].kind, DiffKind::MissingInRender) << c.summary;
    EXPECT_TRUE((c.boxes[0].rect & text) == c.boxes[0].rect);
    EXPECT_NE(c.summary.find("content missing in the render"), std::string::npos);

    const VisualComparison reverse = compare(target, render);
    ASSERT_FALSE(reverse.boxes.empty());
    EXPECT_EQ(reverse.boxes[0].kind, DiffKind::ExtraInRender) << reverse.summary;
}

TEST(VisualDiff, ShorterRenderIsPaddedAndTheMissingStripReported) {
    const cv::Mat target = page(cv::Size(400, 300));
    const cv::Mat render = target(cv::Rect(0, 0, 400, 220)).clone();
    const VisualComparison c = compare(render, target);
    EXPECT_EQ(c.comparedSize, cv::Size(400, 300));
    EXPECT_EQ(c.renderSize, cv::Size(400, 220));
    ASSERT_FALSE(c.boxes.empty());
    EXPECT_EQ(c.boxes[0].kind, DiffKind::OutsideRender);
    EXPECT_EQ(c.boxes[0].rect, cv::Rect(0, 220, 400, 80));
    EXPECT_NE(c.summary.find("The render is 80 px shorter"), std::string::npos) << c.summary;
    // The top, where both have pixels, is identical.
    EXPECT_EQ(c.regions[0].meanAbsDiff, 0);
    EXPECT_LT(c.score, 0.95);

    const VisualComparison taller = compare(target, render);
    ASSERT_FALSE(taller.boxes.empty());
    EXPECT_EQ(taller.boxes[0].kind, DiffKind::OutsideTarget);
}

TEST(VisualDiff, ResizePolicyComparesARenderAtTwiceTheScale) {
    const cv::Mat target = page(cv::Size(300, 200));
    cv::Mat render;
    cv::resize(target, render, cv::Size(600, 400), 0, 0, cv::INTER_NEAREST);
    CompareOptions options;
    options.sizePolicy = SizePolicy::ResizeRenderToTarget;
    const VisualComparison c = compare(render, target, options);
    EXPECT_EQ(c.comparedSize, target.size());
    EXPECT_NEAR(c.ssim, 1.0, 1e-9);
    EXPECT_NE(c.summary.find("resized"), std::string::npos);
}

TEST(VisualDiff, BadImagesAndOptionsAreErrorsThatNameTheProblem) {
    const cv::Mat good = page(cv::Size(64, 64));
    Result<VisualComparison> empty = compareRenders(cv::Mat(), good);
    EXPECT_NE(empty.status().message().find("render image is empty"), std::string::npos);
    cv::Mat grey(64, 64, CV_8UC1, cv::Scalar(0));
    Result<VisualComparison> wrongType = compareRenders(good, grey);
    EXPECT_NE(wrongType.status().message().find("target image must be 8-bit BGR"),
              std::string::npos);
    const cv::Mat tiny(8, 8, CV_8UC3, cv::Scalar(0, 0, 0));
    EXPECT_EQ(compareRenders(tiny, tiny).status().code(), StatusCode::InvalidArgument);
    CompareOptions options;
    options.gridRows = 0;
    EXPECT_FALSE(compareRenders(good, good, options).isOk());
}

TEST(VisualDiff, IsDeterministicAndDrawsADiffImage) {
    const cv::Mat target = page(cv::Size(640, 400));
    cv::Mat render = shifted(target, 0, 6)(cv::Rect(0, 0, 640, 360)).clone();
    cv::rectangle(render, cv::Rect(500, 40, 100, 60), cv::Scalar(0, 200, 255), cv::FILLED);
    const VisualComparison first = compare(render, target);
    const VisualComparison second = compare(render, target);
    EXPECT_EQ(first.summary, second.summary);
    EXPECT_EQ(first.score, second.score);

    Result<cv::Mat> picture = diffImage(render, target, first);
    ASSERT_TRUE(picture.isOk()) << picture.status().message();
    EXPECT_EQ(picture->size(), first.comparedSize);
    EXPECT_EQ(picture->type(), CV_8UC3);
    Result<cv::Mat> again = diffImage(render, target, second);
    EXPECT_EQ(cv::norm(*picture, *again, cv::NORM_INF), 0);
    cv::imwrite(std::string(IRIS_TEST_ARTIFACTS) + "/visual_diff.png", *picture);
    std::cout << first.summary;

    const VisualComparison other = compare(target, target);
    EXPECT_FALSE(diffImage(render(cv::Rect(0, 0, 100, 100)), target, other).isOk());
}

TEST(PixelDifference, CountsEveryChangedPixelAgainstAPlainLoop) {
    cv::Mat a(37, 53, CV_8UC3);
    cv::randu(a, cv::Scalar::all(0), cv::Scalar::all(256));
    cv::Mat b = a.clone();
    cv::RNG rng(7);
    for (int n = 0; n < 300; ++n) {  // single-channel changes of 1 count too
        cv::Vec3b& pixel = b.at<cv::Vec3b>(rng.uniform(0, b.rows), rng.uniform(0, b.cols));
        pixel[rng.uniform(0, 3)] ^= std::uint8_t(rng.uniform(1, 256));
    }
    int changed = 0;
    double absolute = 0;
    for (int y = 0; y < a.rows; ++y) {
        for (int x = 0; x < a.cols; ++x) {
            const cv::Vec3b p = a.at<cv::Vec3b>(y, x);
            const cv::Vec3b q = b.at<cv::Vec3b>(y, x);
            bool differs = false;
            for (int c = 0; c < 3; ++c) {
                absolute += std::abs(int(p[c]) - int(q[c]));
                differs = differs || p[c] != q[c];
            }
            changed += differs ? 1 : 0;
        }
    }
    const PixelDifference d = pixelDifference(a, b);
    EXPECT_TRUE(d.sameSize);
    EXPECT_DOUBLE_EQ(d.changedShare, double(changed) / double(a.total()));
    EXPECT_NEAR(d.meanAbsolute, absolute / double(a.total() * 3), 1e-9);
    EXPECT_GT(changed, 0);

    const PixelDifference same = pixelDifference(a, a.clone());
    EXPECT_EQ(same.changedShare, 0);
    EXPECT_EQ(same.meanAbsolute, 0);
    const PixelDifference resized = pixelDifference(a, a(cv::Rect(0, 0, 10, 10)).clone());
    EXPECT_FALSE(resized.sameSize);
    EXPECT_EQ(resized.changedShare, 1);
}

}  // namespace
}  // namespace iris::agent
