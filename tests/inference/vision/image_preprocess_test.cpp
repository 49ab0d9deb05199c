// Image preprocessing: smart resize against a table computed with the rule of Hugging Face's
// Qwen2VLImageProcessor (docs: qwen25vl.md §4.1; values from a Python transcription of it),
// decoding, normalisation and patch order against a float64 reference written here, the
// content hash, the grounding map, SHA-256 test vectors and M-RoPE positions (§3.2).
#include "inference/vision/image_preprocess.h"

#include <cmath>
#include <random>
#include <string>

#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "inference/vision/image_positions.h"

namespace iris::inference {
namespace {

struct ResizeCase {
    int width, height, resizedWidth, resizedHeight;
};

ImagePreprocessOptions budget(std::int64_t minPixels, std::int64_t maxPixels) {
    ImagePreprocessOptions o;
    o.minPixels = minPixels;
    o.maxPixels = maxPixels;
    return o;
}

void expectTable(const ImagePreprocessOptions& options, std::initializer_list<ResizeCase> table) {
    for (const ResizeCase& c : table) {
        const Result<ImageSize> size = smartResize(c.width, c.height, options);
        ASSERT_TRUE(size) << c.width << "x" << c.height << ": " << size.status().message();
        EXPECT_EQ(*size, (ImageSize{c.resizedWidth, c.resizedHeight}))
            << c.width << "x" << c.height << " -> " << size->width << "x" << size->height;
        EXPECT_EQ(size->width % 28, 0);
        EXPECT_EQ(size->height % 28, 0);
    }
}

TEST(SmartResize, LlamaCppBudgetMatchesTheRule) {
    // 8 to 4096 merged tokens: Iris's default.
    expectTable(ImagePreprocessOptions{}, {{1920, 1080, 1932, 1092},
                                           {1280, 800, 1288, 812},
                                           {390, 844, 392, 840},
                                           {3840, 2160, 2380, 1344},
                                           {2560, 1440, 2380, 1344},
                                           {1, 1, 84, 84},
                                           {10, 10, 84, 84},
                                           {27, 27, 84, 84},
                                           {42, 42, 84, 84},
                                           {70, 14, 196, 56},
                                           {14, 70, 56, 196},
                                           {5000, 30, 5012, 28},
                                           {30, 5000, 28, 5012},
                                           {2800, 14, 2800, 28},
                                           {8000, 40, 8008, 28},
                                           {1024, 768, 1036, 756},
                                           {98, 42, 112, 56},
                                           {126, 70, 112, 56}});
}

TEST(SmartResize, HuggingFaceBudgetMatchesTheRule) {
    // 98/28 = 3.5 rounds to 4 but 126/28 = 4.5 and 70/28 = 2.5 round to 4 and 2: half to even.
    expectTable(budget(3136, 12845056), {{1920, 1080, 1932, 1092},
                                         {1280, 800, 1288, 812},
                                         {390, 844, 392, 840},
                                         {3840, 2160, 3836, 2156},
                                         {2560, 1440, 2548, 1428},
                                         {1, 1, 56, 56},
                                         {10, 10, 56, 56},
                                         {27, 27, 56, 56},
                                         {42, 42, 56, 56},
                                         {70, 14, 140, 28},
                                         {14, 70, 28, 140},
                                         {5000, 30, 5012, 28},
                                         {30, 5000, 28, 5012},
                                         {2800, 14, 2800, 28},
                                         {8000, 40, 8008, 28},
                                         {1024, 768, 1036, 756},
                                         {98, 42, 112, 56},
                                         {126, 70, 112, 56}});
}

TEST(SmartResize, SmallMaxPixelsShrinksKeepingTheAspect) {
    // 1280 merged tokens at most, as some UI-TARS deployments configure.
    expectTable(budget(3136, 1280 * 784), {{1920, 1080, 1316, 728},
                                           {1280, 800, 1260, 784},
                                           {3840, 2160, 1316, 728},
                                           {2560, 1440, 1316, 728},
                                           {390, 844, 392, 840}});
}

TEST(SmartResize, RefusesEmptySidesExtremeAspectsAndImpossibleBudgets) {
    EXPECT_EQ(smartResize(0, 10, {}).status().code(), StatusCode::InvalidArgument);
    EXPECT_EQ(smartResize(10, -1, {}).status().code(), StatusCode::InvalidArgument);
    const Result<ImageSize> thin = smartResize(201, 1, {});
    ASSERT_FALSE(thin);
    EXPECT_NE(thin.status().message().find("aspect ratio above 200"), std::string::npos);
    EXPECT_TRUE(smartResize(200, 1, {}));
    EXPECT_EQ(smartResize(100, 100, budget(0, 700)).status().code(), StatusCode::InvalidArgument);
    EXPECT_EQ(smartResize(100, 100, budget(5000, 4000)).status().code(),
              StatusCode::InvalidArgument);
}

RgbImage randomImage(int width, int height, unsigned seed) {
    RgbImage image{width, height, std::vector<std::uint8_t>(std::size_t(width * height * 3))};
    std::mt19937 rng(seed);
    for (std::uint8_t& v : image.pixels)
        v = std::uint8_t(rng() & 0xff);
    return image;
}

// Float64 resize with OpenCV's sampling convention (pixel centres, source x = (x + 0.5) *
// in / out - 0.5, edge pixels repeated): bilinear, or Keys cubic with a = -0.75.
std::vector<double> referenceResize(const RgbImage& image, int outW, int outH, bool cubic) {
    const auto at = [&](int x, int y, int c) {
        x = std::clamp(x, 0, image.width - 1);
        y = std::clamp(y, 0, image.height - 1);
        return image.pixels[std::size_t((y * image.width + x) * 3 + c)] / 255.0;
    };
    const auto weights = [&](double t, double* w) {
        if (!cubic) {
            w[0] = 1 - t;
            w[1] = t;
            return;
        }
        const double a = -0.75;
        const auto near = [&](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };
        const auto far = [&](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };
        w[0] = far(t + 1);
        w[1] = near(t);
        w[2] = near(1 - t);
        w[3] = far(2 - t);
    };
    const int taps = cubic ? 4 : 2, first = cubic ? -1 : 0;
    std::vector<double> out(std::size_t(outW * outH * 3));
    for (int y = 0; y < outH; ++y) {
        const double sy = (y + 0.5) * image.height / outH - 0.5;
        int iy = int(std::floor(sy));
        double ty = sy - iy;
        if (!cubic && iy < 0) iy = 0, ty = 0;
        double wy[4];
        weights(ty, wy);
        for (int x = 0; x < outW; ++x) {
            const double sx = (x + 0.5) * image.width / outW - 0.5;
            int ix = int(std::floor(sx));
            double tx = sx - ix;
            if (!cubic && ix < 0) ix = 0, tx = 0;
            double wx[4];
            weights(tx, wx);
            for (int c = 0; c < 3; ++c) {
                double sum = 0;
                for (int j = 0; j < taps; ++j) {
                    for (int i = 0; i < taps; ++i)
                        sum += wy[j] * wx[i] * at(ix + first + i, iy + first + j, c);
                }
                out[std::size_t((y * outW + x) * 3 + c)] = sum;
            }
        }
    }
    return out;
}

void expectMatchesReference(const RgbImage& image, const ImagePreprocessOptions& options) {
    const Result<ImagePatches> patches = preprocessImage(image, options);
    ASSERT_TRUE(patches) << patches.status().message();
    const Result<ImageSize> size = smartResize(image.width, image.height, options);
    ASSERT_TRUE(size);
    EXPECT_EQ(patches->resizedWidth, size->width);
    EXPECT_EQ(patches->resizedHeight, size->height);
    EXPECT_EQ(patches->gridW, size->width / 14);
    EXPECT_EQ(patches->gridH, size->height / 14);
    ASSERT_EQ(patches->values.size(), std::size_t(patches->patchCount() * 1176));

    const bool same = size->width == image.width && size->height == image.height;
    const std::vector<double> resized = referenceResize(
        image, size->width, size->height, options.filter == ResampleFilter::Bicubic && !same);
    // Row r of the patches is merge window (wy, wx) = (r / 4 / (gridW / 2), r / 4 % (gridW /
    // 2)), then (dy, dx) = (r % 4 / 2, r % 2); values [channel][frame][py][px].
    double worst = 0;
    for (std::int64_t r = 0; r < patches->patchCount(); ++r) {
        const std::int64_t window = r / 4, wy = window / (patches->gridW / 2),
                           wx = window % (patches->gridW / 2);
        const std::int64_t row = 2 * wy + (r % 4) / 2, col = 2 * wx + r % 2;
        for (int c = 0; c < 3; ++c) {
            for (int t = 0; t < 2; ++t) {
                for (int py = 0; py < 14; ++py) {
                    for (int px = 0; px < 14; ++px) {
                        const std::int64_t y = row * 14 + py, x = col * 14 + px;
                        const double v = std::clamp(
                            resized[std::size_t((y * size->width + x) * 3 + c)], 0.0, 1.0);
                        const double expected = (v - double(options.mean[std::size_t(c)])) /
                                                double(options.std[std::size_t(c)]);
                        const float got =
                            patches
                                ->values[std::size_t(r * 1176 + ((c * 2 + t) * 14 + py) * 14 + px)];
                        worst = std::max(worst, std::abs(double(got) - expected));
                    }
                }
            }
        }
    }
    EXPECT_LT(worst, 2e-4) << image.width << "x" << image.height;
}

TEST(Preprocess, BilinearMatchesTheFloat64Reference) {
    ImagePreprocessOptions options;
    options.filter = ResampleFilter::Bilinear;
    expectMatchesReference(randomImage(150, 95, 1), options);  // down to 140x84
    expectMatchesReference(randomImage(61, 200, 2), options);  // upscaled by the minimum
    options.maxPixels = 20 * 784;
    expectMatchesReference(randomImage(300, 170, 3), options);  // downscaled by the maximum
}

TEST(Preprocess, BicubicMatchesTheFloat64Reference) {
    ImagePreprocessOptions options;
    expectMatchesReference(randomImage(150, 95, 4), options);
    expectMatchesReference(randomImage(61, 200, 5), options);
    options.maxPixels = 20 * 784;
    expectMatchesReference(randomImage(300, 170, 6), options);
    expectMatchesReference(randomImage(112, 84, 7), options);  // already a multiple of 28
}

TEST(Preprocess, TheHashFollowsPixelsAndOptions) {
    const RgbImage image = randomImage(100, 60, 8);
    const ImagePatches a = *preprocessImage(image, {});
    EXPECT_EQ(a.hash, preprocessImage(image, {})->hash);
    RgbImage changed = image;
    changed.pixels[1234] ^= 1;
    EXPECT_NE(a.hash, preprocessImage(changed, {})->hash);
    ImagePreprocessOptions bilinear;
    bilinear.filter = ResampleFilter::Bilinear;
    EXPECT_NE(a.hash, preprocessImage(image, bilinear)->hash);
    ImagePreprocessOptions bigger;
    bigger.minPixels = 100 * 784;
    EXPECT_NE(a.hash, preprocessImage(image, bigger)->hash);
}

TEST(Preprocess, RefusesAnRgbBufferOfTheWrongSize) {
    RgbImage image = randomImage(10, 10, 9);
    image.pixels.pop_back();
    EXPECT_EQ(preprocessImage(image, {}).status().code(), StatusCode::InvalidArgument);
}

TEST(Decode, PngRoundTripsExactlyAndJpegDecodes) {
    const RgbImage image = randomImage(37, 23, 10);
    cv::Mat bgr(image.height, image.width, CV_8UC3);
    for (int y = 0; y < image.height; ++y) {
        for (int x = 0; x < image.width; ++x) {
            const std::uint8_t* p = &image.pixels[std::size_t((y * image.width + x) * 3)];
            bgr.at<cv::Vec3b>(y, x) = cv::Vec3b(p[2], p[1], p[0]);
        }
    }
    std::vector<std::uint8_t> png, jpeg;
    ASSERT_TRUE(cv::imencode(".png", bgr, png));
    ASSERT_TRUE(cv::imencode(".jpg", bgr, jpeg));
    const Result<RgbImage> decoded = decodeImage(png);
    ASSERT_TRUE(decoded) << decoded.status().message();
    EXPECT_EQ(decoded->width, 37);
    EXPECT_EQ(decoded->height, 23);
    EXPECT_EQ(decoded->pixels, image.pixels);  // RGB order, not OpenCV's BGR
    const Result<RgbImage> fromJpeg = decodeImage(jpeg);
    ASSERT_TRUE(fromJpeg);
    EXPECT_EQ(fromJpeg->width, 37);

    const std::vector<std::uint8_t> garbage{'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'g'};
    const Result<RgbImage> bad = decodeImage(garbage);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(bad.status().message().find("not a PNG or JPEG"), std::string::npos);
    EXPECT_EQ(decodeImage({}).status().code(), StatusCode::InvalidArgument);
    const Result<RgbImage> missing = readImageFile("/nonexistent/screen.png");
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.status().message().find("/nonexistent/screen.png"), std::string::npos);
}

TEST(Grounding, ResizedImagePointsMapBackToScreenPixels) {
    // A 1920x1080 screenshot becomes 1932x1092: the model's (966, 546) is the screen's centre.
    const ImageSize screen{1920, 1080};
    const ImageSize resized = *smartResize(1920, 1080, {});
    const PointF centre = resizedToOriginal({966, 546}, resized, screen);
    EXPECT_NEAR(centre.x, 960.0, 1e-9);
    EXPECT_NEAR(centre.y, 540.0, 1e-9);
    const PointF corner = resizedToOriginal({1932, 1092}, resized, screen);
    EXPECT_NEAR(corner.x, 1920.0, 1e-9);
    EXPECT_NEAR(corner.y, 1080.0, 1e-9);
    // A 4K screen under the default budget (2380x1344): the axes scale by different factors.
    const ImageSize big = *smartResize(3840, 2160, {});
    const PointF p = resizedToOriginal({1190, 100}, big, {3840, 2160});
    EXPECT_NEAR(p.x, 1190.0 * 3840 / 2380, 1e-9);
    EXPECT_NEAR(p.y, 100.0 * 2160 / 1344, 1e-9);
    // Through ImagePatches, as the engine hands them out.
    const ImagePatches patches = *preprocessImage(randomImage(390, 844, 11), {});
    const PointF phone = resizedToOriginal({196, 420}, patches);
    EXPECT_NEAR(phone.x, 195.0, 1e-9);
    EXPECT_NEAR(phone.y, 422.0, 1e-9);
    // The 0-1000 frame ignores the resize.
    const PointF rel = relative1000ToOriginal({500, 250}, screen);
    EXPECT_NEAR(rel.x, 960.0, 1e-9);
    EXPECT_NEAR(rel.y, 270.0, 1e-9);
}

TEST(ImagePositions, MultimodalRopeFollowsTheRule) {
    std::vector<TokenPosition> out;
    // An image of 3 rows x 5 columns of merged tokens starting at 7.
    const std::int32_t next = appendImagePositions(7, 3, 5, true, out);
    ASSERT_EQ(out.size(), 15u);
    for (std::int32_t k = 0; k < 15; ++k) {
        const TokenPosition expected{7, 7 + k / 5, 7 + k % 5, 0};
        EXPECT_EQ(out[std::size_t(k)], expected) << k;
    }
    EXPECT_EQ(next, 7 + 5);  // max(rows, columns), not 15
    out.clear();
    EXPECT_EQ(appendImagePositions(0, 6, 2, true, out), 6);
    EXPECT_EQ(out.back(), (TokenPosition{0, 5, 1, 0}));
    out.clear();
    // Plain RoPE (OpenCUA's Qwen2 decoder): one position per token.
    EXPECT_EQ(appendImagePositions(4, 2, 3, false, out), 10);
    for (std::int32_t k = 0; k < 6; ++k)
        EXPECT_EQ(out[std::size_t(k)], textPosition(4 + k));
}

}  // namespace
}  // namespace iris::inference
