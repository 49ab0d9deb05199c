#include "tests/inference/llama_cpp/vision_parity_models.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace iris::inference::testing {

TinyMmprojOptions parityQwenVlMmprojOptions() {
    TinyMmprojOptions o;
    o.width = 64;
    o.heads = 2;
    o.blocks = 4;
    o.ffn = 96;
    o.projection = 48;
    o.windowPattern = 2;
    o.seed = 21;
    return o;
}

TinyModelSpec parityQwenVlModelSpec() {
    TinyModelSpec s;
    s.arch = "qwen2vl";
    s.vocab = 272;
    s.hidden = 48;
    s.layers = 1;
    s.heads = 3;
    s.kvHeads = 1;
    s.headDim = 16;
    s.ffn = 64;
    s.sections = {2, 3, 3, 0};
    s.withTokenizer = true;
    s.withVisionTokens = true;
    s.seed = 5;
    return s;
}

TinyM3MmprojOptions parityM3MmprojOptions() {
    TinyM3MmprojOptions o;
    o.width = 40;
    o.heads = 2;
    o.blocks = 2;
    o.ffn = 56;
    o.projection = 64;
    o.seed = 23;
    return o;
}

M3Spec parityM3VisionModelSpec() {
    M3Spec s;
    s.vocab = 272;
    s.hidden = 64;
    return s;
}

namespace {

RgbImage randomImage(int width, int height, std::uint32_t seed) {
    RgbImage image{width, height, {}};
    image.pixels.resize(std::size_t(width) * std::size_t(height) * 3);
    std::mt19937 rng(seed);
    for (std::uint8_t& p : image.pixels)
        p = std::uint8_t(rng() & 0xff);
    return image;
}

// Smooth colour waves plus noise of +-24: resampling filters differ less on it than on noise.
RgbImage smoothImage(int width, int height, std::uint32_t seed) {
    RgbImage image{width, height, {}};
    image.pixels.resize(std::size_t(width) * std::size_t(height) * 3);
    std::mt19937 rng(seed);
    std::size_t i = 0;
    for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
            for (int c = 0; c < 3; ++c, ++i) {
                const double wave = 128 + 90 * std::sin(0.11 * x * (c + 1) + 0.07 * y) *
                                              std::cos(0.05 * y * (3 - c) - 0.03 * x);
                const double noise = double(int(rng() % 49) - 24);
                image.pixels[i] = std::uint8_t(std::lround(std::clamp(wave + noise, 0.0, 255.0)));
            }
        }
    }
    return image;
}

}  // namespace

std::vector<ParityImage> parityImages() {
    return {{"identity-168x140.png", randomImage(168, 140, 31)},
            {"resize-150x125.png", smoothImage(150, 125, 32)},
            {"tie-70x98.png", smoothImage(70, 98, 33)}};
}

}  // namespace iris::inference::testing
