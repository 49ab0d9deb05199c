// Writes the F32 source models of the llama.cpp parity test to a folder, with their SHA-256:
//   make_parity_models DIR  ->  DIR/qwen2-f32.gguf, DIR/minimax-m3-f32.gguf
// and prints the token ids the fixtures were made with. Not a test; see README.md here.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "base/sha256.h"
#include "tests/inference/llama_cpp/parity_models.h"

using namespace iris;
using namespace iris::inference;
using namespace iris::inference::testing;

namespace {

bool write(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!out) return false;
    const Sha256Digest digest =
        Sha256::hash(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
    std::printf("%s  %s\n", toHex(digest).c_str(), path.string().c_str());
    return true;
}

void printTokens(const char* name, const std::vector<std::int32_t>& tokens) {
    std::printf("%s tokens:", name);
    for (std::int32_t t : tokens)
        std::printf(" %d", t);
    std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    const TinyModelSpec qwen = parityQwen2Spec();
    const M3Spec m3 = parityM3Spec();
    if (!write(dir / "qwen2-f32.gguf", makeTinyModel(qwen))) return 1;
    if (!write(dir / "minimax-m3-f32.gguf", makeM3ModelWithByteVocabulary(m3))) return 1;
    // As makeM3Model writes it: llama.cpp refuses it for the missing tokenizer.ggml.model.
    if (!write(dir / "minimax-m3-f32-no-tokenizer.gguf", makeM3Model(m3))) return 1;
    printTokens("qwen2", parityTokens(64, qwen.vocab));
    printTokens("minimax-m3", parityTokens(64, m3.vocab));
    return 0;
}
