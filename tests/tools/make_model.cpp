// iris_make_model: writes a Qwen2-family GGUF with random weights in the shape of a real model
// (Qwen2.5-0.5B by default), for benchmarks and end-to-end tests of the CLI. With --tokenizer it
// carries a real vocabulary (a Hugging Face tokenizer.json, converted as llama.cpp converts it).
//
//   iris_make_model --out qwen05b-q8_0.gguf --type q8_0 --tokenizer tokenizer.json
//   iris_make_model --out qwen05b-q4_k_m.gguf --type q4_k_m ...
//
// --type q4_k_m reproduces llama.cpp's Q4_K_M recipe for this shape: q4_K (q6_K for attn_v and
// ffn_down in the layers llama.cpp gives more bits), falling back to q5_0 / q8_0 for the tensors
// whose 896-wide rows are not whole 256-value super-blocks, as llama-quantize does.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>

#include "base/temporary_folder.h"
#include "inference/gguf/gguf_writer.h"
#include "inference/tokenizer/tokenizer_import.h"
#include "kernels/quant.h"

namespace {

using iris::inference::GgufWriter;
using iris::kernels::TensorType;
namespace fs = std::filesystem;

// The vocabulary as llama.cpp's converter writes it for a model whose config.json says
// vocab_size = `vocab`: the token list padded with "[PAD<id>]" up to the embedding rows (Qwen2.5
// pads 151665 tokens to 151936), which llama.cpp requires. The converter reads config.json next
// to tokenizer.json, so tokenizer.json and its siblings are linked into a scratch folder beside
// such a config.json.
iris::Status addTokenizer(const fs::path& tokenizerJson, long vocab, GgufWriter& w) {
    iris::Result<iris::TemporaryFolder> scratch = iris::TemporaryFolder::create("iris_make_model");
    if (!scratch) return scratch.status();
    const fs::path dir = scratch->path();
    for (const fs::directory_entry& sibling :
         fs::directory_iterator(fs::absolute(tokenizerJson).parent_path())) {
        const fs::path name = sibling.path().filename();
        if (sibling.is_regular_file() && name != "config.json" && name != "tokenizer.json")
            fs::create_symlink(sibling.path(), dir / name);
    }
    fs::create_symlink(fs::absolute(tokenizerJson), dir / "tokenizer.json");
    std::ofstream(dir / "config.json") << "{\"vocab_size\": " << vocab << "}\n";
    return iris::inference::addHfTokenizerToGguf(dir / "tokenizer.json", w);
}

struct Options {
    std::string out, arch = "qwen2", type = "q8_0", tokenizer;
    long layers = 24, hidden = 896, heads = 14, kvHeads = 2, ffn = 4864, vocab = 151936;
    unsigned seed = 1;
};

TensorType parseType(const std::string& name) {
    static const std::map<std::string, TensorType> types = {
        {"f32", TensorType::F32},   {"f16", TensorType::F16},   {"bf16", TensorType::BF16},
        {"q8_0", TensorType::Q8_0}, {"q4_0", TensorType::Q4_0}, {"q4_1", TensorType::Q4_1},
        {"q5_0", TensorType::Q5_0}, {"q5_1", TensorType::Q5_1}, {"q4_k", TensorType::Q4_K},
        {"q5_k", TensorType::Q5_K}, {"q6_k", TensorType::Q6_K}};
    const auto it = types.find(name);
    if (it == types.end()) {
        std::cerr << "iris_make_model: unknown --type " << name << '\n';
        std::exit(2);
    }
    return it->second;
}

// llama.cpp's choice for one tensor under Q4_K_M (llama-quant.cpp: use_more_bits, and the
// fallback when a row is not a whole number of 256-value blocks).
TensorType q4KmType(const std::string& name, long layer, long layers, long rowLength) {
    const bool moreBits =
        layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
    TensorType t = TensorType::Q4_K;
    if (name == "token_embd.weight" || name == "output.weight") t = TensorType::Q6_K;
    if ((name.ends_with("attn_v.weight") || name.ends_with("ffn_down.weight")) && moreBits)
        t = TensorType::Q6_K;
    if (rowLength % 256 != 0) t = t == TensorType::Q6_K ? TensorType::Q8_0 : TensorType::Q5_0;
    return t;
}

class Builder {
public:
    Builder(const Options& o) : m_o(o), m_rng(o.seed), m_mixed(o.type == "q4_k_m") {
        if (!m_mixed) m_type = parseType(o.type);
    }

    void matrix(GgufWriter& w, const std::string& name, long in, long out, long layer) {
        const TensorType type = m_mixed ? q4KmType(name, layer, m_o.layers, in) : m_type;
        std::normal_distribution<float> normal(0.0f, 0.02f);
        std::vector<float> row(std::size_t(in), 0.0f);
        const long rowBytes = long(iris::kernels::rowBytes(type, in));
        std::vector<std::byte> bytes(std::size_t(rowBytes * out));
        for (long r = 0; r < out; ++r) {
            for (float& v : row)
                v = normal(m_rng);
            iris::kernels::quantizeRow(type, row.data(), bytes.data() + r * rowBytes, in);
        }
        check(w.addTensor(name, type, {in, out}, bytes));
    }

