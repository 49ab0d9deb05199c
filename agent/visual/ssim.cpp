#include "agent/visual/ssim.h"

#include <algorithm>
#include <cassert>

#include <opencv2/imgproc.hpp>

namespace iris::agent {
namespace {

constexpr double kC1 = (0.01 * 255) * (0.01 * 255);
constexpr double kC2 = (0.03 * 255) * (0.03 * 255);

// Gaussian-weighted window means, only where the window fits: the border rows and columns that
// a full-size filter would compute from extrapolated pixels are cut off.
cv::Mat windowMean(const cv::Mat& image, const cv::Mat& kernel) {
    cv::Mat filtered;
    cv::sepFilter2D(image, filtered, CV_64F, kernel, kernel, cv::Point(-1, -1), 0,
                    cv::BORDER_REFLECT);
    const int half = kSsimWindow / 2;
    return filtered(cv::Rect(half, half, image.cols - 2 * half, image.rows - 2 * half)).clone();
}

cv::Mat ssimStrip(const cv::Mat& x, const cv::Mat& y, const cv::Mat& kernel) {
    const cv::Mat muX = windowMean(x, kernel);
    const cv::Mat muY = windowMean(y, kernel);
    const cv::Mat muXX = muX.mul(muX);
    const cv::Mat muYY = muY.mul(muY);
    const cv::Mat muXY = muX.mul(muY);
    const cv::Mat sigmaXX = windowMean(x.mul(x), kernel) - muXX;
    const cv::Mat sigmaYY = windowMean(y.mul(y), kernel) - muYY;
    const cv::Mat sigmaXY = windowMean(x.mul(y), kernel) - muXY;

    const cv::Mat numerator = (2 * muXY + kC1).mul(2 * sigmaXY + kC2);
    const cv::Mat denominator = (muXX + muYY + kC1).mul(sigmaXX + sigmaYY + kC2);
    cv::Mat map;
    cv::divide(numerator, denominator, map);
    return map;
}

}  // namespace

cv::Mat lumaOf(const cv::Mat& bgr) {
    assert(bgr.type() == CV_8UC3);
    cv::Mat luma(bgr.size(), CV_64FC1);
    for (int y = 0; y < bgr.rows; ++y) {
        const cv::Vec3b* in = bgr.ptr<cv::Vec3b>(y);
        double* out = luma.ptr<double>(y);
        for (int x = 0; x < bgr.cols; ++x) {
            out[x] = 0.114 * in[x][0] + 0.587 * in[x][1] + 0.299 * in[x][2];
        }
    }
    return luma;
}

cv::Mat ssimMap(const cv::Mat& x, const cv::Mat& y) {
    assert(x.type() == CV_64FC1 && y.type() == CV_64FC1 && x.size() == y.size());
    assert(x.rows >= kSsimWindow && x.cols >= kSsimWindow);
    const cv::Mat kernel = cv::getGaussianKernel(kSsimWindow, kSsimSigma, CV_64F);
    const int span = kSsimWindow - 1;
    cv::Mat map(x.rows - span, x.cols - span, CV_64FC1);
    // Strips of output rows keep the dozen float64 temporaries small on tall full-page captures;
    // a window's value depends on its own pixels only, so strips do not change the result.
    constexpr int kStripRows = 256;
    for (int row = 0; row < map.rows; row += kStripRows) {
        const int rows = std::min(kStripRows, map.rows - row);
        const cv::Range input(row, row + rows + span);
        ssimStrip(x.rowRange(input), y.rowRange(input), kernel)
            .copyTo(map.rowRange(row, row + rows));
    }
    return map;
}

}  // namespace iris::agent
