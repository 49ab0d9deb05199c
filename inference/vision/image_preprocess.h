#pragma once
// Image preprocessing for Qwen2.5-VL-style towers (docs: qwen25vl.md §4.1, §4.2): decoding PNG
// and JPEG, "smart resize" to multiples of patch x merge pixels, CLIP normalisation, patchify
// into ImagePatches; and the grounding rule that maps a point the model names in the resized
// image back to the screenshot.
//
// Grounding. Qwen2.5-VL and UI-TARS-1.5 answer with coordinates in the pixel space of the
// resized image (resizedWidth x resizedHeight), not of the screenshot. A point (x, y) there is
// the screenshot point (x * originalWidth / resizedWidth, y * originalHeight / resizedHeight);
// the two axes scale independently because smart resize rounds each side to a multiple of 28
// separately. A point in the 0-1000 frame (some prompts ask for it) is
// (x * originalWidth / 1000, y * originalHeight / 1000) whatever the resize was.

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "base/status.h"
#include "inference/vision/image_patches.h"

namespace iris::inference {

enum class ResampleFilter {
    // The default, as Hugging Face's Qwen2VLImageProcessor asks for bicubic. Computed with
    // OpenCV's INTER_CUBIC, whose kernel (a = -0.75) and lack of antialiasing when shrinking differ
    // from PIL's, so pixels are close to, not equal to, the Python processor's.
    Bicubic,
    Bilinear,  // llama.cpp's Qwen-VL path
};

struct ImagePreprocessOptions {
    int patchSize = 14;
    int mergeSize = 2;
    int temporalPatch = 2;
    // Pixel budget of the resized image. The defaults are llama.cpp's (8 to 4096 merged tokens
    // of 28 x 28 pixels); Hugging Face's processor allows 3136 to 12845056 (4 to 16384 tokens).
    std::int64_t minPixels = 8 * 28 * 28;
    std::int64_t maxPixels = 4096 * 28 * 28;
    ResampleFilter filter = ResampleFilter::Bicubic;
    std::array<float, 3> mean{0.48145466f, 0.4578275f, 0.40821073f};  // per RGB channel
    std::array<float, 3> std{0.26862954f, 0.26130258f, 0.27577711f};
};

struct ImageSize {
    int width = 0;
    int height = 0;
    bool operator==(const ImageSize&) const = default;
};

// The resized size of a width x height image (factor = patch * merge, 28 by default):
//   1. h = round(H / factor) * factor, w = round(W / factor) * factor, each at least factor
//      (round half to even, as Python's round in Hugging Face's processor);
//   2. if h * w > maxPixels: b = sqrt(H * W / maxPixels), h = max(factor, floor(H / b / factor)
//      * factor), w likewise;
//   3. else if h * w < minPixels: b = sqrt(minPixels / (H * W)), h = ceil(H * b / factor) *
//      factor, w likewise.
// InvalidArgument for a side < 1, an aspect ratio above 200 (Hugging Face refuses those), or
// min/max pixels that cannot hold one factor x factor tile.
Result<ImageSize> smartResize(int width, int height, const ImagePreprocessOptions& options);

// An image decoded to packed RGB, 8 bits per channel, row-major.
struct RgbImage {
    int width = 0;
    int height = 0;
    std::vector<std::uint8_t> pixels;  // width * height * 3
};

// PNG or JPEG (anything OpenCV's imgcodecs reads); alpha is dropped. InvalidArgument when the
// bytes are not an image; the file variant's errors name the file.
Result<RgbImage> decodeImage(std::span<const std::uint8_t> bytes);
Result<RgbImage> readImageFile(const std::filesystem::path& path);

// Resizes, normalises and patchifies `image` (layout: image_patches.h). The hash covers the
// pixels, their size and every option that changes `values`.
Result<ImagePatches> preprocessImage(const RgbImage& image, const ImagePreprocessOptions& options);

struct PointF {
    double x = 0;
    double y = 0;
};

// The grounding rules above. Both return screenshot pixels (original image coordinates).
PointF resizedToOriginal(PointF resized, const ImagePatches& image);
PointF resizedToOriginal(PointF resized, ImageSize resizedSize, ImageSize originalSize);
PointF relative1000ToOriginal(PointF relative, ImageSize originalSize);

}  // namespace iris::inference
