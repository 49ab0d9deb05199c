#pragma once
// Pre-tokenization: the regex split a byte-level BPE tokenizer applies before merging, so that
// merges never cross a word, number or punctuation boundary. llama.cpp does not store the regex in
// the GGUF file; tokenizer.ggml.pre names it and every reader implements it. Iris matches the
// regexes by hand over code points (leftmost alternative wins, quantifiers greedy with
// backtracking, exactly as the regex engines of Hugging Face tokenizers and llama.cpp do), with
// Unicode properties from ICU:
//   \p{L}  general category L (Lu Ll Lt Lm Lo)      \p{N}  general category N (Nd Nl No)
//   \s     the Unicode White_Space property: Oniguruma's \s (HF tokenizers) and llama.cpp's
//          whitespace table; it includes U+0085 and excludes U+FEFF (JavaScript's \s differs
//          on exactly those two)
// The (?i:'s|...) contractions fold ASCII case only, as llama.cpp's rewrite of the Qwen2 regex and
// transformers.js do; Oniguruma would also fold "'ſ" (U+017F), a difference no real text hits.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace iris::inference {

enum class PreTokenizer {
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|
    // \s*[\r\n]+|\s+(?!\S)|\s+        (Qwen2, Qwen2.5, Qwen3 and their VL models)
    Qwen2,
    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+     (GPT-2)
    Gpt2,
    // [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|...|'d)?|
    // [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|...|'d)?|
    // \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
    // (GPT-4o's o200k; llama.cpp's "gpt-4o" and "minimax-m2", used by MiniMax-M2 and M3). This is
    // the regex of the models' tokenizer.json, as Hugging Face runs it. llama.cpp runs a rewrite
    // for std::regex that differs where case meets non-ASCII letters or marks: it counts every
    // non-ASCII letter as both upper and lower case ("aÉ" one word, not "a" + "É") and marks
    // (\p{M}) as punctuation, not as part of words. Iris follows the tokenizer the model was
    // trained with.
    Gpt4o,
};

// The pre-tokenizer llama.cpp uses for the tokenizer.ggml.pre value `name`, or nullopt when Iris
// implements none for it.
std::optional<PreTokenizer> preTokenizerForName(std::string_view name);

// The names preTokenizerForName accepts, for error messages: "'qwen2', 'deepseek-r1-qwen', ...".
std::string supportedPreTokenizerNames();

// The canonical tokenizer.ggml.pre value: "qwen2", "gpt-2" or "gpt-4o".
std::string_view preTokenizerName(PreTokenizer kind);

// Splits `text` into words: consecutive, non-empty byte ranges of `text` that together cover it,
// appended to `words`. `text` should be valid UTF-8; a byte that is not is matched as one
// character that is neither letter, number nor space (the tokenizer repairs text before this).
void preTokenize(PreTokenizer kind, std::string_view text, std::vector<std::string_view>& words);

}  // namespace iris::inference
