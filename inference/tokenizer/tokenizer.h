#pragma once
// The tokenizer of a GGUF model, read from the metadata llama.cpp's converter writes:
//   tokenizer.ggml.model        "gpt2" (byte-level BPE; the only model Iris implements)
//   tokenizer.ggml.pre          the pre-tokenizer regex by name: "qwen2" (Qwen2/2.5/3 and their VL
//                               models), "gpt-2", "minimax-m2" (MiniMax-M2/M3: GPT-4o's regex);
//                               see pre_tokenizer.h for the accepted names
//   tokenizer.ggml.tokens       string[n]: token texts (byte-level alphabet for normal tokens)
//   tokenizer.ggml.token_type   int32[n], optional: TokenType values
//   tokenizer.ggml.merges       string[]: "left right", highest priority first; both tokens
//                               and their concatenation must be in the vocabulary
//   tokenizer.ggml.{bos,eos,eot,eom,unknown,seperator,padding}_token_id   optional integers < n
//   tokenizer.ggml.add_bos_token                                         optional bool
//
// Encoding is llama.cpp's (and, for Qwen2, Hugging Face's): control and user-defined tokens are
// cut out of the text first, then each remaining fragment is pre-tokenized and every word merged
// by BPE. Like llama.cpp, and unlike Hugging Face's Qwen2 tokenizer.json, no Unicode normalization
// is applied (HF normalizes to NFC; the two agree on all NFC text, which is nearly all text).
// Invalid UTF-8 is repaired as llama.cpp repairs it: each byte that does not begin a well-formed
// sequence becomes U+FFFD before pre-tokenization (so such bytes do not survive decode(encode())).
// Where llama.cpp decodes overlong forms and surrogates leniently, Iris treats them as invalid.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "inference/tokenizer/pre_tokenizer.h"

namespace iris::inference {

class GgufFile;

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : std::int32_t {
    Normal = 1,
    Unknown = 2,
    Control = 3,      // <|im_start|>, <|endoftext|>: matched in text only when parseSpecial
    UserDefined = 4,  // <tool_call>, <think>: always matched whole in text
    Unused = 5,       // "[PAD151665]" holes up to the model's embedding size
    Byte = 6,
};

// Immutable once loaded: every member is const and safe to call from any number of threads at
// once. Copies are cheap and share the vocabulary.
class Tokenizer {
public:
    // Errors name the file and the key (and the index in an array): Unsupported for a model or
    // pre-tokenizer Iris does not implement, NotFound for a missing required key, Corrupt for
    // malformed values (wrong types, mismatched array lengths, a merge naming tokens that do not
    // exist, a token id out of range).
    static Result<Tokenizer> fromGguf(const GgufFile& file);

    // The token ids of `text`. With parseSpecial, control tokens written in the text
    // ("<|im_start|>") become their ids; without it they are encoded as plain text, which is how
    // untrusted text (a web page, a user's message) must be encoded. User-defined tokens are
    // always matched. Among tokens starting at the same position the longest wins, and the
    // leftmost match wins overall, as in Hugging Face tokenizers (llama.cpp tries the longest
    // token first across the whole text, which differs only for overlapping tokens, "ab" + "bcd"
    // in "abcd"; Qwen's have none). Never adds BOS or EOS (see addBosToken()). Never fails: any
    // bytes encode.
    std::vector<std::int32_t> encode(std::string_view text, bool parseSpecial) const;

    // The bytes the ids stand for, concatenated; control tokens render as their text. For ids
    // from encode(text) of valid UTF-8 text this is `text` again. The result is not guaranteed to
    // be valid UTF-8 (a model can emit any byte tokens). Ids outside [0, vocabSize()) add nothing.
    std::string decode(std::span<const std::int32_t> ids) const;

    // The bytes of one token (empty for ids outside [0, vocabSize())). Valid while any copy of
    // this Tokenizer lives.
    std::string_view tokenToPiece(std::int32_t id) const;

    // The token's text as stored in the GGUF file (byte-level alphabet for normal tokens:
    // " hello" is "Ġhello"). Empty for ids out of range.
    std::string_view tokenText(std::int32_t id) const;

    // The id whose tokenizer.ggml.tokens text is exactly `text` (byte-level alphabet for normal
    // tokens), e.g. findToken("<|im_start|>").
    std::optional<std::int32_t> findToken(std::string_view text) const;

    std::int32_t vocabSize() const;
    TokenType tokenType(std::int32_t id) const;  // Unused for ids out of range
    bool isSpecial(std::int32_t id) const;       // a control token
    // Whether generation should stop at `id`: eos, eot, eom, and the control tokens llama.cpp
    // also treats as end of generation (<|im_end|>, <|endoftext|>, <|eot_id|>, ...).
    bool isEndOfGeneration(std::int32_t id) const;

    std::optional<std::int32_t> bosId() const;
    std::optional<std::int32_t> eosId() const;
    std::optional<std::int32_t> eotId() const;
    std::optional<std::int32_t> padId() const;
    std::optional<std::int32_t> unknownId() const;
    bool addBosToken() const;  // whether prompts should start with bosId()

    PreTokenizer preTokenizer() const;

    struct Data;  // the implementation's state, defined in tokenizer_data.h

private:
    explicit Tokenizer(std::shared_ptr<const Data> data) : m_data(std::move(data)) {}

    std::shared_ptr<const Data> m_data;
};

// Turns generated ids into text as they arrive. A character can span tokens (an emoji is four
// bytes that byte-level BPE may split anywhere), so feed() returns only bytes that end on a
// character boundary and holds back a sequence that the next token may complete. Bytes that can
// never become valid UTF-8 are passed through rather than held. One decoder per stream; not
// thread-safe; it keeps its own copy of the Tokenizer.
class TokenDecoder {
public:
    explicit TokenDecoder(Tokenizer tokenizer) : m_tokenizer(std::move(tokenizer)) {}

    // The bytes of `id` and any held back before it, up to the last complete character.
    std::string feed(std::int32_t id);

    // Whatever is still held back (an unfinished sequence at the end of the stream); resets.
    std::string flush();

    void reset() { m_pending.clear(); }

private:
    Tokenizer m_tokenizer;
    std::string m_pending;
};

}  // namespace iris::inference
