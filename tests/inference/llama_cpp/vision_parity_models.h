#pragma once
// The files of the llama.cpp vision parity test (llama_cpp_vision_parity_test.cpp): the two tiny
// projectors Iris supports (qwen2.5vl_merger, minimax_m3), a tiny language model of each
// projector's output width (libmtmd refuses a projector whose width differs from the model's;
// the model plays no other part) and the test images. llama.cpp's mtmd read them to make
// fixtures/*.embd.txt; the test regenerates the projectors and checks their SHA-256, and checks
// that the committed PNGs decode to the pixels below.

#include <cstdint>
#include <string>
#include <vector>

#include "inference/vision/image_preprocess.h"
#include "tests/inference/models/minimax_m3_reference.h"
#include "tests/inference/models/tiny_model.h"
#include "tests/inference/vision/tiny_m3_mmproj.h"
#include "tests/inference/vision/tiny_mmproj.h"

namespace iris::inference::testing {

// Qwen2.5-VL: width 64, 2 heads, 4 blocks (0 and 2 windowed, 1 and 3 full: n_wa_pattern 2),
// projection 48, f32.
TinyMmprojOptions parityQwenVlMmprojOptions();
// qwen2vl with hidden = 48 and the byte-level vocabulary with the vision tokens.
TinyModelSpec parityQwenVlModelSpec();

// MiniMax-M3: width 40, 2 heads of 20, 2 blocks, projection 64, f32.
TinyM3MmprojOptions parityM3MmprojOptions();
// minimax-m3 with hidden = 64 and M3's control tokens (tiny_m3_mmproj.h).
M3Spec parityM3VisionModelSpec();

struct ParityImage {
    std::string file;  // in fixtures/
    RgbImage image;
};

// "identity-168x140.png": random pixels; smart resize keeps 168x140 for both projectors (12 x 10
// patches: Qwen2.5-VL's 8 x 8-patch windows split it in 2 x 2 unequal windows).
// "resize-150x125.png": a smooth pattern with noise that both resize to 140x112.
// "tie-70x98.png": 70 / 28 = 2.5, which Python's round (Hugging Face, Iris) takes to 2 and C's
// std::round (llama.cpp) to 3.
std::vector<ParityImage> parityImages();

}  // namespace iris::inference::testing
