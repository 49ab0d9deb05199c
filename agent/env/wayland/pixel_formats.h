#pragma once
// Shared-memory pixel formats a Wayland compositor may hand out for a screen copy, converted to
// the 8-bit BGR images observations use. Pure functions: no Wayland connection needed.
#include <cstdint>
#include <string>

#include <opencv2/core/mat.hpp>

#include "base/status.h"

namespace iris::agent {

// wl_shm format codes: 0 and 1 are ARGB8888 and XRGB8888, every other one is the DRM fourcc.
namespace shm_format {
constexpr std::uint32_t fourcc(char a, char b, char c, char d) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(a)) |
           static_cast<std::uint32_t>(static_cast<unsigned char>(b)) << 8 |
           static_cast<std::uint32_t>(static_cast<unsigned char>(c)) << 16 |
           static_cast<std::uint32_t>(static_cast<unsigned char>(d)) << 24;
}
constexpr std::uint32_t kArgb8888 = 0;
constexpr std::uint32_t kXrgb8888 = 1;
constexpr std::uint32_t kAbgr8888 = fourcc('A', 'B', '2', '4');
constexpr std::uint32_t kXbgr8888 = fourcc('X', 'B', '2', '4');
constexpr std::uint32_t kRgba8888 = fourcc('R', 'A', '2', '4');
constexpr std::uint32_t kRgbx8888 = fourcc('R', 'X', '2', '4');
constexpr std::uint32_t kBgra8888 = fourcc('B', 'A', '2', '4');
constexpr std::uint32_t kBgrx8888 = fourcc('B', 'X', '2', '4');
constexpr std::uint32_t kRgb888 = fourcc('R', 'G', '2', '4');
constexpr std::uint32_t kBgr888 = fourcc('B', 'G', '2', '4');
constexpr std::uint32_t kRgb565 = fourcc('R', 'G', '1', '6');
constexpr std::uint32_t kXrgb2101010 = fourcc('X', 'R', '3', '0');
constexpr std::uint32_t kArgb2101010 = fourcc('A', 'R', '3', '0');
constexpr std::uint32_t kXbgr2101010 = fourcc('X', 'B', '3', '0');
constexpr std::uint32_t kAbgr2101010 = fourcc('A', 'B', '3', '0');
}  // namespace shm_format

// Whether convertToBgr() reads `format`.
bool canConvertShmFormat(std::uint32_t format);
// Bytes per pixel of a format convertToBgr() reads (0 for any other): a client that allocates
// the buffer itself (ext-image-copy-capture announces formats, not strides) needs it.
int shmFormatBytesPerPixel(std::uint32_t format);
// "XRGB8888", "AB24" (the fourcc's letters for formats without a name here), "0x12345678".
std::string shmFormatName(std::uint32_t format);

// `height` rows of `stride` bytes in `format` (little-endian, as wl_shm defines) as a BGR image;
// `yInvert`: the rows are stored bottom-up. Alpha is dropped (an output has no transparency).
Result<cv::Mat> convertToBgr(const std::uint8_t* data, std::uint32_t format, int width, int height,
                             int stride, bool yInvert);

// wl_output's transform (0 normal, 1..3 turned 90/180/270 degrees, 4..7 the same and mirrored)
// applied to a captured buffer, which is in the output's unrotated (mode) orientation: the
// result is the output as its user sees it (checked against sway 1.7 in the Wayland tests).
Result<cv::Mat> applyOutputTransform(const cv::Mat& buffer, int transform);

}  // namespace iris::agent
