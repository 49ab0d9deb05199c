// Writes a starting corpus for the GGUF fuzzer: small valid files that cover every value type,
// nested arrays, several tensor types and alignments. iris_gguf_seeds DIR
#include <iostream>
#include <string>
#include <vector>

#include "inference/gguf/gguf_writer.h"

namespace {

using iris::inference::GgufArray;
using iris::inference::GgufWriter;
using iris::kernels::TensorType;

std::vector<GgufWriter> seeds() {
    std::vector<GgufWriter> all;
    {
        GgufWriter w;  // metadata only, every scalar type
        w.set("general.architecture", std::string("qwen2"));
        w.set("u8", std::uint8_t(1));
        w.set("i8", std::int8_t(-1));
        w.set("u16", std::uint16_t(2));
        w.set("i16", std::int16_t(-2));
        w.set("u32", std::uint32_t(3));
        w.set("i32", std::int32_t(-3));
        w.set("f32", 0.5f);
        w.set("bool", true);
        w.set("u64", std::uint64_t(4));
        w.set("i64", std::int64_t(-4));
        w.set("f64", 0.25);
        all.push_back(std::move(w));
    }
    {
        GgufWriter w;  // arrays, nested arrays, a tokenizer-like vocabulary
        w.set("tokenizer.ggml.tokens",
              GgufArray{std::vector<std::string>{"a", "b", "<|im_start|>"}});
        w.set("tokenizer.ggml.scores", GgufArray{std::vector<float>{0.0f, -1.0f, -2.0f}});
        w.set("tokenizer.ggml.token_type", GgufArray{std::vector<std::int32_t>{1, 1, 3}});
        w.set("qwen2vl.rope.dimension_sections",
              GgufArray{std::vector<std::uint32_t>{16, 24, 24, 0}});
        w.set("nested", GgufArray{std::vector<GgufArray>{GgufArray{std::vector<char>{1, 0}},
                                                         GgufArray{std::vector<double>{1.0}}}});
        all.push_back(std::move(w));
    }
    for (std::uint32_t alignment : {32u, 64u}) {
        GgufWriter w(alignment);  // tensors of several types
        w.set("general.architecture", std::string("qwen2"));
        const std::vector<std::byte> q8(34 * 2), q4k(144), f16(2 * 8);
        const std::vector<float> f32(16, 1.0f);
        (void)w.addTensor("a.weight", TensorType::Q8_0, {32, 2}, q8);
        (void)w.addTensor("b.weight", TensorType::Q4_K, {256}, q4k);
        (void)w.addTensor("c.weight", TensorType::F16, {8}, f16);
        (void)w.addTensor("d.weight", {4, 4}, f32);
        all.push_back(std::move(w));
    }
    return all;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: iris_gguf_seeds DIR\n";
        return 2;
    }
    std::filesystem::create_directories(argv[1]);
    int index = 0;
    for (const GgufWriter& writer : seeds()) {
        const auto path =
            std::filesystem::path(argv[1]) / ("seed" + std::to_string(index++) + ".gguf");
        if (const iris::Status status = writer.writeFile(path); !status.isOk()) {
            std::cerr << status.message() << '\n';
            return 1;
        }
    }
    std::cout << "wrote " << index << " seeds to " << argv[1] << '\n';
    return 0;
}
