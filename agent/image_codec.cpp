#include "agent/image_codec.h"

#include <fstream>
#include <iterator>
#include <vector>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace iris::agent {

Result<std::shared_ptr<const EncodedImage>> encodePng(const cv::Mat& image) {
    if (image.empty()) return Status::invalidArgument("cannot encode an empty image");
    if (image.depth() != CV_8U)
        return Status::invalidArgument("cannot encode an image that is not 8-bit");
    auto encoded = std::make_shared<EncodedImage>();
    encoded->mimeType = "image/png";
    encoded->width = image.cols;
    encoded->height = image.rows;
    const std::vector<int> parameters = {cv::IMWRITE_PNG_COMPRESSION, 1};
    std::vector<uchar> bytes;
    if (!cv::imencode(".png", image, bytes, parameters))
        return Status::internal("OpenCV could not encode a PNG");
    encoded->bytes.assign(bytes.begin(), bytes.end());
    return std::shared_ptr<const EncodedImage>(std::move(encoded));
}

Result<cv::Mat> decodeImage(std::span<const std::uint8_t> bytes, const std::string& what) {
    if (bytes.empty()) return Status::corrupt(what + ": empty image data");
    const cv::Mat raw(1, int(bytes.size()), CV_8U, const_cast<std::uint8_t*>(bytes.data()));
    cv::Mat image = cv::imdecode(raw, cv::IMREAD_COLOR);
    if (image.empty()) return Status::corrupt(what + ": not a PNG or JPEG image OpenCV can read");
    return image;
}

Result<cv::Mat> readImageFile(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) return Status::notFound(path + ": cannot open the image file");
    const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(file),
                                          std::istreambuf_iterator<char>()};
    return decodeImage(bytes, path);
}

}  // namespace iris::agent
