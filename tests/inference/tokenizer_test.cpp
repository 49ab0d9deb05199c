// Tokenizer on small hand-made vocabularies: the BPE merge order, added-token splitting, byte
// fallback, streaming decode and the errors for malformed metadata.
#include "inference/tokenizer/tokenizer.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "inference/gguf/gguf_file.h"
#include "inference/gguf/gguf_writer.h"
#include "inference/tokenizer/byte_level.h"

namespace iris::inference {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Ids = std::vector<std::int32_t>;

// A byte-level vocabulary: ids 0..255 are the single bytes (id == byte value), then one token per
// merge, then the added tokens. Texts are given as raw bytes and stored in the byte-level
// alphabet, as llama.cpp's converter stores them.
struct TinyVocab {
    std::vector<std::string> tokens;
    std::vector<std::int32_t> types;
    std::vector<std::string> merges;
    std::vector<std::pair<std::string, GgufValue>> extra;

    TinyVocab() {
        for (int byte = 0; byte < 256; ++byte) {
            tokens.push_back(byte_level::encode(std::string(1, static_cast<char>(byte))));
            types.push_back(1);
        }
    }

    // Adds the merge left + right (raw bytes, both already tokens) and returns the new id.
    std::int32_t merge(const std::string& left, const std::string& right) {
        merges.push_back(byte_level::encode(left) + " " + byte_level::encode(right));
        return add(byte_level::encode(left + right), TokenType::Normal);
    }

    std::int32_t add(const std::string& text, TokenType type) {
        tokens.push_back(text);
        types.push_back(std::int32_t(type));
        return std::int32_t(tokens.size() - 1);
    }

