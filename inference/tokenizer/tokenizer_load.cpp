// Tokenizer::fromGguf: reads and validates the tokenizer.ggml.* metadata.

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <vector>

#include "inference/gguf/gguf_file.h"
#include "inference/tokenizer/byte_level.h"
#include "inference/tokenizer/tokenizer.h"
#include "inference/tokenizer/tokenizer_data.h"
#include "base/utf8.h"

namespace iris::inference {

namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kPreKey = "tokenizer.ggml.pre";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kTokenTypeKey = "tokenizer.ggml.token_type";
constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";
constexpr std::string_view kAddBosKey = "tokenizer.ggml.add_bos_token";

// Control tokens llama.cpp also stops generation at, found by their text (llama-vocab.cpp).
// "[e~[" ends every MiniMax message (llama.cpp's vocab loader makes it end of generation).
constexpr std::array<std::string_view, 12> kEndOfGenerationTexts = {
    "<|eot_id|>",      "<|im_end|>", "<|end|>",     "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
    "<|end_of_text|>", "<EOT>",      "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",  "[e~[",
};

std::string shown(std::string_view text) {
    constexpr std::size_t kMaxShown = 64;
    if (text.size() <= kMaxShown) return "'" + std::string(text) + "'";
    return "'" + std::string(text.substr(0, kMaxShown)) + "...'";
}

class Loader {
public:
    explicit Loader(const GgufFile& file) : m_file(file) {}

    Status load(Tokenizer::Data& data) {
        IRIS_RETURN_IF_ERROR(loadModel(data));
        IRIS_RETURN_IF_ERROR(loadTokens(data));
        IRIS_RETURN_IF_ERROR(loadMerges(data));
        IRIS_RETURN_IF_ERROR(loadSpecialIds(data));
        indexAddedTokens(data);
        return {};
    }

private:
    Status error(std::string_view key, const std::string& what) const {
        return Status::corrupt(m_file.name() + ": " + std::string(key) + ": " + what);
    }

    Status loadModel(Tokenizer::Data& data) const {
        Result<std::string> model = m_file.getString(kModelKey);
        if (!model) return model.status();
        if (*model != "gpt2") {
            return Status::unsupported(m_file.name() + ": " + std::string(kModelKey) + " = " +
                                       shown(*model) +
                                       " is not supported; Iris implements 'gpt2' (byte-level "
                                       "BPE) only");
        }
        Result<std::string> pre = m_file.getString(kPreKey);
        if (!pre) return pre.status();
        const std::optional<PreTokenizer> kind = preTokenizerForName(*pre);
        if (!kind) {
            return Status::unsupported(m_file.name() + ": " + std::string(kPreKey) + " = " +
                                       shown(*pre) +
                                       " names a pre-tokenizer Iris does not implement "
                                       "(supported: " +
                                       supportedPreTokenizerNames() + ")");
        }
        data.preTokenizer = *kind;
        return {};
    }

    Result<const std::vector<std::string>*> stringArray(std::string_view key) const {
        Result<const GgufArray*> array = m_file.getArray(key);
        if (!array) return array.status();
        const auto* strings = std::get_if<std::vector<std::string>>(&(*array)->elements);
        if (strings == nullptr) {
            return error(key, "array of " + std::string(ggufTypeName((*array)->elementType())) +
                                  ", expected an array of strings");
        }
        return strings;
    }

    Status loadTokens(Tokenizer::Data& data) const {
        Result<const std::vector<std::string>*> texts = stringArray(kTokensKey);
        if (!texts) return texts.status();
        const std::size_t count = (*texts)->size();
        if (count == 0) return error(kTokensKey, "the vocabulary is empty");
        if (count > std::size_t(std::numeric_limits<std::int32_t>::max()))
            return error(kTokensKey, std::to_string(count) + " tokens do not fit int32 ids");
        data.texts = **texts;

        data.types.assign(count, TokenType::Normal);
        if (m_file.find(kTokenTypeKey) != nullptr) {
            Result<const GgufArray*> array = m_file.getArray(kTokenTypeKey);
            if (!array) return array.status();
            const auto* types = std::get_if<std::vector<std::int32_t>>(&(*array)->elements);
            if (types == nullptr) {
                return error(kTokenTypeKey, "array of " +
                                                std::string(ggufTypeName((*array)->elementType())) +
                                                ", expected an array of int32");
            }
            if (types->size() != count) {
                return error(kTokenTypeKey, std::to_string(types->size()) + " entries for " +
                                                std::to_string(count) + " tokens in " +
                                                std::string(kTokensKey));
            }
            for (std::size_t i = 0; i < count; ++i) {
                const std::int32_t type = (*types)[i];
                if (type < int(TokenType::Normal) || type > int(TokenType::Byte)) {
                    return error(kTokenTypeKey, "[" + std::to_string(i) +
                                                    "] = " + std::to_string(type) +
                                                    " is not a token type (1..6)");
                }
                data.types[i] = TokenType(type);
            }
        }

        data.pieces.resize(count);
        for (std::size_t i = 0; i < count; ++i) {
            const auto id = static_cast<std::int32_t>(i);
            const std::string& text = data.texts[i];
            // A later duplicate wins, as in llama.cpp's token_to_id map.
            data.ids.insert_or_assign(text, id);
            // Control and user-defined tokens are stored as the text they stand for; the others
            // in the byte-level alphabet (a text outside it is taken as is, as HF's decoder does).
            const TokenType type = data.types[i];
            if (type == TokenType::Control || type == TokenType::UserDefined) {
                data.pieces[i] = text;
            } else {
                data.pieces[i] = byte_level::decode(text).value_or(text);
            }
        }

        for (unsigned byte = 0; byte < 256; ++byte) {
            std::string text;
            utf8::append(text, byte_level::codePointOf(static_cast<std::uint8_t>(byte)));
            const auto it = data.ids.find(text);
            data.byteTokens[byte] = it == data.ids.end() ? kNoToken : it->second;
        }
        return {};
    }

