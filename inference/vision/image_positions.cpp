#include "inference/vision/image_positions.h"

#include <algorithm>

namespace iris::inference {

std::int32_t appendImagePositions(std::int32_t start, std::int64_t mergedH, std::int64_t mergedW,
                                  bool multimodalRope, std::vector<TokenPosition>& out) {
    if (!multimodalRope) {
        for (std::int64_t k = 0; k < mergedH * mergedW; ++k)
            out.push_back(textPosition(start + std::int32_t(k)));
        return start + std::int32_t(mergedH * mergedW);
    }
    for (std::int64_t r = 0; r < mergedH; ++r) {
        for (std::int64_t c = 0; c < mergedW; ++c)
            out.push_back({start, start + std::int32_t(r), start + std::int32_t(c), 0});
    }
    return start + std::int32_t(std::max(mergedH, mergedW));
}

}  // namespace iris::inference
