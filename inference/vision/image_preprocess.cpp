#include "inference/vision/image_preprocess.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "base/sha256.h"

namespace iris::inference {
namespace {

// Python's round(): half to even, independent of the floating-point rounding mode.
double roundHalfEven(double x) {
    const double floor = std::floor(x);
    const double fraction = x - floor;
    if (fraction > 0.5) return floor + 1;
    if (fraction < 0.5) return floor;
    return std::fmod(floor, 2.0) == 0 ? floor : floor + 1;
}

template <typename T>
void hashValue(Sha256& sha, const T& value) {
    std::uint8_t bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    sha.update(std::span<const std::uint8_t>(bytes, sizeof(T)));
}

}  // namespace

Result<ImageSize> smartResize(int width, int height, const ImagePreprocessOptions& options) {
    if (width < 1 || height < 1) {
        return Status::invalidArgument("image size " + std::to_string(width) + "x" +
                                       std::to_string(height) + " has an empty side");
    }
    if (options.patchSize < 1 || options.mergeSize < 1)
        return Status::invalidArgument("patch and merge sizes must be positive");
    const std::int64_t factor = std::int64_t(options.patchSize) * options.mergeSize;
    if (options.maxPixels < factor * factor || options.minPixels > options.maxPixels) {
        return Status::invalidArgument("image pixel limits [" + std::to_string(options.minPixels) +
                                       ", " + std::to_string(options.maxPixels) +
                                       "] cannot hold one " + std::to_string(factor) + "x" +
                                       std::to_string(factor) + " tile");
    }
    const double W = width, H = height, f = double(factor);
    if (std::max(W, H) / std::min(W, H) > 200) {
        return Status::invalidArgument("image size " + std::to_string(width) + "x" +
                                       std::to_string(height) +
                                       " has an aspect ratio above 200, which the model refuses");
    }
    double h = std::max(f, roundHalfEven(H / f) * f);
    double w = std::max(f, roundHalfEven(W / f) * f);
    if (h * w > double(options.maxPixels)) {
        const double beta = std::sqrt(H * W / double(options.maxPixels));
        h = std::max(f, std::floor(H / beta / f) * f);
        w = std::max(f, std::floor(W / beta / f) * f);
    } else if (h * w < double(options.minPixels)) {
        const double beta = std::sqrt(double(options.minPixels) / (H * W));
        h = std::ceil(H * beta / f) * f;
        w = std::ceil(W * beta / f) * f;
    }
    return ImageSize{int(w), int(h)};
}

Result<RgbImage> decodeImage(std::span<const std::uint8_t> bytes) {
    if (bytes.empty()) return Status::invalidArgument("empty image data");
    cv::Mat bgr;
    try {
        const cv::Mat raw(1, int(bytes.size()), CV_8UC1, const_cast<std::uint8_t*>(bytes.data()));
        bgr = cv::imdecode(raw, cv::IMREAD_COLOR);
    } catch (const cv::Exception& e) {
        return Status::invalidArgument(std::string("image data could not be decoded: ") + e.what());
    }
    if (bgr.empty() || bgr.type() != CV_8UC3) {
        return Status::invalidArgument("image data (" + std::to_string(bytes.size()) +
                                       " bytes) is not a PNG or JPEG image");
    }
    RgbImage image;
    image.width = bgr.cols;
    image.height = bgr.rows;
    image.pixels.resize(std::size_t(image.width) * std::size_t(image.height) * 3);
    cv::Mat rgb(image.height, image.width, CV_8UC3, image.pixels.data());
    cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
    return image;
}

Result<RgbImage> readImageFile(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::notFound(path.string() + ": cannot open the image file");
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>());
    Result<RgbImage> image = decodeImage(bytes);
    if (!image) return image.status().withContext(path.string() + ": ");
    return image;
}

