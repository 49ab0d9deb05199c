#pragma once
// SSIM as Wang et al. (2004) define it: an 11x11 Gaussian window with sigma 1.5, K1 = 0.01,
// K2 = 0.03, dynamic range 255, evaluated on luma. Only windows that lie wholly inside the image
// count (MATLAB's 'valid' filtering), so nothing depends on how borders would be extended.
#include <opencv2/core/mat.hpp>

namespace iris::agent {

inline constexpr int kSsimWindow = 11;
inline constexpr double kSsimSigma = 1.5;

// BT.601 luma 0.299 R + 0.587 G + 0.114 B of an 8-bit BGR image, as CV_64FC1 without rounding.
cv::Mat lumaOf(const cv::Mat& bgr);

// SSIM of every whole window of two same-size CV_64FC1 images at least 11x11: a CV_64FC1 map of
// (rows - 10) x (cols - 10) whose entry (y, x) is the window centred on pixel (y + 5, x + 5).
cv::Mat ssimMap(const cv::Mat& x, const cv::Mat& y);

}  // namespace iris::agent
