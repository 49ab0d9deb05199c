#pragma once
// Rotary positions of a prompt that mixes text and images (docs: qwen25vl.md §3.2).
//
// With M-RoPE (Qwen2-VL, Qwen2.5-VL, UI-TARS): a text token at running position s gets
// (s, s, s); an image of mergedH x mergedW tokens starting at s gives token k (row r = k /
// mergedW, column c = k % mergedW) the position (s, s + r, s + c), and the running position
// after it is s + max(mergedH, mergedW) — not s + mergedH * mergedW, so positions and KV slots
// part ways after the first image. Without M-RoPE (a plain Qwen2 decoder such as OpenCUA's) every
// token, image or text, takes the next 1-D position. The fourth component is always 0.

#include <array>
#include <cstdint>
#include <vector>

namespace iris::inference {

using TokenPosition = std::array<std::int32_t, 4>;

// Appends the positions of an image's mergedH * mergedW tokens, in row-major order, to `out`
// and returns the running position after the image.
std::int32_t appendImagePositions(std::int32_t start, std::int64_t mergedH, std::int64_t mergedW,
                                  bool multimodalRope, std::vector<TokenPosition>& out);

// The position of a text token at running position s: (s, s, s, 0).
inline TokenPosition textPosition(std::int32_t s) {
    return {s, s, s, 0};
}

}  // namespace iris::inference
