#include "agent/env/wayland/pixel_formats.h"

#include <vector>

#include <gtest/gtest.h>

namespace iris::agent {
namespace {

// One pixel of red 0x12, green 0x34, blue 0x56 (alpha 0x78 where there is one), written out
// byte by byte from the format definitions (little-endian words), and the BGR it must become.
struct Case {
    std::uint32_t format;
    std::vector<std::uint8_t> bytes;
};

TEST(PixelFormatsTest, EveryEightBitFormatReadsItsChannels) {
    using namespace shm_format;
    const std::vector<Case> cases = {
        {kArgb8888, {0x56, 0x34, 0x12, 0x78}}, {kXrgb8888, {0x56, 0x34, 0x12, 0x00}},
        {kAbgr8888, {0x12, 0x34, 0x56, 0x78}}, {kXbgr8888, {0x12, 0x34, 0x56, 0x00}},
        {kRgba8888, {0x78, 0x56, 0x34, 0x12}}, {kRgbx8888, {0x00, 0x56, 0x34, 0x12}},
        {kBgra8888, {0x78, 0x12, 0x34, 0x56}}, {kBgrx8888, {0x00, 0x12, 0x34, 0x56}},
        {kRgb888, {0x56, 0x34, 0x12}},         {kBgr888, {0x12, 0x34, 0x56}},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(shmFormatName(c.format));
        ASSERT_TRUE(canConvertShmFormat(c.format));
        EXPECT_EQ(shmFormatBytesPerPixel(c.format), static_cast<int>(c.bytes.size()));
        Result<cv::Mat> image =
            convertToBgr(c.bytes.data(), c.format, 1, 1, static_cast<int>(c.bytes.size()), false);
        ASSERT_TRUE(image) << image.status().message();
        EXPECT_EQ(image->at<cv::Vec3b>(0, 0), cv::Vec3b(0x56, 0x34, 0x12));
    }
}

TEST(PixelFormatsTest, PackedFormatsWidenToEightBits) {
    using namespace shm_format;
    // RGB565 0xF81F: red 31, green 0, blue 31 -> 255, 0, 255. Bytes low first.
    const std::uint8_t magenta565[] = {0x1f, 0xf8};
    Result<cv::Mat> image = convertToBgr(magenta565, kRgb565, 1, 1, 2, false);
    ASSERT_TRUE(image);
    EXPECT_EQ(image->at<cv::Vec3b>(0, 0), cv::Vec3b(255, 0, 255));
    EXPECT_EQ(shmFormatBytesPerPixel(kRgb565), 2);
    EXPECT_EQ(shmFormatBytesPerPixel(kXrgb2101010), 4);
    // XRGB2101010: red 0x3ff, green 0x200, blue 0x004 -> 255, 128 (0x200 >> 2), 1.
    std::uint32_t word = 0x3ffu << 20 | 0x200u << 10 | 0x004u;
    const std::uint8_t bytes[] = {
        static_cast<std::uint8_t>(word), static_cast<std::uint8_t>(word >> 8),
        static_cast<std::uint8_t>(word >> 16), static_cast<std::uint8_t>(word >> 24)};
    image = convertToBgr(bytes, kXrgb2101010, 1, 1, 4, false);
    ASSERT_TRUE(image);
    EXPECT_EQ(image->at<cv::Vec3b>(0, 0), cv::Vec3b(1, 128, 255));
    // The same word read as XBGR2101010 swaps red and blue.
    image = convertToBgr(bytes, kXbgr2101010, 1, 1, 4, false);
    ASSERT_TRUE(image);
    EXPECT_EQ(image->at<cv::Vec3b>(0, 0), cv::Vec3b(255, 128, 1));
}

TEST(PixelFormatsTest, StrideAndYInvertAreHonoured) {
    // Two rows of two XRGB8888 pixels, rows 12 bytes apart (4 bytes of padding).
    const std::uint8_t rows[] = {1, 2, 3, 0, 4,  5,  6,  0, 9, 9, 9, 9,  //
                                 7, 8, 9, 0, 10, 11, 12, 0, 9, 9, 9, 9};
    Result<cv::Mat> upright = convertToBgr(rows, shm_format::kXrgb8888, 2, 2, 12, false);
    ASSERT_TRUE(upright);
    EXPECT_EQ(upright->at<cv::Vec3b>(0, 1), cv::Vec3b(4, 5, 6));
    EXPECT_EQ(upright->at<cv::Vec3b>(1, 0), cv::Vec3b(7, 8, 9));
    Result<cv::Mat> inverted = convertToBgr(rows, shm_format::kXrgb8888, 2, 2, 12, true);
    ASSERT_TRUE(inverted);
    EXPECT_EQ(inverted->at<cv::Vec3b>(0, 0), cv::Vec3b(7, 8, 9));
    EXPECT_EQ(inverted->at<cv::Vec3b>(1, 1), cv::Vec3b(4, 5, 6));
    EXPECT_FALSE(convertToBgr(rows, shm_format::kXrgb8888, 4, 2, 12, false));  // stride too small
}

TEST(PixelFormatsTest, UnknownFormatsAreNamed) {
    std::uint32_t nv12 = shm_format::fourcc('N', 'V', '1', '2');
    EXPECT_FALSE(canConvertShmFormat(nv12));
    EXPECT_EQ(shmFormatBytesPerPixel(nv12), 0);
    const std::uint8_t byte = 0;
    Result<cv::Mat> image = convertToBgr(&byte, nv12, 1, 1, 4, false);
    ASSERT_FALSE(image);
    EXPECT_EQ(image.status().code(), StatusCode::Unsupported);
    EXPECT_NE(image.status().message().find("NV12"), std::string::npos);
    EXPECT_EQ(shmFormatName(shm_format::kXbgr8888), "XBGR8888");
}

TEST(PixelFormatsTest, OutputTransformsRotateAndFlip) {
    // A 3x2 buffer with distinct values, and where its top-left pixel must end up.
    cv::Mat buffer(2, 3, CV_8UC3);
    for (int y = 0; y < 2; ++y)
        for (int x = 0; x < 3; ++x)
            buffer.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<std::uint8_t>(y * 3 + x), 0, 0);
    auto corner = [&](int transform) {
        Result<cv::Mat> image = applyOutputTransform(buffer, transform);
        EXPECT_TRUE(image);
        return *image;
    };
    cv::Mat normal = corner(0);
    EXPECT_EQ(normal.cols, 3);
    EXPECT_EQ(normal.at<cv::Vec3b>(0, 0)[0], 0);
    cv::Mat quarter = corner(1);  // rotated a quarter turn clockwise: 2 wide, 3 high
    EXPECT_EQ(quarter.cols, 2);
    EXPECT_EQ(quarter.rows, 3);
    EXPECT_EQ(quarter.at<cv::Vec3b>(0, 0)[0], 3);  // the bottom-left pixel comes to the top left
    EXPECT_EQ(corner(2).at<cv::Vec3b>(0, 0)[0], 5);
    EXPECT_EQ(corner(3).at<cv::Vec3b>(0, 0)[0], 2);
    EXPECT_EQ(corner(4).at<cv::Vec3b>(0, 0)[0], 2);  // mirrored
    cv::Mat transposed = corner(5);                  // a quarter turn, then mirrored: the transpose
    EXPECT_EQ(transposed.at<cv::Vec3b>(0, 1)[0], 3);
    EXPECT_EQ(transposed.at<cv::Vec3b>(2, 0)[0], 2);
    EXPECT_FALSE(applyOutputTransform(buffer, 8));
}

}  // namespace
}  // namespace iris::agent
