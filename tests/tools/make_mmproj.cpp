// iris_make_mmproj: writes a Qwen2.5-VL vision projector GGUF ("mmproj", clip.projector_type
// qwen2.5vl_merger, docs/qwen25vl.md section 2.2) with random weights in the shape of a real one
// (Qwen2.5-VL-3B's by default: 32 blocks, width 1280, 16 heads, FFN 3420, projection 2048), for
// the vision benchmark. The f16 default is about 1.3 GB: write it outside the repository.
//
//   iris_make_mmproj --out /tmp/qwen25vl-3b-mmproj-f16.gguf
//   iris_make_mmproj --out /tmp/tiny.gguf --blocks 4 --width 64 --heads 2 --ffn 96 --projection 48
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "inference/gguf/gguf_writer.h"
#include "kernels/quant.h"

namespace {

using iris::inference::GgufArray;
using iris::inference::GgufWriter;
using iris::kernels::TensorType;

struct Options {
    std::string out, type = "f16";
    long blocks = 32, width = 1280, heads = 16, ffn = 3420, projection = 2048, windowPattern = 8;
    unsigned long seed = 1;
};

[[noreturn]] void usage(const std::string& problem) {
    std::cerr << "iris_make_mmproj: " << problem
              << "\nusage: iris_make_mmproj --out FILE [--type f16|bf16|f32|q8_0] [--blocks N] "
                 "[--width N] [--heads N] [--ffn N] [--projection N] [--wa-pattern N] [--seed N]\n";
    std::exit(2);
}

TensorType parseType(const std::string& name) {
    static const std::map<std::string, TensorType> types = {{"f32", TensorType::F32},
                                                            {"f16", TensorType::F16},
                                                            {"bf16", TensorType::BF16},
                                                            {"q8_0", TensorType::Q8_0}};
    const auto it = types.find(name);
    if (it == types.end()) usage("unknown --type " + name);
    return it->second;
}

// Random weights for 650 million values must be cheap: splitmix64, 2 values per draw.
class Random {
public:
    explicit Random(unsigned long seed) : m_state(seed) {}
    // Uniform in [-range, range).
    float next(float range) {
        if (m_spare == 0) {
            m_state += 0x9E3779B97F4A7C15ull;
            unsigned long long z = m_state;
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            m_bits = z ^ (z >> 31);
            m_spare = 2;
        }
        const auto word = static_cast<std::uint32_t>(m_bits >> (32 * (--m_spare)));
        return (float(word) * 0x1.0p-31f - 1.0f) * range;
    }

private:
    unsigned long long m_state;
    unsigned long long m_bits = 0;
    int m_spare = 0;
};

class Builder {
public:
    Builder(GgufWriter& writer, const Options& o)
        : m_writer(writer), m_random(o.seed), m_type(parseType(o.type)) {}

