#pragma once
// What a loaded Tokenizer holds; shared by tokenizer.cpp (encoding, decoding) and
// tokenizer_load.cpp (building it from GGUF metadata). Not for use outside inference/tokenizer/.

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "inference/tokenizer/bpe_merges.h"
#include "inference/tokenizer/pre_tokenizer.h"
#include "inference/tokenizer/tokenizer.h"

namespace iris::inference {

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const {
        return std::hash<std::string_view>{}(text);
    }
};

struct Tokenizer::Data {
    PreTokenizer preTokenizer = PreTokenizer::Qwen2;
    std::vector<std::string> texts;   // tokenizer.ggml.tokens
    std::vector<std::string> pieces;  // the bytes each token decodes to
    std::vector<TokenType> types;
    std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>> ids;  // by text

    std::array<std::int32_t, 256> byteTokens{};  // the token of each single byte, or kNoToken
    BpeMerges merges;

    // Control and user-defined tokens by their first byte, longest first: the candidates
    // encode() tries at each position of the text.
    std::array<std::vector<std::int32_t>, 256> addedTokensByFirstByte;

    std::optional<std::int32_t> bos, eos, eot, eom, unknown, separator, padding;
    bool addBos = false;
    std::vector<std::int32_t> endOfGeneration;  // sorted
};

}  // namespace iris::inference