    Status loadMerges(Tokenizer::Data& data) const {
        Result<const std::vector<std::string>*> merges = stringArray(kMergesKey);
        if (!merges) return merges.status();
        const std::vector<std::string>& entries = **merges;
        if (entries.size() > std::size_t(std::numeric_limits<std::int32_t>::max()))
            return error(kMergesKey, "too many merges for int32 ranks");
        for (std::size_t rank = 0; rank < entries.size(); ++rank) {
            const std::string& entry = entries[rank];
            const auto at = [&](const std::string& what) {
                return error(kMergesKey,
                             "[" + std::to_string(rank) + "] = " + shown(entry) + ": " + what);
            };
            // The separator is the first space after the first character: byte-level tokens
            // never contain a space, but a merge may start with one in other vocabularies.
            const std::size_t space = entry.find(' ', 1);
            if (space == std::string::npos) return at("not two tokens separated by a space");
            const std::string_view left = std::string_view(entry).substr(0, space);
            const std::string_view right = std::string_view(entry).substr(space + 1);
            const auto leftId = data.ids.find(left);
            if (leftId == data.ids.end()) return at("no token " + shown(left));
            const auto rightId = data.ids.find(right);
            if (rightId == data.ids.end()) return at("no token " + shown(right));
            const std::string merged = std::string(left) + std::string(right);
            const auto resultId = data.ids.find(merged);
            if (resultId == data.ids.end()) return at("no token for the merged " + shown(merged));
            data.merges.add(leftId->second, rightId->second, resultId->second,
                            static_cast<std::int32_t>(rank));
        }
        return {};
    }

    Status optionalId(std::string_view key, std::int32_t vocabSize,
                      std::optional<std::int32_t>& id) const {
        const GgufValue* value = m_file.find(key);
        if (value == nullptr) return {};
        const std::optional<std::int64_t> n = ggufInteger(*value);
        if (!n) {
            return error(key, "has type " + std::string(ggufTypeName(ggufTypeOf(*value))) +
                                  ", expected an integer");
        }
        if (*n < 0 || *n >= vocabSize) {
            return error(key, "token id " + std::to_string(*n) + " is outside the vocabulary of " +
                                  std::to_string(vocabSize) + " tokens");
        }
        id = static_cast<std::int32_t>(*n);
        return {};
    }

    Status loadSpecialIds(Tokenizer::Data& data) const {
        const auto size = static_cast<std::int32_t>(data.texts.size());
        IRIS_RETURN_IF_ERROR(optionalId("tokenizer.ggml.bos_token_id", size, data.bos));
        IRIS_RETURN_IF_ERROR(optionalId("tokenizer.ggml.eos_token_id", size, data.eos));
        IRIS_RETURN_IF_ERROR(optionalId("tokenizer.ggml.eot_token_id", size, data.eot));
        IRIS_RETURN_IF_ERROR(optionalId("tokenizer.ggml.eom_token_id", size, data.eom));
        IRIS_RETURN_IF_ERROR(optionalId("tokenizer.ggml.unknown_token_id", size, data.unknown));
        // (sic: llama.cpp's key is spelled "seperator")
        IRIS_RETURN_IF_ERROR(optionalId("tokenizer.ggml.seperator_token_id", size, data.separator));
        IRIS_RETURN_IF_ERROR(optionalId("tokenizer.ggml.padding_token_id", size, data.padding));

        if (const GgufValue* value = m_file.find(kAddBosKey)) {
            const bool* flag = std::get_if<bool>(value);
            if (flag == nullptr) {
                return error(kAddBosKey, "has type " +
                                             std::string(ggufTypeName(ggufTypeOf(*value))) +
                                             ", expected bool");
            }
            data.addBos = *flag;
        }

        for (const std::optional<std::int32_t>& id : {data.eos, data.eot, data.eom}) {
            if (id) data.endOfGeneration.push_back(*id);
        }
        for (const std::string_view text : kEndOfGenerationTexts) {
            const auto it = data.ids.find(text);
            if (it != data.ids.end() && data.types[std::size_t(it->second)] == TokenType::Control)
                data.endOfGeneration.push_back(it->second);
        }
        std::sort(data.endOfGeneration.begin(), data.endOfGeneration.end());
        data.endOfGeneration.erase(
            std::unique(data.endOfGeneration.begin(), data.endOfGeneration.end()),
            data.endOfGeneration.end());
        return {};
    }

    static void indexAddedTokens(Tokenizer::Data& data) {
        for (std::size_t i = 0; i < data.texts.size(); ++i) {
            const TokenType type = data.types[i];
            const std::string& text = data.texts[i];
            if ((type != TokenType::Control && type != TokenType::UserDefined) || text.empty())
                continue;
            data.addedTokensByFirstByte[static_cast<unsigned char>(text[0])].push_back(
                static_cast<std::int32_t>(i));
        }
        for (std::vector<std::int32_t>& bucket : data.addedTokensByFirstByte) {
            std::stable_sort(bucket.begin(), bucket.end(), [&](std::int32_t a, std::int32_t b) {
                return data.texts[std::size_t(a)].size() > data.texts[std::size_t(b)].size();
            });
        }
    }

    const GgufFile& m_file;
};

}  // namespace

Result<Tokenizer> Tokenizer::fromGguf(const GgufFile& file) {
    auto data = std::make_shared<Data>();
    IRIS_RETURN_IF_ERROR(Loader(file).load(*data));
    return Tokenizer(std::move(data));
}

}  // namespace iris::inference