    // A tensor of ggml shape `shape` whose rows (shape[0] values) are of `type`.
    void tensor(const std::string& name, const std::vector<std::int64_t>& shape, TensorType type,
                float center, float range) {
        const std::int64_t rowLength = shape[0];
        std::int64_t rows = 1;
        for (std::size_t i = 1; i < shape.size(); ++i)
            rows *= shape[i];
        const std::int64_t rowBytes = iris::kernels::rowBytes(type, rowLength);
        std::vector<std::byte> bytes(static_cast<std::size_t>(rowBytes * rows));
        std::vector<float> row(static_cast<std::size_t>(rowLength));
        for (std::int64_t r = 0; r < rows; ++r) {
            for (float& v : row)
                v = center + m_random.next(range);
            iris::kernels::quantizeRow(type, row.data(), bytes.data() + r * rowBytes, rowLength);
        }
        const iris::Status status = m_writer.addTensor(name, type, shape, bytes);
        if (!status.isOk()) usage(status.message());
    }
    void matrix(const std::string& name, std::int64_t in, std::int64_t out) {
        // Rows that are not whole blocks fall back to f16, as llama-quantize does (ffn_down's
        // 3420).
        const bool wholeBlocks = in % iris::kernels::tensorTypeInfo(m_type).blockElements == 0;
        const TensorType type = wholeBlocks ? m_type : TensorType::F16;
        tensor(name + ".weight", {in, out}, type, 0.0f, 1.5f / std::sqrt(float(in)));
        tensor(name + ".bias", {out}, TensorType::F32, 0.0f, 0.1f);
    }
    void norm(const std::string& name, std::int64_t n) {
        tensor(name, {n}, TensorType::F32, 1.0f, 0.2f);
    }
    TensorType type() const { return m_type; }

private:
    GgufWriter& m_writer;
    Random m_random;
    TensorType m_type;
};

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (i + 1 >= argc) usage("missing value after " + arg);
        const std::string value = argv[++i];
        const auto number = [&]() {
            char* end = nullptr;
            const long n = std::strtol(value.c_str(), &end, 10);
            if (end == value.c_str() || *end != '\0' || n <= 0) usage(arg + " wants a number > 0");
            return n;
        };
        if (arg == "--out")
            o.out = value;
        else if (arg == "--type")
            o.type = value;
        else if (arg == "--blocks")
            o.blocks = number();
        else if (arg == "--width")
            o.width = number();
        else if (arg == "--heads")
            o.heads = number();
        else if (arg == "--ffn")
            o.ffn = number();
        else if (arg == "--projection")
            o.projection = number();
        else if (arg == "--wa-pattern")
            o.windowPattern = number();
        else if (arg == "--seed")
            o.seed = static_cast<unsigned long>(number());
        else
            usage("unknown option " + arg);
    }
    if (o.out.empty()) usage("--out is required");

    GgufWriter writer;
    writer.set("general.architecture", std::string("clip"));
    writer.set("general.name", std::string("random Qwen2.5-VL vision tower (iris_make_mmproj)"));
    writer.set("clip.projector_type", std::string("qwen2.5vl_merger"));
    writer.set("clip.has_vision_encoder", true);
    writer.set("clip.use_silu", true);
    writer.set("clip.vision.embedding_length", std::uint32_t(o.width));
    writer.set("clip.vision.feed_forward_length", std::uint32_t(o.ffn));
    writer.set("clip.vision.block_count", std::uint32_t(o.blocks));
    writer.set("clip.vision.attention.head_count", std::uint32_t(o.heads));
    writer.set("clip.vision.attention.layer_norm_epsilon", 1e-6f);
    writer.set("clip.vision.patch_size", std::uint32_t(14));
    writer.set("clip.vision.image_size", std::uint32_t(560));
    writer.set("clip.vision.projection_dim", std::uint32_t(o.projection));
    writer.set("clip.vision.n_wa_pattern", std::uint32_t(o.windowPattern));
    writer.set("clip.vision.spatial_merge_size", std::uint32_t(2));
    writer.set("clip.vision.window_size", std::uint32_t(112));
    writer.set("clip.vision.image_mean",
               GgufArray{std::vector<float>{0.48145466f, 0.4578275f, 0.40821073f}});
    writer.set("clip.vision.image_std",
               GgufArray{std::vector<float>{0.26862954f, 0.26130258f, 0.27577711f}});

    Builder b(writer, o);
    // The patch kernel stays f16 for quantised files, as llama.cpp keeps convolution weights.
    const TensorType patchType = b.type() == TensorType::Q8_0 ? TensorType::F16 : b.type();
    const float patchRange = 1.5f / std::sqrt(float(3 * 2 * 14 * 14));
    b.tensor("v.patch_embd.weight", {14, 14, 3, o.width}, patchType, 0.0f, patchRange);
    b.tensor("v.patch_embd.weight.1", {14, 14, 3, o.width}, patchType, 0.0f, patchRange);
    for (long i = 0; i < o.blocks; ++i) {
        const std::string p = "v.blk." + std::to_string(i) + ".";
        b.norm(p + "ln1.weight", o.width);
        for (const char* name : {"attn_q", "attn_k", "attn_v", "attn_out"})
            b.matrix(p + name, o.width, o.width);
        b.norm(p + "ln2.weight", o.width);
        b.matrix(p + "ffn_gate", o.width, o.ffn);
        b.matrix(p + "ffn_up", o.width, o.ffn);
        b.matrix(p + "ffn_down", o.ffn, o.width);
    }
    b.norm("v.post_ln.weight", o.width);
    b.matrix("mm.0", 4 * o.width, 4 * o.width);
    b.matrix("mm.2", 4 * o.width, o.projection);

    const iris::Status status = writer.writeFile(o.out);
    if (!status.isOk()) {
        std::cerr << "iris_make_mmproj: " << status.message() << '\n';
        return 1;
    }
    std::cout << "wrote " << o.out << '\n';
    return 0;
}