    GgufWriter writer(std::string_view pre = "qwen2") const {
        GgufWriter w;
        w.set("general.architecture", std::string("qwen2"));
        w.set("tokenizer.ggml.model", std::string("gpt2"));
        w.set("tokenizer.ggml.pre", std::string(pre));
        w.set("tokenizer.ggml.tokens", GgufArray{tokens});
        w.set("tokenizer.ggml.token_type", GgufArray{types});
        w.set("tokenizer.ggml.merges", GgufArray{merges});
        for (const auto& [key, value] : extra)
            w.set(key, value);
        return w;
    }
};

Result<Tokenizer> load(const GgufWriter& writer) {
    const std::vector<std::byte> bytes = writer.serialize();
    Result<GgufFile> file = GgufFile::parse(bytes, "tiny.gguf");
    if (!file) return file.status();
    return Tokenizer::fromGguf(*file);  // copies what it needs; the bytes may go
}

Tokenizer mustLoad(const TinyVocab& vocab) {
    Result<Tokenizer> tokenizer = load(vocab.writer());
    EXPECT_TRUE(tokenizer) << tokenizer.status().message();
    return std::move(tokenizer).value();
}

std::int32_t byteId(char c) {
    return static_cast<unsigned char>(c);
}

TEST(TokenizerBpe, MergesFollowRankNotPosition) {
    TinyVocab first;
    const std::int32_t bc = first.merge("b", "c");
    first.merge("a", "b");
    EXPECT_THAT(mustLoad(first).encode("abc", false), ElementsAre(byteId('a'), bc));

    TinyVocab second;
    const std::int32_t ab = second.merge("a", "b");
    second.merge("b", "c");
    EXPECT_THAT(mustLoad(second).encode("abc", false), ElementsAre(ab, byteId('c')));
}

TEST(TokenizerBpe, EqualPairsMergeLeftmostFirstAndResultsMergeFurther) {
    TinyVocab vocab;
    const std::int32_t aa = vocab.merge("a", "a");
    const std::int32_t aaaa = vocab.merge("aa", "aa");
    const Tokenizer tokenizer = mustLoad(vocab);
    EXPECT_THAT(tokenizer.encode("aaa", false), ElementsAre(aa, byteId('a')));
    EXPECT_THAT(tokenizer.encode("aaaaa", false), ElementsAre(aaaa, byteId('a')));
    EXPECT_THAT(tokenizer.encode("aaaaaaa", false), ElementsAre(aaaa, aa, byteId('a')));
}

TEST(TokenizerBpe, MergesNeverCrossPreTokenBoundaries) {
    TinyVocab vocab;
    const std::int32_t spaceW = vocab.merge(" ", "w");
    const std::int32_t lo = vocab.merge("l", "o");
    const std::int32_t oSpace = vocab.merge("o", " ");  // would glue "hello world" if allowed
    const Tokenizer tokenizer = mustLoad(vocab);
    EXPECT_THAT(tokenizer.encode("lo wo", false), ElementsAre(lo, spaceW, byteId('o')));
    EXPECT_THAT(tokenizer.encode("o w", false), ElementsAre(byteId('o'), spaceW));
    (void)oSpace;
}

TEST(TokenizerBpe, UnmergedCharactersFallBackToTheirByteTokens) {
    TinyVocab vocab;
    const Tokenizer tokenizer = mustLoad(vocab);
    // "é" is C3 A9 and "😀" F0 9F 98 80: no merges, so one byte token per byte.
    const Ids ids = tokenizer.encode("\xc3\xa9\xf0\x9f\x98\x80", false);
    EXPECT_THAT(ids, ElementsAre(0xC3, 0xA9, 0xF0, 0x9F, 0x98, 0x80));
    EXPECT_EQ(tokenizer.decode(ids), "\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(TokenizerBpe, BytesMissingFromTheVocabularyBecomeUnknownOrAreDropped) {
    TinyVocab vocab;
    vocab.tokens['z'] = "[NOT z]";  // the vocabulary now lacks a token for the byte 'z'
    const Tokenizer dropping = mustLoad(vocab);
    EXPECT_THAT(dropping.encode("azb", false), ElementsAre(byteId('a'), byteId('b')));

    const std::int32_t unknown = vocab.add("<unk>", TokenType::Unknown);
    vocab.extra.emplace_back("tokenizer.ggml.unknown_token_id", std::uint32_t(unknown));
    const Tokenizer replacing = mustLoad(vocab);
    EXPECT_THAT(replacing.encode("azb", false), ElementsAre(byteId('a'), unknown, byteId('b')));
}

TEST(TokenizerSpecial, ControlTokensSplitOnlyWhenParsingSpecialUserDefinedAlways) {
    TinyVocab vocab;
    const std::int32_t imStart = vocab.add("<|im_start|>", TokenType::Control);
    const std::int32_t toolCall = vocab.add("<tool_call>", TokenType::UserDefined);
    const Tokenizer tokenizer = mustLoad(vocab);

    EXPECT_THAT(tokenizer.encode("<|im_start|>x<tool_call>", true),
                ElementsAre(imStart, byteId('x'), toolCall));
    const Ids plain = tokenizer.encode("<|im_start|>x<tool_call>", false);
    EXPECT_EQ(plain.back(), toolCall);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), imStart), 0);
    EXPECT_EQ(tokenizer.decode(plain), "<|im_start|>x<tool_call>");
    EXPECT_TRUE(tokenizer.isSpecial(imStart));
    EXPECT_FALSE(tokenizer.isSpecial(toolCall));
    EXPECT_EQ(tokenizer.tokenType(toolCall), TokenType::UserDefined);
}

TEST(TokenizerSpecial, LongestMatchWinsAtAPositionAndLeftmostOverall) {
    TinyVocab vocab;
    const std::int32_t shortTag = vocab.add("<a>", TokenType::Control);
    const std::int32_t longTag = vocab.add("<a><b>", TokenType::Control);
    const std::int32_t ab = vocab.add("xy", TokenType::UserDefined);
    const std::int32_t bc = vocab.add("yzw", TokenType::UserDefined);
    const Tokenizer tokenizer = mustLoad(vocab);
    EXPECT_THAT(tokenizer.encode("<a><b><a>", true), ElementsAre(longTag, shortTag));
    // "xy" starts first, so it wins over the longer "yzw" that overlaps it.
    EXPECT_THAT(tokenizer.encode("xyzw", true), ElementsAre(ab, byteId('z'), byteId('w')));
    EXPECT_THAT(tokenizer.encode("yzw", true), ElementsAre(bc));
}

TEST(TokenizerSpecial, TextAroundAddedTokensIsPreTokenizedSeparately) {
    TinyVocab vocab;
    const std::int32_t spaceB = vocab.merge(" ", "b");
    const std::int32_t sep = vocab.add("<s>", TokenType::Control);
    const Tokenizer tokenizer = mustLoad(vocab);
    EXPECT_THAT(tokenizer.encode(" b<s> b", true), ElementsAre(spaceB, sep, spaceB));
    // A partial token is ordinary text.
    EXPECT_EQ(tokenizer.decode(tokenizer.encode("<s", true)), "<s");
}

