#include "tests/inference/llama_cpp/parity_models.h"

#include <stdexcept>

#include "inference/gguf/gguf_file.h"
#include "inference/gguf/gguf_writer.h"

namespace iris::inference::testing {

TinyModelSpec parityQwen2Spec() {
    TinyModelSpec s;
    s.arch = "qwen2";
    s.vocab = 300;
    s.hidden = 256;
    s.layers = 2;
    s.heads = 4;
    s.kvHeads = 2;
    s.headDim = 64;
    s.ffn = 256;
    s.withTokenizer = true;
    s.seed = 7;
    s.weightScale = 0.08f;
    return s;
}

M3Spec parityM3Spec() {
    M3Spec s;
    s.vocab = 300;
    return s;
}

std::vector<std::byte> makeM3ModelWithByteVocabulary(const M3Spec& spec) {
    const std::vector<std::byte> m3 = makeM3Model(spec);
    TinyModelSpec vocabSpec;
    vocabSpec.vocab = spec.vocab;
    vocabSpec.layers = 0;
    vocabSpec.withTokenizer = true;
    const std::vector<std::byte> tiny = makeTinyModel(vocabSpec);
    Result<GgufFile> model = GgufFile::parse(m3, "m3.gguf");
    Result<GgufFile> vocab = GgufFile::parse(tiny, "vocab.gguf");
    if (!model || !vocab) throw std::runtime_error("makeM3ModelWithByteVocabulary: parse");
    GgufWriter w;
    for (const auto& [key, value] : model->metadata())
        w.set(key, value);
    for (const auto& [key, value] : vocab->metadata()) {
        if (key.starts_with("tokenizer.")) w.set(key, value);
    }
    for (const GgufTensor& t : model->tensors()) {
        if (!w.addTensor(t.name, t.type, t.shape, t.data).isOk())
            throw std::runtime_error("makeM3ModelWithByteVocabulary: " + t.name);
    }
    return w.serialize();
}

std::vector<std::int32_t> parityTokens(std::size_t n, std::int64_t vocab) {
    std::vector<std::int32_t> tokens(n);
    std::uint32_t state = 12345u;
    for (std::int32_t& t : tokens) {
        state = state * 1664525u + 1013904223u;
        t = std::int32_t((state >> 8) % std::uint32_t(vocab));
    }
    return tokens;
}

}  // namespace iris::inference::testing
