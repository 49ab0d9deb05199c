#pragma once
// The tiny models of the llama.cpp parity test (llama_cpp_parity_test.cpp): the F32 sources that
// llama.cpp's llama-quantize and a small driver of libllama read to make the fixtures
// (fixtures/README.md, in this folder's README.md). The test regenerates them and checks their
// SHA-256 against the digests the fixtures were made from.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/inference/models/minimax_m3_reference.h"
#include "tests/inference/models/tiny_model.h"

namespace iris::inference::testing {

// Qwen2 with every 2-D weight row a multiple of 256 (the K-quant super-block), a byte-level
// vocabulary (llama.cpp needs tokenizer.ggml.*), tied embeddings.
TinyModelSpec parityQwen2Spec();

// MiniMax-M3: one dense leading layer, then two MoE + MSA layers, with a byte-level vocabulary.
M3Spec parityM3Spec();

// makeM3Model(spec) with the tokenizer.ggml.* keys of makeTinyModel's byte-level vocabulary of
// the same size added: llama.cpp refuses a file without tokenizer.ggml.model ("key not found in
// model: tokenizer.ggml.model"), and makeM3Model writes none.
std::vector<std::byte> makeM3ModelWithByteVocabulary(const M3Spec& spec);

// The token ids both engines evaluate: `n` ids in [0, vocab) from a fixed LCG.
std::vector<std::int32_t> parityTokens(std::size_t n, std::int64_t vocab);

}  // namespace iris::inference::testing