TEST(TokenizerDecode, RendersControlTokensAndSkipsIdsOutOfRange) {
    TinyVocab vocab;
    const std::int32_t hi = vocab.merge("h", "i");
    const std::int32_t end = vocab.add("<|im_end|>", TokenType::Control);
    vocab.extra.emplace_back("tokenizer.ggml.eos_token_id", std::uint32_t(end));
    const Tokenizer tokenizer = mustLoad(vocab);
    const Ids ids = {hi, byteId(' '), end, -1, tokenizer.vocabSize(), 1 << 30};
    EXPECT_EQ(tokenizer.decode(ids), "hi <|im_end|>");
    EXPECT_EQ(tokenizer.tokenToPiece(byteId(' ')), " ");
    EXPECT_EQ(tokenizer.tokenText(byteId(' ')), "\xc4\xa0");  // "Ġ"
    EXPECT_EQ(tokenizer.tokenToPiece(-5), "");
    EXPECT_EQ(tokenizer.findToken("<|im_end|>"), end);
    EXPECT_EQ(tokenizer.findToken("hi"), hi);
    EXPECT_EQ(tokenizer.findToken("missing"), std::nullopt);
}

TEST(TokenizerDecode, StreamingDecoderHoldsBackCharactersSplitAcrossTokens) {
    TinyVocab vocab;
    const std::int32_t emojiHead = vocab.merge("\xf0", "\x9f");  // 😀 = F0 9F 98 80
    const Tokenizer tokenizer = mustLoad(vocab);
    TokenDecoder decoder(tokenizer);
    EXPECT_EQ(decoder.feed(byteId('a')), "a");
    EXPECT_EQ(decoder.feed(emojiHead), "");
    EXPECT_EQ(decoder.feed(0x98), "");
    EXPECT_EQ(decoder.feed(0x80), "\xf0\x9f\x98\x80");
    // 2-byte and 3-byte sequences, and a byte that can never start one passes straight through.
    EXPECT_EQ(decoder.feed(0xC3), "");
    EXPECT_EQ(decoder.feed(0xA9), "\xc3\xa9");
    EXPECT_EQ(decoder.feed(0xFF), "\xff");
    EXPECT_EQ(decoder.feed(0xE4), "");
    EXPECT_EQ(decoder.feed(0xBD), "");
    // A sequence broken off by an ASCII byte is released, not held forever.
    EXPECT_EQ(decoder.feed(byteId('b')),
              "\xe4\xbd"
              "b");
    // "E0 80" can never be valid (overlong), so it is not held either.
    EXPECT_EQ(decoder.feed(0xE0), "");
    EXPECT_EQ(decoder.feed(0x80), "\xe0\x80");
    EXPECT_EQ(decoder.feed(0xF0), "");
    EXPECT_EQ(decoder.flush(), "\xf0");
    EXPECT_EQ(decoder.flush(), "");
}

TEST(TokenizerDecode, StreamedTextEqualsDecodedText) {
    TinyVocab vocab;
    vocab.merge("\xe4", "\xbd");
    vocab.merge("\xa0", "\xe5");
    const Tokenizer tokenizer = mustLoad(vocab);
    const std::string text =
        "\xe4\xbd\xa0\xe5\xa5\xbd, w\xc3\xb6rld \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd";
    const Ids ids = tokenizer.encode(text, false);
    TokenDecoder decoder(tokenizer);
    std::string streamed;
    for (const std::int32_t id : ids) {
        const std::string part = decoder.feed(id);
        // Every chunk handed out is whole characters.
        EXPECT_EQ(tokenizer.decode(tokenizer.encode(part, false)), part);
        streamed += part;
    }
    streamed += decoder.flush();
    EXPECT_EQ(streamed, text);
    EXPECT_EQ(tokenizer.decode(ids), text);
}

