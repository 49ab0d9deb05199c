#include "inference/tokenizer/tokenizer.h"

#include <algorithm>

#include "inference/tokenizer/tokenizer_data.h"
#include "base/utf8.h"

namespace iris::inference {

namespace {

// Buffers encode() reuses from word to word.
struct EncodeScratch {
    std::string repaired;
    std::vector<std::string_view> words;
    std::vector<std::int32_t> symbols;
    BpeScratch bpe;
};

// The control or user-defined token that starts at text[pos], or kNoToken.
std::int32_t matchAddedToken(const Tokenizer::Data& data, std::string_view text, std::size_t pos,
                             bool parseSpecial) {
    const auto& candidates = data.addedTokensByFirstByte[static_cast<unsigned char>(text[pos])];
    for (const std::int32_t id : candidates) {
        if (!parseSpecial && data.types[std::size_t(id)] == TokenType::Control) continue;
        if (text.substr(pos).starts_with(data.texts[std::size_t(id)])) return id;
    }
    return kNoToken;
}

// Pre-tokenizes and merges text between added tokens.
void encodeFragment(const Tokenizer::Data& data, std::string_view fragment, EncodeScratch& scratch,
                    std::vector<std::int32_t>& ids) {
    if (fragment.empty()) return;
    if (!utf8::isValid(fragment)) {
        scratch.repaired = utf8::repair(fragment);
        fragment = scratch.repaired;
    }
    scratch.words.clear();
    preTokenize(data.preTokenizer, fragment, scratch.words);
    for (const std::string_view word : scratch.words) {
        scratch.symbols.clear();
        for (const char byte : word)
            scratch.symbols.push_back(data.byteTokens[static_cast<unsigned char>(byte)]);
        data.merges.apply(scratch.symbols, scratch.bpe);
        for (const std::int32_t id : scratch.symbols) {
            // A byte without a token: only in a vocabulary that lacks part of the byte alphabet.
            // Hugging Face and llama.cpp drop it, or emit the unknown token if there is one.
            if (id != kNoToken) {
                ids.push_back(id);
            } else if (data.unknown) {
                ids.push_back(*data.unknown);
            }
        }
    }
}

}  // namespace

std::vector<std::int32_t> Tokenizer::encode(std::string_view text, bool parseSpecial) const {
    const Data& data = *m_data;
    std::vector<std::int32_t> ids;
    ids.reserve(text.size() / 3 + 1);
    EncodeScratch scratch;
    std::size_t fragmentStart = 0;
    for (std::size_t pos = 0; pos < text.size();) {
        const std::int32_t added = matchAddedToken(data, text, pos, parseSpecial);
        if (added == kNoToken) {
            ++pos;
            continue;
        }
        encodeFragment(data, text.substr(fragmentStart, pos - fragmentStart), scratch, ids);
        ids.push_back(added);
        pos += data.texts[std::size_t(added)].size();
        fragmentStart = pos;
    }
    encodeFragment(data, text.substr(fragmentStart), scratch, ids);
    return ids;
}

std::string Tokenizer::decode(std::span<const std::int32_t> ids) const {
    std::string text;
    for (const std::int32_t id : ids)
        text += tokenToPiece(id);
    return text;
}

std::string_view Tokenizer::tokenToPiece(std::int32_t id) const {
    if (id < 0 || id >= vocabSize()) return {};
    return m_data->pieces[std::size_t(id)];
}

std::string_view Tokenizer::tokenText(std::int32_t id) const {
    if (id < 0 || id >= vocabSize()) return {};
    return m_data->texts[std::size_t(id)];
}

std::optional<std::int32_t> Tokenizer::findToken(std::string_view text) const {
    const auto it = m_data->ids.find(text);
    if (it == m_data->ids.end()) return std::nullopt;
    return it->second;
}

std::int32_t Tokenizer::vocabSize() const {
    return static_cast<std::int32_t>(m_data->texts.size());
}

TokenType Tokenizer::tokenType(std::int32_t id) const {
    if (id < 0 || id >= vocabSize()) return TokenType::Unused;
    return m_data->types[std::size_t(id)];
}

bool Tokenizer::isSpecial(std::int32_t id) const {
    return tokenType(id) == TokenType::Control;
}

bool Tokenizer::isEndOfGeneration(std::int32_t id) const {
    return std::binary_search(m_data->endOfGeneration.begin(), m_data->endOfGeneration.end(), id);
}

std::optional<std::int32_t> Tokenizer::bosId() const {
    return m_data->bos;
}

std::optional<std::int32_t> Tokenizer::eosId() const {
    return m_data->eos;
}

std::optional<std::int32_t> Tokenizer::eotId() const {
    return m_data->eot;
}

std::optional<std::int32_t> Tokenizer::padId() const {
    return m_data->padding;
}

std::optional<std::int32_t> Tokenizer::unknownId() const {
    return m_data->unknown;
}

bool Tokenizer::addBosToken() const {
    return m_data->addBos;
}

PreTokenizer Tokenizer::preTokenizer() const {
    return m_data->preTokenizer;
}

std::string TokenDecoder::feed(std::int32_t id) {
    m_pending += m_tokenizer.tokenToPiece(id);
    const std::size_t ready = utf8::completePrefixLength(m_pending);
    std::string out = m_pending.substr(0, ready);
    m_pending.erase(0, ready);
    return out;
}

std::string TokenDecoder::flush() {
    std::string out = std::move(m_pending);
    m_pending.clear();
    return out;
}

}  // namespace iris::inference
