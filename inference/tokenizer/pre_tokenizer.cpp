#include "inference/tokenizer/pre_tokenizer.h"

#include <array>
#include <cstdint>

#include <unicode/uchar.h>

#include "inference/tokenizer/utf8.h"

namespace iris::inference {

namespace {

// What the regexes distinguish about a character; End stands for "past the end of the text".
enum class CharClass : std::uint8_t { Letter, Number, Space, Other, End };

CharClass classify(char32_t c) {
    if (c < 0x80) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return CharClass::Letter;
        if (c >= '0' && c <= '9') return CharClass::Number;
        if (c == ' ' || (c >= '\t' && c <= '\r')) return CharClass::Space;
        return CharClass::Other;
    }
    const auto cp = static_cast<UChar32>(c);
    if (u_isUWhiteSpace(cp)) return CharClass::Space;
    switch (u_charType(cp)) {
        case U_UPPERCASE_LETTER:
        case U_LOWERCASE_LETTER:
        case U_TITLECASE_LETTER:
        case U_MODIFIER_LETTER:
        case U_OTHER_LETTER:
            return CharClass::Letter;
        case U_DECIMAL_DIGIT_NUMBER:
        case U_LETTER_NUMBER:
        case U_OTHER_NUMBER:
            return CharClass::Number;
        default:
            return CharClass::Other;
    }
}

struct Char {
    char32_t codePoint;
    CharClass cls;
};

// The decoded text with the byte offset of each character (offsets has one extra entry: the end).
class Text {
public:
    explicit Text(std::string_view text) {
        m_chars.reserve(text.size());
        m_offsets.reserve(text.size() + 1);
        for (std::size_t pos = 0; pos < text.size();) {
            const utf8::Decoded d = utf8::decodeAt(text, pos);
            m_chars.push_back({d.codePoint, d.valid ? classify(d.codePoint) : CharClass::Other});
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
constexpr std::array<NamedPreTokenizer, 5> kNames = {{
    {"qwen2", PreTokenizer::Qwen2},
    {"deepseek-r1-qwen", PreTokenizer::Qwen2},
    {"stablelm2", PreTokenizer::Qwen2},
    {"gpt-2", PreTokenizer::Gpt2},
    {"phi-2", PreTokenizer::Gpt2},
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
    return kind == PreTokenizer::Qwen2 ? "qwen2" : "gpt-2";
}

void preTokenize(PreTokenizer kind, std::string_view text, std::vector<std::string_view>& words) {
    const Text t(text);
    for (std::size_t i = 0; i < t.size();) {
        const std::size_t end = kind == PreTokenizer::Qwen2 ? matchQwen2(t, i) : matchGpt2(t, i);
        words.push_back(text.substr(t.offset(i), t.offset(end) - t.offset(i)));
        i = end;
    }
}

}  // namespace iris::inference