Result<ImagePatches> preprocessImage(const RgbImage& image, const ImagePreprocessOptions& options) {
    if (image.pixels.size() != std::size_t(image.width) * std::size_t(image.height) * 3) {
        return Status::invalidArgument("RGB image of " + std::to_string(image.width) + "x" +
                                       std::to_string(image.height) + " has " +
                                       std::to_string(image.pixels.size()) + " bytes");
    }
    if (options.temporalPatch < 1) return Status::invalidArgument("temporal patch must be >= 1");
    Result<ImageSize> size = smartResize(image.width, image.height, options);
    if (!size) return size.status();

    ImagePatches out;
    out.originalWidth = image.width;
    out.originalHeight = image.height;
    out.resizedWidth = size->width;
    out.resizedHeight = size->height;
    out.patchSize = options.patchSize;
    out.temporalPatch = options.temporalPatch;
    out.mergeSize = options.mergeSize;
    out.gridH = size->height / options.patchSize;
    out.gridW = size->width / options.patchSize;

    // Scale to [0, 1] first and resize in float (no rounding back to 8 bits), then clip as the
    // 8-bit resize of the reference processors does.
    const cv::Mat rgb(image.height, image.width, CV_8UC3,
                      const_cast<std::uint8_t*>(image.pixels.data()));
    cv::Mat scaled;
    rgb.convertTo(scaled, CV_32FC3, 1.0 / 255.0);
    cv::Mat resized;
    if (size->width == image.width && size->height == image.height) {
        resized = scaled;
    } else {
        cv::resize(scaled, resized, cv::Size(size->width, size->height), 0, 0,
                   options.filter == ResampleFilter::Bicubic ? cv::INTER_CUBIC : cv::INTER_LINEAR);
    }

    const int P = options.patchSize, T = options.temporalPatch, M = options.mergeSize;
    const std::int64_t rowValues = out.patchValues();
    out.values.resize(std::size_t(out.patchCount() * rowValues));
    float* row = out.values.data();
    for (int wy = 0; wy < out.gridH / M; ++wy) {
        for (int wx = 0; wx < out.gridW / M; ++wx) {
            for (int dy = 0; dy < M; ++dy) {
                for (int dx = 0; dx < M; ++dx, row += rowValues) {
                    const int top = (wy * M + dy) * P, left = (wx * M + dx) * P;
                    for (int c = 0; c < 3; ++c) {
                        const float mean = options.mean[std::size_t(c)];
                        const float invStd = 1.0f / options.std[std::size_t(c)];
                        float* plane = row + std::int64_t(c) * T * P * P;
                        for (int py = 0; py < P; ++py) {
                            const float* src = resized.ptr<float>(top + py) + left * 3 + c;
                            for (int px = 0; px < P; ++px) {
                                const float v = std::clamp(src[px * 3], 0.0f, 1.0f);
                                plane[py * P + px] = (v - mean) * invStd;
                            }
                        }
                        for (int t = 1; t < T; ++t)
                            std::copy(plane, plane + P * P, plane + std::int64_t(t) * P * P);
                    }
                }
            }
        }
    }

    Sha256 sha;
    sha.update("iris image v1");
    for (int v : {image.width, image.height, out.resizedWidth, out.resizedHeight, P, T, M,
                  int(options.filter)})
        hashValue(sha, std::int32_t(v));
    for (float v : options.mean)
        hashValue(sha, v);
    for (float v : options.std)
        hashValue(sha, v);
    sha.update(image.pixels);
    out.hash = sha.finish();
    return out;
}

PointF resizedToOriginal(PointF resized, ImageSize resizedSize, ImageSize originalSize) {
    return {resized.x * originalSize.width / resizedSize.width,
            resized.y * originalSize.height / resizedSize.height};
}

PointF resizedToOriginal(PointF resized, const ImagePatches& image) {
    return resizedToOriginal(resized, {image.resizedWidth, image.resizedHeight},
                             {image.originalWidth, image.originalHeight});
}

PointF relative1000ToOriginal(PointF relative, ImageSize originalSize) {
    return {relative.x * originalSize.width / 1000.0, relative.y * originalSize.height / 1000.0};
}

}  // namespace iris::inference
