// Writes the files of the llama.cpp vision parity test to a folder (see README.md here):
//   make_vision_parity_models DIR  ->  DIR/qwen2.5vl-mmproj.gguf, DIR/qwen2vl-lm.gguf,
//       DIR/minimax-m3-mmproj.gguf, DIR/minimax-m3-lm.gguf and the test images (PNG)
// printing the SHA-256 of each. Not a test.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "base/sha256.h"
#include "tests/inference/llama_cpp/vision_parity_models.h"

using namespace iris;
using namespace iris::inference;
using namespace iris::inference::testing;

namespace {

void printDigest(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                          std::istreambuf_iterator<char>());
    std::printf("%s  %s\n", toHex(Sha256::hash(bytes)).c_str(), path.filename().c_str());
}

bool write(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    out.close();
    if (!out) return false;
    printDigest(path);
    return true;
}

bool writePng(const std::filesystem::path& path, const RgbImage& image) {
    cv::Mat bgr(image.height, image.width, CV_8UC3);
    for (int y = 0; y < image.height; ++y) {
        for (int x = 0; x < image.width; ++x) {
            const std::uint8_t* p = &image.pixels[(std::size_t(y) * image.width + x) * 3];
            bgr.at<cv::Vec3b>(y, x) = cv::Vec3b(p[2], p[1], p[0]);
        }
    }
    if (!cv::imwrite(path.string(), bgr, {cv::IMWRITE_PNG_COMPRESSION, 9})) return false;
    printDigest(path);
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    if (!write(dir / "qwen2.5vl-mmproj.gguf", makeTinyMmproj(parityQwenVlMmprojOptions()).bytes) ||
        !write(dir / "qwen2vl-lm.gguf", makeTinyModel(parityQwenVlModelSpec())) ||
        !write(dir / "minimax-m3-mmproj.gguf", makeTinyM3Mmproj(parityM3MmprojOptions()).bytes) ||
        !write(dir / "minimax-m3-lm.gguf", makeM3ModelWithTokenizer(parityM3VisionModelSpec())))
        return 1;
    for (const ParityImage& image : parityImages()) {
        if (!writePng(dir / image.file, image.image)) return 1;
    }
    return 0;
}