    void vector(GgufWriter& w, const std::string& name, long n, float mean) {
        std::normal_distribution<float> normal(mean, 0.02f);
        std::vector<float> v(std::size_t(n), 0.0f);
        for (float& x : v)
            x = normal(m_rng);
        check(w.addTensor(name, {n}, v));
    }

    static void check(const iris::Status& s) {
        if (!s.isOk()) {
            std::cerr << "iris_make_model: " << s.message() << '\n';
            std::exit(1);
        }
    }

private:
    const Options& m_o;
    std::mt19937 m_rng;
    bool m_mixed;
    TensorType m_type = TensorType::F32;
};

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i], value = argv[i + 1];
        if (key == "--out")
            o.out = value;
        else if (key == "--arch")
            o.arch = value;
        else if (key == "--type")
            o.type = value;
        else if (key == "--tokenizer")
            o.tokenizer = value;
        else if (key == "--layers")
            o.layers = std::stol(value);
        else if (key == "--hidden")
            o.hidden = std::stol(value);
        else if (key == "--heads")
            o.heads = std::stol(value);
        else if (key == "--kv-heads")
            o.kvHeads = std::stol(value);
        else if (key == "--ffn")
            o.ffn = std::stol(value);
        else if (key == "--vocab")
            o.vocab = std::stol(value);
        else if (key == "--seed")
            o.seed = unsigned(std::stoul(value));
        else {
            std::cerr << "iris_make_model: unknown option " << key << '\n';
            return 2;
        }
    }
    if (o.out.empty()) {
        std::cerr << "usage: iris_make_model --out FILE [--type q8_0|q4_k_m|f16|...] [--tokenizer "
                     "tokenizer.json]\n"
                     "                       [--arch qwen2|qwen3] [--layers N --hidden N --heads N "
                     "--kv-heads N\n"
                     "                        --ffn N --vocab N] [--seed N]\n";
        return 2;
    }
    GgufWriter w;
    const std::string& a = o.arch;
    w.set("general.architecture", a);
    w.set("general.name", "random " + a + " " + std::to_string(o.layers) + "x" +
                              std::to_string(o.hidden) + " " + o.type);
    w.set(a + ".block_count", std::uint32_t(o.layers));
    w.set(a + ".context_length", std::uint32_t(32768));
    w.set(a + ".embedding_length", std::uint32_t(o.hidden));
    w.set(a + ".feed_forward_length", std::uint32_t(o.ffn));
    w.set(a + ".attention.head_count", std::uint32_t(o.heads));
    w.set(a + ".attention.head_count_kv", std::uint32_t(o.kvHeads));
    w.set(a + ".rope.freq_base", 1000000.0f);
    w.set(a + ".attention.layer_norm_rms_epsilon", 1e-6f);
    const long headDim = o.hidden / o.heads;
    if (a == "qwen3") w.set(a + ".attention.key_length", std::uint32_t(headDim));
    if (!o.tokenizer.empty()) Builder::check(addTokenizer(o.tokenizer, o.vocab, w));

    Builder b(o);
    b.matrix(w, "token_embd.weight", o.hidden, o.vocab, 0);
    b.vector(w, "output_norm.weight", o.hidden, 1.0f);
    for (long l = 0; l < o.layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        b.vector(w, p + "attn_norm.weight", o.hidden, 1.0f);
        b.matrix(w, p + "attn_q.weight", o.hidden, o.heads * headDim, l);
        b.matrix(w, p + "attn_k.weight", o.hidden, o.kvHeads * headDim, l);
        b.matrix(w, p + "attn_v.weight", o.hidden, o.kvHeads * headDim, l);
        if (a == "qwen3") {
            b.vector(w, p + "attn_q_norm.weight", headDim, 1.0f);
            b.vector(w, p + "attn_k_norm.weight", headDim, 1.0f);
        } else {
            b.vector(w, p + "attn_q.bias", o.heads * headDim, 0.0f);
            b.vector(w, p + "attn_k.bias", o.kvHeads * headDim, 0.0f);
            b.vector(w, p + "attn_v.bias", o.kvHeads * headDim, 0.0f);
        }
        b.matrix(w, p + "attn_output.weight", o.heads * headDim, o.hidden, l);
        b.vector(w, p + "ffn_norm.weight", o.hidden, 1.0f);
        b.matrix(w, p + "ffn_gate.weight", o.hidden, o.ffn, l);
        b.matrix(w, p + "ffn_up.weight", o.hidden, o.ffn, l);
        b.matrix(w, p + "ffn_down.weight", o.ffn, o.hidden, l);
    }
    Builder::check(w.writeFile(o.out));
    std::cout << "wrote " << o.out << '\n';
    return 0;
}
