#include "inference/tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <array>
#include <cstdint>

#include <unicode/uchar.h>

#include "base/utf8.h"

namespace iris::inference {

namespace {

// What the regexes distinguish about a character; End stands for "past the end of the text".
enum class CharClass : std::uint8_t { Letter, Number, Space, Other, End };

// The case classes of the GPT-4o regex: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and
// [\p{Ll}\p{Lm}\p{Lo}\p{M}]. Modifier and other letters (most scripts without case) and marks
// are in both; marks are not \p{L}, so their CharClass stays Other.
enum : std::uint8_t { kUpperCase = 1, kLowerCase = 2 };

struct Classified {
    CharClass cls;
    std::uint8_t cases;
};

Classified classify(char32_t c) {
    if (c < 0x80) {
        if (c >= 'a' && c <= 'z') return {CharClass::Letter, kLowerCase};
        if (c >= 'A' && c <= 'Z') return {CharClass::Letter, kUpperCase};
        if (c >= '0' && c <= '9') return {CharClass::Number, 0};
        if (c == ' ' || (c >= '\t' && c <= '\r')) return {CharClass::Space, 0};
        return {CharClass::Other, 0};
    }
    const auto cp = static_cast<UChar32>(c);
    if (u_isUWhiteSpace(cp)) return {CharClass::Space, 0};
    switch (u_charType(cp)) {
        case U_UPPERCASE_LETTER:
        case U_TITLECASE_LETTER:
            return {CharClass::Letter, kUpperCase};
        case U_LOWERCASE_LETTER:
            return {CharClass::Letter, kLowerCase};
        case U_MODIFIER_LETTER:
        case U_OTHER_LETTER:
            return {CharClass::Letter, kUpperCase | kLowerCase};
        case U_NON_SPACING_MARK:
        case U_COMBINING_SPACING_MARK:
        case U_ENCLOSING_MARK:
            return {CharClass::Other, kUpperCase | kLowerCase};
        case U_DECIMAL_DIGIT_NUMBER:
        case U_LETTER_NUMBER:
        case U_OTHER_NUMBER:
            return {CharClass::Number, 0};
        default:
            return {CharClass::Other, 0};
    }
}

struct Char {
    char32_t codePoint;
    CharClass cls;
    std::uint8_t cases;
};

// The decoded text with the byte offset of each character (offsets has one extra entry: the end).
class Text {
public:
    explicit Text(std::string_view text) {
        m_chars.reserve(text.size());
        m_offsets.reserve(text.size() + 1);
        for (std::size_t pos = 0; pos < text.size();) {
            const utf8::Decoded d = utf8::decodeAt(text, pos);
            const Classified c =
                d.valid ? classify(d.codePoint) : Classified{CharClass::Other, std::uint8_t{0}};
            m_chars.push_back({d.codePoint, c.cls, c.cases});
            m_offsets.push_back(pos);
            pos += d.length;
        }
        m_offsets.push_back(text.size());
    }

    std::size_t size() const { return m_chars.size(); }
    std::size_t offset(std::size_t i) const { return m_offsets[i]; }
    CharClass cls(std::size_t i) const {
        return i < m_chars.size() ? m_chars[i].cls : CharClass::End;
    }
    char32_t at(std::size_t i) const { return i < m_chars.size() ? m_chars[i].codePoint : 0; }
    bool isCrLf(std::size_t i) const { return at(i) == '\r' || at(i) == '\n'; }

    // The end of the run of `cls` characters starting at i.
    std::size_t runEnd(std::size_t i, CharClass c) const {
        while (cls(i) == c)
            ++i;
        return i;
    }