TEST(TokenizerInvalidUtf8, EachBadByteBecomesOneReplacementCharacterAsInLlamaCpp) {
    TinyVocab vocab;
    const Tokenizer tokenizer = mustLoad(vocab);
    const std::string replacement = "\xef\xbf\xbd";
    EXPECT_EQ(tokenizer.decode(tokenizer.encode("a\xff"
                                                "b",
                                                false)),
              "a" + replacement + "b");
    // A truncated 3-byte sequence: both of its bytes are replaced.
    EXPECT_EQ(tokenizer.decode(tokenizer.encode("\xe4\xbd"
                                                "x",
                                                false)),
              replacement + replacement + "x");
    // Overlong forms and surrogates are invalid too.
    EXPECT_EQ(tokenizer.decode(tokenizer.encode("\xc0\x80", false)), replacement + replacement);
    EXPECT_EQ(tokenizer.decode(tokenizer.encode("\xed\xa0\x80", false)),
              replacement + replacement + replacement);
    // Every byte value alone, and an added token next to garbage, are handled.
    for (int byte = 0; byte < 256; ++byte) {
        const std::string text(1, static_cast<char>(byte));
        EXPECT_FALSE(tokenizer.encode(text, true).empty()) << byte;
    }
}

TEST(TokenizerMetadata, ExposesSpecialIdsFlagsAndEndOfGeneration) {
    TinyVocab vocab;
    const std::int32_t endOfText = vocab.add("<|endoftext|>", TokenType::Control);
    const std::int32_t imEnd = vocab.add("<|im_end|>", TokenType::Control);
    const std::int32_t think = vocab.add("<think>", TokenType::UserDefined);
    vocab.extra = {{"tokenizer.ggml.bos_token_id", std::uint32_t(endOfText)},
                   {"tokenizer.ggml.eos_token_id", std::uint32_t(imEnd)},
                   {"tokenizer.ggml.padding_token_id", std::uint32_t(endOfText)},
                   {"tokenizer.ggml.add_bos_token", false}};
    const Tokenizer tokenizer = mustLoad(vocab);
    EXPECT_EQ(tokenizer.vocabSize(), 259);
    EXPECT_EQ(tokenizer.bosId(), endOfText);
    EXPECT_EQ(tokenizer.eosId(), imEnd);
    EXPECT_EQ(tokenizer.padId(), endOfText);
    EXPECT_EQ(tokenizer.eotId(), std::nullopt);
    EXPECT_EQ(tokenizer.unknownId(), std::nullopt);
    EXPECT_FALSE(tokenizer.addBosToken());
    EXPECT_TRUE(tokenizer.isEndOfGeneration(imEnd));
    EXPECT_TRUE(tokenizer.isEndOfGeneration(endOfText));  // by its text, as llama.cpp does
    EXPECT_FALSE(tokenizer.isEndOfGeneration(think));
    EXPECT_FALSE(tokenizer.isEndOfGeneration(byteId('a')));
    EXPECT_EQ(tokenizer.preTokenizer(), PreTokenizer::Qwen2);
}

TEST(TokenizerMetadata, TokenTypeIsOptionalAndDefaultsToNormal) {
    const TinyVocab vocab;
    GgufWriter writer;
    writer.set("tokenizer.ggml.model", std::string("gpt2"));
    writer.set("tokenizer.ggml.pre", std::string("gpt-2"));
    writer.set("tokenizer.ggml.tokens", GgufArray{vocab.tokens});
    writer.set("tokenizer.ggml.merges", GgufArray{vocab.merges});
    Result<Tokenizer> tokenizer = load(writer);
    ASSERT_TRUE(tokenizer) << tokenizer.status().message();
    EXPECT_EQ(tokenizer->tokenType(5), TokenType::Normal);
    EXPECT_EQ(tokenizer->preTokenizer(), PreTokenizer::Gpt2);
}

// Loads `vocab` with `key` set to `value` (or removed when value is nullopt) and returns the error.
Status loadError(TinyVocab vocab, const std::string& key, std::optional<GgufValue> value) {
    GgufWriter writer;
    const std::vector<std::byte> base = vocab.writer().serialize();
    Result<GgufFile> parsed = GgufFile::parse(base, "base.gguf");
    EXPECT_TRUE(parsed);
    for (const auto& [k, v] : parsed->metadata()) {
        if (k != key) writer.set(k, v);
    }
    if (value) writer.set(key, *value);
    Result<Tokenizer> tokenizer = load(writer);
    EXPECT_FALSE(tokenizer) << key;
    return tokenizer.status();
}

