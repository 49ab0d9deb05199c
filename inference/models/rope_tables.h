#pragma once
// Rotary position embedding for a batch of tokens: the cos/sin tables computed once per forward
// pass and applied to every projection that rotates (queries, keys, MSA index queries and keys).
// Part of the model parts (model_parts.h): a second backend computes and applies them on its
// device.

#include <cstdint>
#include <span>
#include <vector>

#include "inference/models/model.h"
#include "inference/thread_pool.h"

namespace iris::inference {

class RopeTables {
public:
    // Angles position * ropeBase^(-2i / ropeDims) for the ropeDims / 2 frequencies i of each
    // token, in double, stored as f32 cos and sin. The position is position[0], or with M-RoPE
    // (config.multimodalRope) the component whose ropeSections range holds i.
    void build(std::span<const TokenInput> batch, const ModelConfig& config);

    // NEOX-rotates the first ropeDims values of each head of x (tokens x heads x headDim, the
    // tokens of the last build()); the second form splits the tokens between the pool's threads
    // (parallelItems, model_parts.h).
    void apply(float* x, int heads, int headDim) const { apply(x, heads, headDim, 0, m_tokens); }
    void apply(float* x, int heads, int headDim, ThreadPool& pool) const;

    // The tables of the last build(), tokens x ropeDims / 2 each (what a device backend uploads).
    std::span<const float> cosines() const { return m_cos; }
    std::span<const float> sines() const { return m_sin; }

private:
    void apply(float* x, int heads, int headDim, std::int64_t begin, std::int64_t end) const;

    int m_dims = 0;
    std::int64_t m_tokens = 0;
    std::vector<float> m_cos, m_sin;  // tokens x ropeDims / 2
};

}  // namespace iris::inference
