#include "tests/inference/vision/tiny_m3_mmproj.h"

#include <cmath>
#include <random>
#include <stdexcept>

#include "inference/gguf/gguf_file.h"
#include "inference/gguf/gguf_writer.h"
#include "inference/tokenizer/byte_level.h"
#include "kernels/quant.h"

namespace iris::inference::testing {

TinyMmproj makeTinyM3Mmproj(const TinyM3MmprojOptions& o) {
    TinyMmproj result;
    GgufWriter writer;
    std::mt19937 rng(o.seed);
    const auto setKey = [&](const std::string& key, GgufValue value) {
        if (key != o.omitKey) writer.set(key, std::move(value));
    };
    setKey("general.architecture", std::string("clip"));
    setKey("clip.projector_type", std::string("minimax_m3"));
    setKey("clip.has_vision_encoder", true);
    setKey("clip.use_gelu", true);
    setKey("clip.vision.embedding_length", std::uint32_t(o.width));
    setKey("clip.vision.feed_forward_length", std::uint32_t(o.ffn));
    setKey("clip.vision.block_count", std::uint32_t(o.blocks));
    setKey("clip.vision.attention.head_count", std::uint32_t(o.heads));
    setKey("clip.vision.attention.layer_norm_epsilon", 1e-5f);
    setKey("clip.vision.image_size", std::uint32_t(2016));
    setKey("clip.vision.patch_size", std::uint32_t(o.patchSize));
    if (o.writeProjectionDim) setKey("clip.vision.projection_dim", std::uint32_t(o.projection));
    setKey("clip.vision.spatial_merge_size", std::uint32_t(2));
    setKey("clip.vision.image_mean", GgufArray{std::vector<float>{0.5f, 0.45f, 0.4f}});
    setKey("clip.vision.image_std", GgufArray{std::vector<float>{0.25f, 0.3f, 0.28f}});

    // Uniform values of the given half-range; 1-D tensors stay f32, the others take matrixType
    // and the kept weights are the rounded values.
    const auto add = [&](const std::string& name, std::vector<std::int64_t> shape, float center,
                         float range) {
        if (name == o.omitTensor) return;
        if (name == o.misshapeTensor) shape.back() += 1;
        const kernels::TensorType type =
            shape.size() == 1 ? kernels::TensorType::F32 : o.matrixType;
        addRandomTensor(writer, result, rng, name, std::move(shape), type, center, range);
    };
    const std::int64_t c = o.width, p = o.patchSize, P = o.projection;
    const float patchRange = 2.0f / std::sqrt(float(3 * 2 * p * p));
    add("v.patch_embd.weight", {p, p, 3, c}, 0.0f, patchRange);
    add("v.patch_embd.weight.1", {p, p, 3, c}, 0.0f, patchRange);
    add("v.pre_ln.weight", {c}, 1.0f, 0.3f);
    add("v.pre_ln.bias", {c}, 0.0f, 0.2f);
    const float widthRange = 1.5f / std::sqrt(float(c));
    for (std::int64_t i = 0; i < o.blocks; ++i) {
        const std::string b = "v.blk." + std::to_string(i) + ".";
        add(b + "ln1.weight", {c}, 1.0f, 0.3f);
        add(b + "ln1.bias", {c}, 0.0f, 0.2f);
        for (const char* name : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
            // Larger q/k weights make the attention peaked, so wrong positions show.
            const std::string n(name);
            const float scale = n == "attn_q" || n == "attn_k" ? 2.5f : 1.0f;
            add(b + n + ".weight", {c, c}, 0.0f, scale * widthRange);
            add(b + n + ".bias", {c}, 0.0f, 0.3f);
        }
        add(b + "ln2.weight", {c}, 1.0f, 0.3f);
        add(b + "ln2.bias", {c}, 0.0f, 0.2f);
        add(b + "ffn_up.weight", {c, o.ffn}, 0.0f, widthRange);
        add(b + "ffn_up.bias", {o.ffn}, 0.0f, 0.3f);
        add(b + "ffn_down.weight", {o.ffn, c}, 0.0f, 1.5f / std::sqrt(float(o.ffn)));
        add(b + "ffn_down.bias", {c}, 0.0f, 0.3f);
    }
    const float projRange = 1.5f / std::sqrt(float(P));
    add("mm.1.weight", {c, P}, 0.0f, widthRange);
    add("mm.1.bias", {P}, 0.0f, 0.3f);
    add("mm.2.weight", {P, P}, 0.0f, projRange);
    add("mm.2.bias", {P}, 0.0f, 0.3f);
    add("mm.merge.fc1.weight", {4 * P, P}, 0.0f, 1.5f / std::sqrt(float(4 * P)));
    add("mm.merge.fc1.bias", {P}, 0.0f, 0.3f);
    add("mm.merge.fc2.weight", {P, P}, 0.0f, projRange);
    add("mm.merge.fc2.bias", {P}, 0.0f, 0.3f);
    result.bytes = writer.serialize();
    return result;
}

std::vector<std::byte> makeM3ModelWithTokenizer(const M3Spec& spec) {
    if (spec.vocab < 272) throw std::runtime_error("the tiny M3 vocabulary needs 272 ids");
    const std::vector<std::byte> plain = makeM3Model(spec);
    Result<GgufFile> file = GgufFile::parse(std::span<const std::byte>(plain), "m3.gguf");
    if (!file) throw std::runtime_error(file.status().message());
    GgufWriter writer;
    for (const auto& [key, value] : file->metadata())
        writer.set(key, value);
    std::vector<std::string> tokens;
    std::vector<std::int32_t> types;
    for (int byte = 0; byte < 256; ++byte) {
        tokens.push_back(byte_level::encode(std::string(1, static_cast<char>(byte))));
        types.push_back(1);
    }
    for (const char* control : {"]~!b[", "]~b]", "[e~[", "]<]image[>[", "]<]start of image[>[",
                                "]<]end of image[>[", "<mm:think>", "</mm:think>"}) {
        tokens.emplace_back(control);
        types.push_back(3);
    }
    while (std::int64_t(tokens.size()) < spec.vocab) {
        tokens.push_back("[PAD" + std::to_string(tokens.size()) + "]");
        types.push_back(5);
    }
    writer.set("tokenizer.ggml.model", std::string("gpt2"));
    writer.set("tokenizer.ggml.pre", std::string("minimax-m2"));
    writer.set("tokenizer.ggml.tokens", GgufArray{tokens});
    writer.set("tokenizer.ggml.token_type", GgufArray{types});
    writer.set("tokenizer.ggml.merges", GgufArray{std::vector<std::string>{}});
    writer.set("tokenizer.ggml.bos_token_id", std::uint32_t(kM3Begin));
    writer.set("tokenizer.ggml.eos_token_id", std::uint32_t(kM3EndOfMessage));
    writer.set("tokenizer.ggml.add_bos_token", false);
    for (const GgufTensor& t : file->tensors()) {
        const Status status = writer.addTensor(t.name, t.type, t.shape, t.data);
        if (!status.isOk()) throw std::runtime_error(status.message());
    }
    return writer.serialize();
}

}  // namespace iris::inference::testing
