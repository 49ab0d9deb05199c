// GPT-4o's pre-tokenizer regex (o200k; tokenizer.ggml.pre "minimax-m2" for MiniMax-M2 and M3).
// The expected splits were produced by an independent regex engine, Python's `regex` module
// (2026.5.9), running the regex of the models' tokenizer.json:
//   regex.findall(r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
//                 r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"
//                 r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}|"
//                 r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+", text)
// (texts avoid U+001C..U+001F, U+0085 and U+FEFF, where Python's \s and Unicode White_Space
// disagree).
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "inference/gguf/gguf_file.h"
#include "inference/gguf/gguf_writer.h"
#include "inference/tokenizer/byte_level.h"
#include "inference/tokenizer/pre_tokenizer.h"
#include "inference/tokenizer/tokenizer.h"

namespace iris::inference {
namespace {

std::vector<std::string> split(std::string_view text) {
    std::vector<std::string_view> words;
    preTokenize(PreTokenizer::Gpt4o, text, words);
    return {words.begin(), words.end()};
}

struct Case {
    std::string text;
    std::vector<std::string> words;
};

TEST(TokenizerPreTokenizerGpt4o, SplitsLikeItsRegexInPythonsRegexModule) {
    const std::vector<Case> cases = {
        {"", {}},
        {"Hello world", {"Hello", " world"}},
        {"HELLO world", {"HELLO", " world"}},
        {"helloWorld", {"hello", "World"}},
        {"ABCdef GHI", {"ABCdef", " GHI"}},
        {"I'm you're HE'LL it'S don't", {"I'm", " you're", " HE'LL", " it'S", " don't"}},
        {"don\u2019t", {"don", "\u2019t"}},
        {"12345", {"123", "45"}},
        {" 42", {" ", "42"}},
        {"1234567", {"123", "456", "7"}},
        {"a  b", {"a", " ", " b"}},
        {"a \n\n b", {"a", " \n\n", " b"}},
        {"x  \n\n  y", {"x", "  \n\n", " ", " y"}},
        {"foo.\n\nbar", {"foo", ".\n\n", "bar"}},
        {"path/to/file\n", {"path", "/to", "/file", "\n"}},
        {"(hello)", {"(hello", ")"}},
        {" (x)", {" (", "x", ")"}},
        {"  \t", {"  \t"}},
        {"\r\n", {"\r\n"}},
        {"hello\u00a0world", {"hello", "\u00a0world"}},
        {"\u4f60\u597d\u4e16\u754c", {"\u4f60\u597d\u4e16\u754c"}},
        {"\u0939\u093f\u0928\u094d\u0926\u0940", {"\u0939\u093f\u0928\u094d\u0926\u0940"}},
        {"x\u00b2", {"x", "\u00b2"}},
        {"\U0001f44d\U0001f3fd ok", {"\U0001f44d\U0001f3fd", " ok"}},
        {"a\u00c9", {"a", "\u00c9"}},
        {"\u00c9a", {"\u00c9a"}},
        {"caf\u00e9 \u00c9COLE", {"caf\u00e9", " \u00c9COLE"}},
        {"e\u0301t\u00e9", {"e\u0301t\u00e9"}},
        {"!!\u0301", {"!!\u0301"}},
        {"\u01c5ab", {"\u01c5ab"}},
        {"\u02b0ab", {"\u02b0ab"}},
        {"<mm:think>", {"<mm", ":think", ">"}},
        {"x = y/2;\n", {"x", " =", " y", "/", "2", ";\n"}},
        {"\u01c5ungla", {"\u01c5ungla"}},
        {"'s", {"'s"}},
        {"ABC's", {"ABC's"}},
        {"hello\u3000\u3000world", {"hello", "\u3000", "\u3000world"}},
        {"\u0301abc", {"\u0301abc"}},
        {"1\u0301", {"1", "\u0301"}},
    };
    for (const Case& c : cases)
        EXPECT_EQ(split(c.text), c.words) << "text: " << c.text;
}

TEST(TokenizerPreTokenizerGpt4o, InvalidBytesAreSingleNonLetterCharacters) {
    // A byte that is not UTF-8 is punctuation-like: it may lead a word, as "(" does.
    EXPECT_EQ(split("ab\xff"
                    "cd\xe4"),
              (std::vector<std::string>{"ab",
                                        "\xff"
                                        "cd",
                                        "\xe4"}));
}

TEST(TokenizerPreTokenizerGpt4o, NamesFollowLlamaCpp) {
    EXPECT_EQ(preTokenizerForName("minimax-m2"), PreTokenizer::Gpt4o);
    EXPECT_EQ(preTokenizerForName("gpt-4o"), PreTokenizer::Gpt4o);
    EXPECT_EQ(preTokenizerName(PreTokenizer::Gpt4o), "gpt-4o");
    EXPECT_NE(supportedPreTokenizerNames().find("'minimax-m2'"), std::string::npos);
}

// A MiniMax-style vocabulary: the 256 bytes, merges, and the chat template's control tokens.
TEST(TokenizerPreTokenizerGpt4o, AMiniMaxVocabularyLoadsAndSplitsItsPromptAtTheControlTokens) {
    std::vector<std::string> tokens;
    std::vector<std::int32_t> types;
    for (int byte = 0; byte < 256; ++byte) {
        tokens.push_back(byte_level::encode(std::string(1, static_cast<char>(byte))));
        types.push_back(1);
    }
    std::vector<std::string> merges;
    const auto merge = [&](const std::string& left, const std::string& right) {
        merges.push_back(byte_level::encode(left) + " " + byte_level::encode(right));
        tokens.push_back(byte_level::encode(left + right));
        types.push_back(1);
        return std::int32_t(tokens.size() - 1);
    };
    const auto control = [&](const std::string& text) {
        tokens.push_back(text);
        types.push_back(3);
        return std::int32_t(tokens.size() - 1);
    };
    // "C" + "'" can only merge when the pre-tokenizer keeps "ABC's" one word, as GPT-4o's does
    // (Qwen2's splits it into "ABC" and "'s").
    const std::int32_t cQuote = merge("C", "'");
    const std::int32_t begin = control("]~!b[");
    const std::int32_t header = control("]~b]");
    const std::int32_t end = control("[e~[");
    const std::int32_t ns = control("]<]minimax[>[");

    const auto load = [&](const std::string& pre) {
        GgufWriter w;
        w.set("general.architecture", std::string("minimax-m3"));
        w.set("tokenizer.ggml.model", std::string("gpt2"));
        w.set("tokenizer.ggml.pre", pre);
        w.set("tokenizer.ggml.tokens", GgufArray{tokens});
        w.set("tokenizer.ggml.token_type", GgufArray{types});
        w.set("tokenizer.ggml.merges", GgufArray{merges});
        const std::vector<std::byte> bytes = w.serialize();
        Result<GgufFile> file = GgufFile::parse(bytes, "m3.gguf");
        EXPECT_TRUE(file) << file.status().message();
        Result<Tokenizer> tokenizer = Tokenizer::fromGguf(*file);
        EXPECT_TRUE(tokenizer) << tokenizer.status().message();
        return std::move(tokenizer).value();
    };
    const Tokenizer m3 = load("minimax-m2");
    EXPECT_EQ(m3.preTokenizer(), PreTokenizer::Gpt4o);
    const auto byte = [](char c) { return std::int32_t(static_cast<unsigned char>(c)); };
    EXPECT_THAT(m3.encode("ABC's", false),
                ::testing::ElementsAre(byte('A'), byte('B'), cQuote, byte('s')));
    EXPECT_THAT(load("qwen2").encode("ABC's", false),
                ::testing::ElementsAre(byte('A'), byte('B'), byte('C'), byte('\''), byte('s')));

    EXPECT_THAT(m3.encode("]~!b[]~b]ai\nABC's[e~[]<]minimax[>[", true),
                ::testing::ElementsAre(begin, header, byte('a'), byte('i'), byte('\n'), byte('A'),
                                       byte('B'), cQuote, byte('s'), end, ns));
    // [e~[ ends generation, as llama.cpp forces it to.
    EXPECT_TRUE(m3.isEndOfGeneration(end));
    EXPECT_FALSE(m3.isEndOfGeneration(ns));
}

}  // namespace
}  // namespace iris::inference