    // Whether character i is in the GPT-4o case class `which` (kUpperCase or kLowerCase).
    bool inCase(std::size_t i, std::uint8_t which) const {
        return i < m_chars.size() && (m_chars[i].cases & which) != 0;
    }
    std::size_t caseRunEnd(std::size_t i, std::uint8_t which) const {
        while (inCase(i, which))
            ++i;
        return i;
    }

private:
    std::vector<Char> m_chars;
    std::vector<std::size_t> m_offsets;
};

char32_t asciiLower(char32_t c) {
    return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

// 's|'t|'re|'ve|'m|'ll|'d at i (case-folded when foldCase): the end of the match, or 0.
std::size_t matchContraction(const Text& t, std::size_t i, bool foldCase) {
    if (t.at(i) != '\'') return 0;
    const auto letter = [&](std::size_t k) { return foldCase ? asciiLower(t.at(k)) : t.at(k); };
    const char32_t first = letter(i + 1);
    if (first == 's' || first == 't' || first == 'm' || first == 'd') return i + 2;
    const char32_t second = letter(i + 2);
    if ((first == 'r' && second == 'e') || (first == 'v' && second == 'e') ||
        (first == 'l' && second == 'l')) {
        return i + 3;
    }
    return 0;
}

// The whitespace alternatives at i, which starts a run of spaces ending at `end`:
// \s+(?!\S)|\s+ : the whole run when it ends the text; otherwise all but its last character
// (which then leads the next word, " world"), unless the run is that one character.
std::size_t matchTrailingSpace(const Text& t, std::size_t i, std::size_t end) {
    if (end == t.size() || end - i < 2) return end;
    return end - 1;
}

std::size_t matchQwen2(const Text& t, std::size_t i) {
    if (const std::size_t end = matchContraction(t, i, /*foldCase=*/true)) return end;
    const CharClass here = t.cls(i);
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (here == CharClass::Letter) return t.runEnd(i + 1, CharClass::Letter);
    if (here != CharClass::Number && !t.isCrLf(i) && t.cls(i + 1) == CharClass::Letter)
        return t.runEnd(i + 2, CharClass::Letter);
    // \p{N}: digits one at a time
    if (here == CharClass::Number) return i + 1;
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    const std::size_t symbols = (t.at(i) == ' ' && t.cls(i + 1) == CharClass::Other) ? i + 1 : i;
    if (t.cls(symbols) == CharClass::Other) {
        std::size_t end = t.runEnd(symbols + 1, CharClass::Other);
        while (t.isCrLf(end))
            ++end;
        return end;
    }
    // Only whitespace is left. \s*[\r\n]+ : backtracking makes it end right after the last line
    // break of the run.
    const std::size_t end = t.runEnd(i, CharClass::Space);
    for (std::size_t k = end; k > i; --k) {
        if (t.isCrLf(k - 1)) return k;
    }
    return matchTrailingSpace(t, i, end);
}

// [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]* [\p{Ll}\p{Lm}\p{Lo}\p{M}]+ from s (the first alternative of
// the GPT-4o regex after its optional prefix), or 0. The first class may take characters the
// second needs; backtracking hands back to the last one the second class accepts.
std::size_t matchUpperThenLower(const Text& t, std::size_t s) {
    const std::size_t upper = t.caseRunEnd(s, kUpperCase);
    for (std::size_t k = upper + 1; k-- > s;) {
        if (t.inCase(k, kLowerCase)) return t.caseRunEnd(k, kLowerCase);
    }
    return 0;
}

// [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+ [\p{Ll}\p{Lm}\p{Lo}\p{M}]* from s, or 0.
std::size_t matchUpperRun(const Text& t, std::size_t s) {
    const std::size_t upper = t.caseRunEnd(s, kUpperCase);
    return upper == s ? 0 : t.caseRunEnd(upper, kLowerCase);
}

// GPT-4o (o200k_base), as in its tokenizer.json:
//   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//  |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//  |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
std::size_t matchGpt4o(const Text& t, std::size_t i) {
    // [^\r\n\p{L}\p{N}]? : whitespace, punctuation, symbols and marks may lead a word.
    const CharClass here = t.cls(i);
    const bool prefix = here != CharClass::Letter && here != CharClass::Number && !t.isCrLf(i);
    for (const auto match : {matchUpperThenLower, matchUpperRun}) {
        std::size_t end = prefix ? match(t, i + 1) : 0;
        if (end == 0) end = match(t, i);
        if (end != 0) {
            const std::size_t contraction = matchContraction(t, end, /*foldCase=*/true);
            return contraction != 0 ? contraction : end;
        }
    }
    // \p{N}{1,3}
    if (here == CharClass::Number) return std::min(t.runEnd(i, CharClass::Number), i + 3);
    // ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
    const std::size_t symbols = (t.at(i) == ' ' && t.cls(i + 1) == CharClass::Other) ? i + 1 : i;
    if (t.cls(symbols) == CharClass::Other) {
        std::size_t end = t.runEnd(symbols + 1, CharClass::Other);
        while (t.isCrLf(end) || t.at(end) == '/')
            ++end;
        return end;
    }
    // Whitespace, as in Qwen2's regex.
    const std::size_t end = t.runEnd(i, CharClass::Space);
    for (std::size_t k = end; k > i; --k) {
        if (t.isCrLf(k - 1)) return k;
    }
    return matchTrailingSpace(t, i, end);
}

std::size_t matchGpt2(const Text& t, std::size_t i) {
    if (const std::size_t end = matchContraction(t, i, /*foldCase=*/false)) return end;
    // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
    const std::size_t start = (t.at(i) == ' ' && t.cls(i + 1) != CharClass::Space) ? i + 1 : i;
    const CharClass c = t.cls(start);
    if (c == CharClass::Letter || c == CharClass::Number || c == CharClass::Other)
        return t.runEnd(start + 1, c);
    return matchTrailingSpace(t, i, t.runEnd(i, CharClass::Space));
}

struct NamedPreTokenizer {
    std::string_view name;
    PreTokenizer kind;
};

// llama.cpp's tokenizer.ggml.pre values for the two regexes (llama-vocab.cpp), minus those that
// also change other tokenizer settings (jina, roberta: add_sep).
constexpr std::array<NamedPreTokenizer, 7> kNames = {{
    {"qwen2", PreTokenizer::Qwen2},
    {"deepseek-r1-qwen", PreTokenizer::Qwen2},
    {"stablelm2", PreTokenizer::Qwen2},
    {"gpt-2", PreTokenizer::Gpt2},
    {"phi-2", PreTokenizer::Gpt2},
    {"gpt-4o", PreTokenizer::Gpt4o},
    {"minimax-m2", PreTokenizer::Gpt4o},  // MiniMax-M2 and M3
}};

}  // namespace

std::optional<PreTokenizer> preTokenizerForName(std::string_view name) {
    for (const NamedPreTokenizer& entry : kNames) {
        if (entry.name == name) return entry.kind;
    }
    return std::nullopt;
}

std::string supportedPreTokenizerNames() {
    std::string names;
    for (const NamedPreTokenizer& entry : kNames) {
        if (!names.empty()) names += ", ";
        names += "'" + std::string(entry.name) + "'";
    }
    return names;
}

std::string_view preTokenizerName(PreTokenizer kind) {
    switch (kind) {
        case PreTokenizer::Qwen2:
            return "qwen2";
        case PreTokenizer::Gpt2:
            return "gpt-2";
        case PreTokenizer::Gpt4o:
            return "gpt-4o";
    }
    return "qwen2";
}

void preTokenize(PreTokenizer kind, std::string_view text, std::vector<std::string_view>& words) {
    const Text t(text);
    for (std::size_t i = 0; i < t.size();) {
        const std::size_t end = kind == PreTokenizer::Qwen2  ? matchQwen2(t, i)
                                : kind == PreTokenizer::Gpt2 ? matchGpt2(t, i)
                                                             : matchGpt4o(t, i);
        words.push_back(text.substr(t.offset(i), t.offset(end) - t.offset(i)));
        i = end;
    }
}

}  // namespace iris::inference