TEST(TokenizerMetadata, RefusesOtherModelsAndUnknownPreTokenizersNamingKeyAndValue) {
    const Status model = loadError(TinyVocab(), "tokenizer.ggml.model", std::string("llama"));
    EXPECT_EQ(model.code(), StatusCode::Unsupported);
    EXPECT_THAT(model.message(), HasSubstr("tiny.gguf: tokenizer.ggml.model = 'llama'"));

    const Status pre = loadError(TinyVocab(), "tokenizer.ggml.pre", std::string("llama-bpe"));
    EXPECT_EQ(pre.code(), StatusCode::Unsupported);
    EXPECT_THAT(pre.message(), HasSubstr("tokenizer.ggml.pre = 'llama-bpe'"));
    EXPECT_THAT(pre.message(), HasSubstr("'qwen2'"));

    const Status missing = loadError(TinyVocab(), "tokenizer.ggml.pre", std::nullopt);
    EXPECT_EQ(missing.code(), StatusCode::NotFound);
    EXPECT_THAT(missing.message(), HasSubstr("tokenizer.ggml.pre"));
}

TEST(TokenizerMetadata, MalformedArraysAreCorruptNamingKeyAndIndex) {
    struct Case {
        std::string key;
        std::optional<GgufValue> value;
        StatusCode code;
        std::string expected;
    };
    TinyVocab vocab;
    vocab.merge("a", "b");
    std::vector<std::int32_t> shortTypes(vocab.types.begin(), vocab.types.end() - 1);
    std::vector<std::int32_t> badType = vocab.types;
    badType[7] = 9;
    const std::vector<Case> cases = {
        {"tokenizer.ggml.tokens", std::nullopt, StatusCode::NotFound, "tokenizer.ggml.tokens"},
        {"tokenizer.ggml.tokens", GgufArray{std::vector<std::int32_t>{1, 2}}, StatusCode::Corrupt,
         "tokenizer.ggml.tokens: array of int32, expected an array of strings"},
        {"tokenizer.ggml.tokens", GgufArray{std::vector<std::string>{}}, StatusCode::Corrupt,
         "tokenizer.ggml.tokens: the vocabulary is empty"},
        {"tokenizer.ggml.token_type", GgufArray{shortTypes}, StatusCode::Corrupt,
         "tokenizer.ggml.token_type: 256 entries for 257 tokens"},
        {"tokenizer.ggml.token_type", GgufArray{badType}, StatusCode::Corrupt,
         "tokenizer.ggml.token_type: [7] = 9 is not a token type"},
        {"tokenizer.ggml.token_type", GgufArray{std::vector<float>(257, 1.0f)}, StatusCode::Corrupt,
         "expected an array of int32"},
        {"tokenizer.ggml.merges", std::nullopt, StatusCode::NotFound, "tokenizer.ggml.merges"},
        {"tokenizer.ggml.merges", GgufArray{std::vector<std::string>{"a b", "ab"}},
         StatusCode::Corrupt, "tokenizer.ggml.merges: [1] = 'ab': not two tokens"},
        {"tokenizer.ggml.merges", GgufArray{std::vector<std::string>{"a b", "a zz"}},
         StatusCode::Corrupt, "tokenizer.ggml.merges: [1] = 'a zz': no token 'zz'"},
        {"tokenizer.ggml.merges", GgufArray{std::vector<std::string>{"b a"}}, StatusCode::Corrupt,
         "tokenizer.ggml.merges: [0] = 'b a': no token for the merged 'ba'"},
        {"tokenizer.ggml.eos_token_id", std::uint32_t(257), StatusCode::Corrupt,
         "tokenizer.ggml.eos_token_id: token id 257 is outside the vocabulary of 257 tokens"},
        {"tokenizer.ggml.bos_token_id", std::string("0"), StatusCode::Corrupt,
         "tokenizer.ggml.bos_token_id: has type string, expected an integer"},
        {"tokenizer.ggml.padding_token_id", std::int32_t(-1), StatusCode::Corrupt,
         "tokenizer.ggml.padding_token_id: token id -1 is outside"},
        {"tokenizer.ggml.add_bos_token", std::uint8_t(1), StatusCode::Corrupt,
         "tokenizer.ggml.add_bos_token: has type uint8, expected bool"},
        {"tokenizer.ggml.model", std::uint32_t(2), StatusCode::Corrupt, "tokenizer.ggml.model"},
    };
    for (const Case& c : cases) {
        const Status status = loadError(vocab, c.key, c.value);
        EXPECT_EQ(status.code(), c.code) << c.key << ": " << status.message();
        EXPECT_THAT(status.message(), HasSubstr(c.expected)) << c.key;
        EXPECT_THAT(status.message(), HasSubstr("tiny.gguf")) << c.key;
    }
}

}  // namespace
}  // namespace iris::inference
