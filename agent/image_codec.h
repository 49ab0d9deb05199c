#pragma once
// Screenshots to and from PNG/JPEG bytes (OpenCV), for prompts, recordings and exports.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <opencv2/core/mat.hpp>

#include "agent/clients/chat.h"
#include "base/status.h"

namespace iris::agent {

// Lossless PNG of an 8-bit BGR (or gray, BGRA) image; fast compression (level 1): screenshots
// are written every step and PNG's higher levels cost ~5x the time for ~15% fewer bytes.
Result<std::shared_ptr<const EncodedImage>> encodePng(const cv::Mat& image);

// Decodes PNG or JPEG bytes into 8-bit BGR. `what` names the source in errors ("target.png").
Result<cv::Mat> decodeImage(std::span<const std::uint8_t> bytes, const std::string& what);
Result<cv::Mat> readImageFile(const std::string& path);

}  // namespace iris::agent
