#include "inference/prompt_layout.h"

#include <algorithm>
#include <cstring>

namespace iris::inference {

PromptSlots layOutPrompt(std::span<const std::int32_t> prompt, std::span<const PromptImage> images,
                         bool multimodalRope) {
    PromptSlots out;
    out.items.reserve(prompt.size());
    std::int32_t running = 0;
    std::size_t nextImage = 0;
    for (std::size_t i = 0; i <= prompt.size(); ++i) {
        for (; nextImage < images.size() && images[nextImage].offset == i; ++nextImage) {
            const ImagePatches& image = *images[nextImage].image;
            const std::int64_t mergedH = image.gridH / std::max(1, image.mergeSize),
                               mergedW = image.gridW / std::max(1, image.mergeSize);
            const std::int32_t after =
                appendImagePositions(running, mergedH, mergedW, multimodalRope, out.positions);
            for (std::int64_t k = 0; k < mergedH * mergedW; ++k) {
                out.items.push_back({-1, std::int32_t(k), image.hash});
                out.imageOf.push_back(std::int32_t(nextImage));
                // Inside an image the running position stays at its start until the last token.
                out.nextPositions.push_back(k + 1 == mergedH * mergedW ? after : running);
            }
            out.imageTokens += mergedH * mergedW;
            running = after;
        }
        if (i == prompt.size()) break;
        out.items.push_back({prompt[i], -1, {}});
        out.positions.push_back(textPosition(running));
        out.imageOf.push_back(-1);
        out.nextPositions.push_back(++running);
    }
    return out;
}

Sha256Digest blockName(const Sha256Digest& parent, std::span<const SlotItem> items,
                       std::span<const TokenPosition> positions) {
    Sha256 hash;
    hash.update(parent);
    for (std::size_t i = 0; i < items.size(); ++i) {
        // Fixed-size little records: token, image token, image hash (zeros for text), position.
        std::uint8_t record[4 + 4 + 32 + 16];
        const SlotItem& item = items[i];
        std::memcpy(record, &item.token, 4);
        std::memcpy(record + 4, &item.imageToken, 4);
        if (item.isImage())
            std::memcpy(record + 8, item.hash.data(), 32);
        else
            std::memset(record + 8, 0, 32);
        std::memcpy(record + 40, positions[i].data(), 16);
        hash.update(record);
    }
    return hash.finish();
}

}  // namespace iris::inference
