// iris_make_vision_fixture DIR: the files the command-line tests of images use, written into DIR:
//   tiny-vl.gguf         a random qwen2vl language model (width 64, M-RoPE) with a byte-level
//                        vocabulary that has <|vision_start|>, <|vision_end|>, <|image_pad|>
//   tiny-mmproj.gguf     a random Qwen2.5-VL projector for it (projection_dim 64)
//   tiny-mmproj-96.gguf  the same projector for a 96-wide model (a wrong pair)
//   screen.png           a 224x168 test picture (8x6 merged tokens, several attention windows)
//   screen2.jpg          a 100x60 JPEG
//   broken.png           bytes that are not an image
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "tests/inference/models/tiny_model.h"
#include "tests/inference/vision/tiny_mmproj.h"

namespace {

namespace fs = std::filesystem;

bool writeBytes(const fs::path& path, const std::vector<std::byte>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return bool(out);
}

cv::Mat picture(int width, int height) {
    cv::Mat bgr(height, width, CV_8UC3);
    for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
            bgr.at<cv::Vec3b>(y, x) =
                cv::Vec3b(std::uint8_t(x * 255 / width), std::uint8_t((x ^ y) & 0xff),
                          std::uint8_t(y * 255 / height));
        }
    }
    return bgr;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: iris_make_vision_fixture DIR\n";
        return 2;
    }
    const fs::path dir = argv[1];
    std::error_code error;
    fs::create_directories(dir, error);
    using namespace iris::inference::testing;
    TinyModelSpec model;
    model.arch = "qwen2vl";
    model.vocab = 288;
    model.withTokenizer = true;
    model.withVisionTokens = true;
    model.weightScale = 0.5f;
    model.seed = 5;
    TinyMmprojOptions projector;
    projector.projection = 64;
    TinyMmprojOptions wide = projector;
    wide.projection = 96;
    const std::vector<std::byte> notAnImage{std::byte{'n'}, std::byte{'o'}, std::byte{'p'},
                                            std::byte{'e'}};
    const bool ok = writeBytes(dir / "tiny-vl.gguf", makeTinyModel(model)) &&
                    writeBytes(dir / "tiny-mmproj.gguf", makeTinyMmproj(projector).bytes) &&
                    writeBytes(dir / "tiny-mmproj-96.gguf", makeTinyMmproj(wide).bytes) &&
                    cv::imwrite((dir / "screen.png").string(), picture(224, 168)) &&
                    cv::imwrite((dir / "screen2.jpg").string(), picture(100, 60)) &&
                    writeBytes(dir / "broken.png", notAnImage);
    if (!ok) {
        std::cerr << "iris_make_vision_fixture: cannot write into " << dir << '\n';
        return 1;
    }
    return 0;
}
