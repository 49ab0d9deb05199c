#include "agent/env/wayland/pixel_formats.h"

#include <cstdio>
#include <cstring>

#include <opencv2/core.hpp>

namespace iris::agent {
namespace {

// Where a format keeps blue, green and red: one 8-bit channel each at a byte offset, or packed
// into a little-endian word of `bytes` bytes with the channel's (shift, bits).
struct Layout {
    int bytes = 4;
    bool packed = false;
    int blue = 0, green = 0, red = 0;              // byte offsets, or shifts when packed
    int blueBits = 8, greenBits = 8, redBits = 8;  // packed only
};

bool layoutOf(std::uint32_t format, Layout& layout) {
    using namespace shm_format;
    switch (format) {
        case kArgb8888:
        case kXrgb8888:  // word A:R:G:B, bytes B G R A
            layout = {4, false, 0, 1, 2};
            return true;
        case kAbgr8888:
        case kXbgr8888:  // bytes R G B A
            layout = {4, false, 2, 1, 0};
            return true;
        case kRgba8888:
        case kRgbx8888:  // bytes A B G R
            layout = {4, false, 1, 2, 3};
            return true;
        case kBgra8888:
        case kBgrx8888:  // bytes A R G B
            layout = {4, false, 3, 2, 1};
            return true;
        case kRgb888:  // bytes B G R
            layout = {3, false, 0, 1, 2};
            return true;
        case kBgr888:  // bytes R G B
            layout = {3, false, 2, 1, 0};
            return true;
        case kRgb565:  // word R5:G6:B5
            layout = {2, true, 0, 5, 11, 5, 6, 5};
            return true;
        case kXrgb2101010:
        case kArgb2101010:  // word A2:R10:G10:B10
            layout = {4, true, 0, 10, 20, 10, 10, 10};
            return true;
        case kXbgr2101010:
        case kAbgr2101010:  // word A2:B10:G10:R10
            layout = {4, true, 20, 10, 0, 10, 10, 10};
            return true;
        default:
            return false;
    }
}

// A channel of `bits` bits scaled to 8 bits the way a display would show it (replicating the
// high bits into the low ones, so full scale stays 255).
std::uint8_t widen(std::uint32_t value, int bits) {
    if (bits >= 8) return static_cast<std::uint8_t>(value >> (bits - 8));
    std::uint32_t wide = value << (8 - bits);
    wide |= wide >> bits;
    return static_cast<std::uint8_t>(wide);
}

}  // namespace

bool canConvertShmFormat(std::uint32_t format) {
    Layout layout;
    return layoutOf(format, layout);
}

int shmFormatBytesPerPixel(std::uint32_t format) {
    Layout layout;
    return layoutOf(format, layout) ? layout.bytes : 0;
}

std::string shmFormatName(std::uint32_t format) {
    using namespace shm_format;
    switch (format) {
        case kArgb8888:
            return "ARGB8888";
        case kXrgb8888:
            return "XRGB8888";
        case kAbgr8888:
            return "ABGR8888";
        case kXbgr8888:
            return "XBGR8888";
        default:
            break;
    }
    std::string letters;
    for (int shift = 0; shift < 32; shift += 8) {
        char c = static_cast<char>((format >> shift) & 0xff);
        if (c < 0x20 || c > 0x7e) {
            char hex[16];
            std::snprintf(hex, sizeof(hex), "0x%08x", format);
            return hex;
        }
        letters += c;
    }
    return letters;
}

Result<cv::Mat> convertToBgr(const std::uint8_t* data, std::uint32_t format, int width, int height,
                             int stride, bool yInvert) {
    Layout layout;
    if (!layoutOf(format, layout)) {
        return Status::unsupported("screen copy: pixel format " + shmFormatName(format) +
                                   " cannot be converted");
    }
    if (width <= 0 || height <= 0 || stride < width * layout.bytes) {
        return Status::invalidArgument("screen copy: a " + std::to_string(width) + "x" +
                                       std::to_string(height) + " buffer with stride " +
                                       std::to_string(stride) + " is inconsistent");
    }
    cv::Mat image(height, width, CV_8UC3);
    for (int y = 0; y < height; ++y) {
        const std::uint8_t* row =
            data + static_cast<std::ptrdiff_t>(yInvert ? height - 1 - y : y) * stride;
        auto* out = image.ptr<cv::Vec3b>(y);
        for (int x = 0; x < width; ++x) {
            const std::uint8_t* pixel = row + static_cast<std::ptrdiff_t>(x) * layout.bytes;
            if (!layout.packed) {
                out[x] = cv::Vec3b(pixel[layout.blue], pixel[layout.green], pixel[layout.red]);
                continue;
            }
            std::uint32_t word = 0;
            for (int i = layout.bytes - 1; i >= 0; --i)
                word = word << 8 | pixel[i];
            auto channel = [word](int shift, int bits) {
                return widen((word >> shift) & ((1u << bits) - 1), bits);
            };
            out[x] = cv::Vec3b(channel(layout.blue, layout.blueBits),
                               channel(layout.green, layout.greenBits),
                               channel(layout.red, layout.redBits));
        }
    }
    return image;
}

Result<cv::Mat> applyOutputTransform(const cv::Mat& buffer, int transform) {
    if (transform < 0 || transform > 7) {
        return Status::invalidArgument("output transform " + std::to_string(transform) +
                                       " is not a wl_output transform (0..7)");
    }
    cv::Mat rotated;
    switch (transform % 4) {
        case 1:
            cv::rotate(buffer, rotated, cv::ROTATE_90_CLOCKWISE);
            break;
        case 2:
            cv::rotate(buffer, rotated, cv::ROTATE_180);
            break;
        case 3:
            cv::rotate(buffer, rotated, cv::ROTATE_90_COUNTERCLOCKWISE);
            break;
        default:
            rotated = buffer.clone();
    }
    if (transform < 4) return rotated;
    cv::Mat mirrored;  // the flipped transforms: turned, then mirrored left to right
    cv::flip(rotated, mirrored, 1);
    return mirrored;
}

}  // namespace iris::agent
