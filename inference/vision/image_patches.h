#pragma once
// A still image made ready for a Qwen2.5-VL-style vision tower: smart-resized to multiples of
// patch x merge pixels, scaled to [0, 1], normalised per channel, cut into patches. The contract
// between preprocessing (image_preprocess.h) and the towers (vision_model.h).

#include <array>
#include <cstdint>
#include <vector>

namespace iris::inference {

struct ImagePatches {
    int originalWidth = 0;   // the decoded image, pixels
    int originalHeight = 0;
    int resizedWidth = 0;    // after smart resize: gridW * patchSize
    int resizedHeight = 0;
    int patchSize = 14;      // pixels per patch side
    int temporalPatch = 2;   // frames per patch (a still image repeats its frame)
    int mergeSize = 2;       // patches per merged token side
    int gridH = 0;           // patches per column / row; both multiples of mergeSize
    int gridW = 0;

    // gridH * gridW rows of patchValues() floats. Rows are in 2x2 merge-window order: merge
    // window row y, window column x, then dy, dx -> patch (2y + dy, 2x + dx). Each row is laid
    // out as Hugging Face flattens it: [channel 3][frame temporalPatch][py patchSize][px
    // patchSize] (the frames of a still image are equal).
    std::vector<float> values;

    // SHA-256 of the decoded pixels and the preprocessing that made `values`: equal hashes mean
    // equal embeddings, so a cache can skip the tower for a screenshot it has already seen.
    std::array<std::uint8_t, 32> hash{};

    std::int64_t patchCount() const { return std::int64_t(gridH) * gridW; }
    std::int64_t patchValues() const {
        return std::int64_t(3) * temporalPatch * patchSize * patchSize;
    }
    // Tokens the image occupies in the language model after the merger.
    std::int64_t tokenCount() const {
        return std::int64_t(gridH / mergeSize) * (gridW / mergeSize);
    }
};

}  // namespace iris::inference
