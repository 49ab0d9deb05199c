#include "tests/inference/vision/tiny_mmproj.h"

#include <cmath>
#include <random>
#include <stdexcept>

#include "inference/gguf/gguf_writer.h"
#include "kernels/quant.h"

namespace iris::inference::testing {

TinyMmproj makeTinyMmproj(const TinyMmprojOptions& o) {
    TinyMmproj result;
    GgufWriter writer;
    std::mt19937 rng(o.seed);
    const auto setKey = [&](const std::string& key, GgufValue value) {
        if (key != o.omitKey) writer.set(key, std::move(value));
    };
    setKey("general.architecture", std::string("clip"));
    setKey("clip.projector_type", o.projectorType);
    setKey("clip.has_vision_encoder", true);
    setKey("clip.use_silu", o.useSilu);
    setKey("clip.vision.embedding_length", std::uint32_t(o.width));
    setKey("clip.vision.feed_forward_length", std::uint32_t(o.ffn));
    setKey("clip.vision.block_count", std::uint32_t(o.blocks));
    setKey("clip.vision.attention.head_count", std::uint32_t(o.heads));
    setKey("clip.vision.attention.layer_norm_epsilon", 1e-6f);
    setKey("clip.vision.patch_size", std::uint32_t(o.patchSize));
    setKey("clip.vision.image_size", std::uint32_t(560));
    setKey("clip.vision.projection_dim", std::uint32_t(o.projection));
    setKey("clip.vision.n_wa_pattern", std::uint32_t(o.windowPattern));
    setKey("clip.vision.spatial_merge_size", std::uint32_t(2));
    setKey("clip.vision.image_mean",
           GgufArray{std::vector<float>{0.48145466f, 0.4578275f, 0.40821073f}});
    setKey("clip.vision.image_std",
           GgufArray{std::vector<float>{0.26862954f, 0.26130258f, 0.27577711f}});

    // Uniform values of the given half-range; 1-D tensors stay f32 (as llama.cpp writes them),
    // the others take matrixType, and the reference sees the rounded values.
    const auto add = [&](const std::string& name, std::vector<std::int64_t> shape, float center,
                         float range, bool convolution = false) {
        if (name == o.omitTensor) return;
        if (name == o.misshapeTensor) shape.back() += 1;
        // Convolution kernels stay f16 in quantised files (rows of 14 are not whole blocks), as
        // llama.cpp keeps them.
        const bool quantised = kernels::tensorTypeInfo(o.matrixType).blockElements > 1;
        const kernels::TensorType type = shape.size() == 1          ? kernels::TensorType::F32
                                         : convolution && quantised ? kernels::TensorType::F16
                                                                    : o.matrixType;
        addRandomTensor(writer, result, rng, name, std::move(shape), type, center, range);
    };
    const std::int64_t c = o.width, p = o.patchSize;
    const float patchRange = 1.0f / std::sqrt(float(3 * 2 * p * p));
    add("v.patch_embd.weight", {p, p, 3, c}, 0.0f, 2.0f * patchRange, true);
    add("v.patch_embd.weight.1", {p, p, 3, c}, 0.0f, 2.0f * patchRange, true);
    const float widthRange = 1.5f / std::sqrt(float(c));
    const float ffnRange = 1.5f / std::sqrt(float(o.ffn));
    for (std::int64_t i = 0; i < o.blocks; ++i) {
        const std::string b = "v.blk." + std::to_string(i) + ".";
        add(b + "ln1.weight", {c}, 1.0f, 0.5f);
        for (const char* name : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
            // Larger q/k weights make the attention peaked, so a wrong window shows.
            const float scale =
                std::string(name) == "attn_q" || std::string(name) == "attn_k" ? 2.0f : 1.0f;
            add(b + name + ".weight", {c, c}, 0.0f, scale * widthRange);
            add(b + name + ".bias", {c}, 0.0f, 0.3f);
        }
        add(b + "ln2.weight", {c}, 1.0f, 0.5f);
        add(b + "ffn_gate.weight", {c, o.ffn}, 0.0f, widthRange);
        add(b + "ffn_gate.bias", {o.ffn}, 0.0f, 0.3f);
        add(b + "ffn_up.weight", {c, o.ffn}, 0.0f, widthRange);
        add(b + "ffn_up.bias", {o.ffn}, 0.0f, 0.3f);
        add(b + "ffn_down.weight", {o.ffn, c}, 0.0f, ffnRange);
        add(b + "ffn_down.bias", {c}, 0.0f, 0.3f);
    }
    add("v.post_ln.weight", {c}, 1.0f, 0.5f);
    const float mergedRange = 1.5f / std::sqrt(float(4 * c));
    add("mm.0.weight", {4 * c, 4 * c}, 0.0f, mergedRange);
    add("mm.0.bias", {4 * c}, 0.0f, 0.3f);
    add("mm.2.weight", {4 * c, o.projection}, 0.0f, mergedRange);
    add("mm.2.bias", {o.projection}, 0.0f, 0.3f);
    result.bytes = writer.serialize();
    return result;
}

void addRandomTensor(GgufWriter& writer, TinyMmproj& mmproj, std::mt19937& rng,
                     const std::string& name, std::vector<std::int64_t> shape,
                     kernels::TensorType type, float center, float range) {
    std::int64_t count = 1;
    for (std::int64_t d : shape)
        count *= d;
    std::uniform_real_distribution<float> dist(center - range, center + range);
    std::vector<float> values(static_cast<std::size_t>(count));
    for (float& v : values)
        v = dist(rng);
    const std::int64_t rowLength = shape[0], rowCount = count / rowLength;
    const std::int64_t rowBytes = kernels::rowBytes(type, rowLength);
    std::vector<std::byte> bytes(static_cast<std::size_t>(rowBytes * rowCount));
    for (std::int64_t r = 0; r < rowCount; ++r) {
        kernels::quantizeRow(type, values.data() + r * rowLength, bytes.data() + r * rowBytes,
                             rowLength);
        kernels::dequantizeRow(type, bytes.data() + r * rowBytes, values.data() + r * rowLength,
                               rowLength);
    }
    const Status status = writer.addTensor(name, type, std::move(shape), bytes);
    if (!status.isOk()) throw std::runtime_error(status.message());
    mmproj.weights[name] = std::move(values);
}

}  // namespace iris::inference::testing
