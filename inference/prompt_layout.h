#pragma once
// A prompt of tokens and images laid out as KV slots, and the names of its full KV blocks. Both
// Session (one conversation) and the Scheduler (many) read prompts this way, so that a block
// one of them computes is the block the other would.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/sha256.h"
#include "inference/vision/image_patches.h"
#include "inference/vision/image_positions.h"

namespace iris::inference {

// An image in a prompt: its tokens go before prompt[offset] (offset == prompt.size(): at the
// end). The caller writes the tokens around it (VisionConfig::imageBegin and imageEnd:
// <|vision_start|> and <|vision_end|> for Qwen2-VL, ]<]start of image[>[ and ]<]end of image[>[
// for MiniMax-M3; for a templated prompt the template writes them and
// Engine::splitAtPlaceholders puts the image between).
struct PromptImage {
    std::size_t offset = 0;
    std::shared_ptr<const ImagePatches> image;  // from Engine::prepareImage
};

// What sits in one KV slot: a text token, or token `imageToken` of the image with `hash`.
struct SlotItem {
    std::int32_t token = -1;
    std::int32_t imageToken = -1;
    Sha256Digest hash{};
    bool isImage() const { return imageToken >= 0; }
    bool operator==(const SlotItem& other) const {
        return token == other.token && imageToken == other.imageToken &&
               (imageToken < 0 || hash == other.hash);
    }
};

// A prompt as KV slots: its items, their rotary positions, the running position after each
// (what the next token would get), and the prompt image each image token comes from (-1 for
// text).
struct PromptSlots {
    std::vector<SlotItem> items;
    std::vector<TokenPosition> positions;
    std::vector<std::int32_t> nextPositions;
    std::vector<std::int32_t> imageOf;
    std::int64_t imageTokens = 0;
};

// Lays out `prompt` with `images` (in offset order). After an image of gh x gw merged tokens
// starting at position s, text resumes at s + max(gh, gw) with M-RoPE (multimodalRope) while
// the slots advance by gh * gw; without M-RoPE each image token takes the next position.
PromptSlots layOutPrompt(std::span<const std::int32_t> prompt, std::span<const PromptImage> images,
                         bool multimodalRope);

// The name of a full KV block: SHA-256 over the previous block's name (zeros for the first)
// and each slot's item and rotary position. Equal names mean equal K/V in every layer (the
// same content at the same positions after the same prefix).
Sha256Digest blockName(const Sha256Digest& parent, std::span<const SlotItem> items,
                       std::span<const TokenPosition> positions);

}  // namespace iris::inference
