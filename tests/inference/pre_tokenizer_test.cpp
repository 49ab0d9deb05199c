// The pre-tokenizer regexes, matched by hand, against splits worked out from the regex semantics
// (and cross-checked with an independent regex engine while writing them).
#include "inference/tokenizer/pre_tokenizer.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace iris::inference {
namespace {

std::vector<std::string> split(PreTokenizer kind, std::string_view text) {
    std::vector<std::string_view> words;
    preTokenize(kind, text, words);
    return {words.begin(), words.end()};
}

struct Case {
    std::string text;
    std::vector<std::string> words;
};

void expectSplits(PreTokenizer kind, const std::vector<Case>& cases) {
    for (const Case& c : cases)
        EXPECT_EQ(split(kind, c.text), c.words) << "text: " << c.text;
}

TEST(TokenizerPreTokenizer, Qwen2SplitsLikeItsRegex) {
    expectSplits(
        PreTokenizer::Qwen2,
        {
            {"", {}},
            {"Hello world", {"Hello", " world"}},
            {"I'm you're HE'LL it'S", {"I", "'m", " you", "'re", " HE", "'LL", " it", "'S"}},
            {"don\u2019t", {"don", "\u2019t"}},  // the curly apostrophe is no contraction
            {"12345", {"1", "2", "3", "4", "5"}},
            {" 42", {" ", "4", "2"}},
            {"a  b", {"a", " ", " b"}},
            {"a \n\n b", {"a", " \n\n", " b"}},
            {"x  \n\n  y", {"x", "  \n\n", " ", " y"}},
            {"foo.\n\nbar", {"foo", ".\n\n", "bar"}},
            {"(hello)", {"(hello", ")"}},
            {"  \t", {"  \t"}},
            {"\r\n", {"\r\n"}},
            {"hello\u00a0world", {"hello", "\u00a0world"}},
            {"\u4f60\u597d\u4e16\u754c", {"\u4f60\u597d\u4e16\u754c"}},
            // Devanagari vowel signs and virama are marks (Mc, Mn), not letters.
            {"\u0939\u093f\u0928\u094d\u0926\u0940",
             {"\u0939", "\u093f\u0928", "\u094d\u0926", "\u0940"}},
            {"x\u00b2", {"x", "\u00b2"}},  // superscript two is a number (No)
            {"\U0001F44D\U0001F3FD ok", {"\U0001F44D\U0001F3FD", " ok"}},
            {"x\n\ny", {"x", "\n\n", "y"}},
        });
}

TEST(TokenizerPreTokenizer, WhitespaceIsTheUnicodeWhiteSpacePropertyAsInHfAndLlamaCpp) {
    // U+0085 (NEL) is White_Space; U+FEFF is not. JavaScript's \s has it the other way round,
    // so transformers.js splits "\x85\x85x" as ["\x85\x85", "x"]; HF tokenizers and llama.cpp do
    // as below.
    expectSplits(PreTokenizer::Qwen2, {
                                          {"a\u0085b", {"a", "\u0085b"}},
                                          {"\u0085\u0085x", {"\u0085", "\u0085x"}},
                                          {"a\ufeffb", {"a", "\ufeffb"}},
                                          {"a\u3000\u3000b", {"a", "\u3000", "\u3000b"}},
                                          {"a\x1c\x1c", {"a", "\x1c\x1c"}},  // not White_Space
                                      });
}

TEST(TokenizerPreTokenizer, Gpt2SplitsLikeItsRegex) {
    expectSplits(PreTokenizer::Gpt2,
                 {
                     {"Hello world", {"Hello", " world"}},
                     {"I'm you're HE'LL it'S",
                      {"I", "'m", " you", "'re", " HE", "'", "LL", " it", "'", "S"}},
                     {"12345", {"12345"}},
                     {" 42", {" 42"}},
                     {"a  b", {"a", " ", " b"}},
                     {"x  \n\n  y", {"x", "  \n\n ", " y"}},
                     {"foo.\n\nbar", {"foo", ".", "\n", "\n", "bar"}},
                     {"(hello)", {"(", "hello", ")"}},
                     {"hello\u00a0world", {"hello", "\u00a0", "world"}},
                     {"x\n\ny", {"x", "\n", "\n", "y"}},
                 });
}

TEST(TokenizerPreTokenizer, InvalidBytesAreSingleNonLetterCharacters) {
    EXPECT_EQ(split(PreTokenizer::Qwen2,
                    "ab\xff"
                    "cd\xe4"),
              (std::vector<std::string>{"ab",
                                        "\xff"
                                        "cd",
                                        "\xe4"}));
}

TEST(TokenizerPreTokenizer, NamesFollowLlamaCpp) {
    EXPECT_EQ(preTokenizerForName("qwen2"), PreTokenizer::Qwen2);
    EXPECT_EQ(preTokenizerForName("deepseek-r1-qwen"), PreTokenizer::Qwen2);
    EXPECT_EQ(preTokenizerForName("gpt-2"), PreTokenizer::Gpt2);
    EXPECT_EQ(preTokenizerForName("default"), std::nullopt);  // llama.cpp's fallback: not exact
    EXPECT_EQ(preTokenizerForName("llama-bpe"), std::nullopt);
    EXPECT_EQ(preTokenizerName(PreTokenizer::Qwen2), "qwen2");
    EXPECT_EQ(preTokenizerName(PreTokenizer::Gpt2), "gpt-2");
}

}  // namespace
}  // namespace iris::inference
