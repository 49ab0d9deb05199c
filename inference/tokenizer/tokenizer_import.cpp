#include "inference/tokenizer/tokenizer_import.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "inference/tokenizer/tokenizer.h"

namespace iris::inference {

namespace {

using nlohmann::json;

// The Split regex of Qwen2's tokenizer.json, which llama.cpp calls "qwen2".
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The special-token kinds SpecialVocab reads, in its order, with the GGUF key it writes for each
// (cls has no key in current llama.cpp and is read only to stand in for bos).
struct SpecialKind {
    std::string_view name;
    std::string_view idKey;   // empty: not written
    std::string_view addKey;  // empty: not written
};
constexpr std::array<SpecialKind, 7> kSpecialKinds = {{
    {"bos", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.add_bos_token"},
    {"eos", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_eos_token"},
    {"unk", "tokenizer.ggml.unknown_token_id", ""},
    {"sep", "tokenizer.ggml.seperator_token_id", "tokenizer.ggml.add_sep_token"},
    {"pad", "tokenizer.ggml.padding_token_id", ""},
    {"cls", "", ""},
    {"mask", "tokenizer.ggml.mask_token_id", ""},
}};

struct AddedToken {
    std::int32_t id = 0;
    std::string content;
    bool special = false;
};

// Everything the import writes, gathered first so that a failure leaves the writer untouched.
struct Vocabulary {
    std::string pre;
    std::vector<std::string> tokens;
    std::vector<std::int32_t> types;
    std::vector<std::string> merges;
    std::vector<std::pair<std::string_view, std::uint32_t>> specialIds;  // key, id
    std::vector<std::pair<std::string_view, bool>> addFlags;             // key, value
    std::vector<std::pair<std::string, std::string>> chatTemplates;      // key, template
    std::vector<std::string> chatTemplateNames;
};

class Importer {
public:
    explicit Importer(std::filesystem::path tokenizerJson)
        : m_path(std::move(tokenizerJson)),
          m_directory(m_path.parent_path()),
          m_name(m_path.string()) {}

    Result<Vocabulary> run() {
        Result<json> root = readJson(m_path);
        if (!root) return root.status();
        if (!root->is_object()) return corrupt(m_name, "", "the top level is not an object");
        Vocabulary vocab;
        IRIS_RETURN_IF_ERROR(checkPipeline(*root, vocab));
        IRIS_RETURN_IF_ERROR(readVocab(*root));
        IRIS_RETURN_IF_ERROR(readConfig());
        IRIS_RETURN_IF_ERROR(buildTokens(vocab));
        IRIS_RETURN_IF_ERROR(readMerges(*root, vocab));
        IRIS_RETURN_IF_ERROR(readSpecialTokens(vocab));
        return vocab;
    }

private:
    static Status corrupt(const std::string& file, std::string_view path, const std::string& what) {
        return Status::corrupt(file + ": " + (path.empty() ? "" : std::string(path) + ": ") + what);
    }
    static Status unsupported(const std::string& file, std::string_view path,
                              const std::string& what) {
        return Status::unsupported(file + ": " + std::string(path) + ": " + what);
    }

    static Result<json> readJson(const std::filesystem::path& path) {
        std::ifstream in(path, std::ios::binary);
        if (!in) return Status::ioError(path.string() + ": cannot open");
        std::ostringstream text;
        text << in.rdbuf();
        if (in.bad()) return Status::ioError(path.string() + ": read failed");
        // nlohmann reports syntax errors by exception only; it stops here, at the boundary.
        try {
            return json::parse(text.str());
        } catch (const json::parse_error& e) {
            return Status::corrupt(path.string() + ": " + e.what());
        }
    }

    std::string sibling(std::string_view name) const { return (m_directory / name).string(); }

    // The optional JSON file `name` next to tokenizer.json: null when it does not exist.
    Result<json> readSibling(std::string_view name) const {
        const std::filesystem::path path = m_directory / name;
        std::error_code ec;
        if (!std::filesystem::is_regular_file(path, ec)) return json();
        return readJson(path);
    }

    // The pipeline around the BPE model must be one llama.cpp's "gpt2" vocabulary reproduces.
    Status checkPipeline(const json& root, Vocabulary& vocab) const {
        const json* model = member(root, "model");
        if (model == nullptr || !model->is_object())
            return corrupt(m_name, "model", "missing or not an object");
        if (stringOf(*model, "type") != "BPE") {
            return unsupported(m_name, "model.type",
                               "'" + stringOf(*model, "type") +
                                   "' is not supported; Iris imports byte-level BPE only");
        }
        if (const json* fallback = member(*model, "byte_fallback");
            fallback != nullptr && fallback->is_boolean() && fallback->get<bool>()) {
            return unsupported(m_name, "model.byte_fallback",
                               "byte fallback marks a SentencePiece-style BPE, not byte-level BPE");
        }
        const json* decoder = member(root, "decoder");
        if (decoder == nullptr || !decoder->is_object() ||
            stringOf(*decoder, "type") != "ByteLevel")
            return unsupported(m_name, "decoder", "a ByteLevel decoder is required");

        if (const json* normalizer = member(root, "normalizer");
            normalizer != nullptr && !normalizer->is_null()) {
            // llama.cpp ignores an NFC normalizer (it changes only text not in NFC); any other
            // normalizer would change what the model sees.
            if (!normalizer->is_object() || stringOf(*normalizer, "type") != "NFC") {
                return unsupported(
                    m_name, "normalizer",
                    normalizer->dump().substr(0, 200) + " is not supported (only none or NFC)");
            }
        }
        if (const json* post = member(root, "post_processor");
            post != nullptr && !post->is_null()) {
            if (!isByteLevelOnly(*post)) {
                return unsupported(m_name, "post_processor",
                                   "'" + stringOf(*post, "type") +
                                       "' adds tokens, which this import does not translate");
            }
        }

        const json* pre = member(root, "pre_tokenizer");
        if (pre != nullptr && pre->is_object()) {
            if (isQwen2PreTokenizer(*pre)) {
                vocab.pre = "qwen2";
                return {};
            }
            if (isGpt2PreTokenizer(*pre)) {
                vocab.pre = "gpt-2";
                return {};
            }
        }
        return unsupported(
            m_name, "pre_tokenizer",
            (pre == nullptr ? std::string("missing") : pre->dump().substr(0, 300)) +
                " is not a pre-tokenizer Iris implements (the Qwen2 Split regex or GPT-2's "
                "ByteLevel with use_regex)");
    }

    static bool isByteLevelOnly(const json& processor) {
        if (!processor.is_object()) return false;
        const std::string type = stringOf(processor, "type");
        if (type == "ByteLevel") return true;
        if (type != "Sequence") return false;
        const json* list = member(processor, "processors");
        return list != nullptr && list->is_array() &&
               std::all_of(list->begin(), list->end(), isByteLevelOnly);
    }

    static bool flagIs(const json& object, std::string_view key, bool expected) {
        const json* value = member(object, key);
        return value != nullptr && value->is_boolean() && value->get<bool>() == expected;
    }

    // Sequence[Split(Regex = the Qwen2 regex, Isolated), ByteLevel(use_regex = false)]
    static bool isQwen2PreTokenizer(const json& pre) {
        if (stringOf(pre, "type") != "Sequence") return false;
        const json* steps = member(pre, "pretokenizers");
        if (steps == nullptr || !steps->is_array() || steps->size() != 2) return false;
        const json& split = (*steps)[0];
        const json& byteLevel = (*steps)[1];
        if (!split.is_object() || stringOf(split, "type") != "Split" ||
            stringOf(split, "behavior") != "Isolated" || flagIs(split, "invert", true)) {
            return false;
        }
        const json* pattern = member(split, "pattern");
        if (pattern == nullptr || !pattern->is_object() ||
            stringOf(*pattern, "Regex") != kQwen2Regex)
            return false;
        return byteLevel.is_object() && stringOf(byteLevel, "type") == "ByteLevel" &&
               flagIs(byteLevel, "use_regex", false) &&
               !flagIs(byteLevel, "add_prefix_space", true);
    }

    // ByteLevel(add_prefix_space = false, use_regex = true): GPT-2's own regex.
    static bool isGpt2PreTokenizer(const json& pre) {
        return stringOf(pre, "type") == "ByteLevel" && !flagIs(pre, "use_regex", false) &&
               !flagIs(pre, "add_prefix_space", true);
    }

    static const json* member(const json& object, std::string_view key) {
        if (!object.is_object()) return nullptr;
        const auto it = object.find(key);
        return it == object.end() ? nullptr : &*it;
    }

    static std::string stringOf(const json& object, std::string_view key) {
        const json* value = member(object, key);
        return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
    }

    static std::optional<std::int32_t> idOf(const json& value) {
        if (!value.is_number_integer()) return std::nullopt;
        const auto id = value.get<std::int64_t>();
        if (id < 0 || id > std::numeric_limits<std::int32_t>::max()) return std::nullopt;
        return static_cast<std::int32_t>(id);
    }

    Status readVocab(const json& root) {
        const json* vocab = member(root["model"], "vocab");  // checkPipeline saw "model"
        if (vocab == nullptr || !vocab->is_object())
            return corrupt(m_name, "model.vocab", "missing or not an object");
        for (const auto& [text, idValue] : vocab->items()) {
            const std::optional<std::int32_t> id = idOf(idValue);
            if (!id) {
                return corrupt(m_name, "model.vocab['" + text + "']",
                               idValue.dump() + " is not a token id");
            }
            const auto [it, inserted] = m_texts.try_emplace(*id, text);
            if (!inserted) {
                return corrupt(m_name, "model.vocab['" + text + "']",
                               "id " + std::to_string(*id) + " is also '" + it->second + "'");
            }
        }

        const json* added = member(root, "added_tokens");
        if (added == nullptr || added->is_null()) return {};
        if (!added->is_array()) return corrupt(m_name, "added_tokens", "not an array");
        for (std::size_t i = 0; i < added->size(); ++i) {
            const json& entry = (*added)[i];
            const std::string where = "added_tokens[" + std::to_string(i) + "]";
            const json* content = member(entry, "content");
            const json* idValue = member(entry, "id");
            const std::optional<std::int32_t> id = idValue ? idOf(*idValue) : std::nullopt;
            if (content == nullptr || !content->is_string() || !id)
                return corrupt(m_name, where, "needs a string 'content' and a token 'id'");
            // An added token overrides the model's entry for the same id, as in HF's get_vocab().
            m_texts.insert_or_assign(*id, content->get<std::string>());
            m_added.insert_or_assign(
                *id, AddedToken{*id, content->get<std::string>(), flagIs(entry, "special", true)});
            m_addedInOrder.push_back(AddedToken{*id, content->get<std::string>(), false});
        }
        return {};
    }

    Status readConfig() {
        Result<json> config = readSibling("config.json");
        if (!config) return config.status();
        m_config = std::move(*config);
        const json* size = member(m_config, "vocab_size");
        if (size == nullptr) {
            if (const json* text = member(m_config, "text_config"))
                size = member(*text, "vocab_size");
        }
        if (size != nullptr && !size->is_null()) {
            m_vocabSize = idOf(*size);
            if (!m_vocabSize) {
                return corrupt(sibling("config.json"), "vocab_size",
                               size->dump() + " is not a valid size");
            }
        }
        return {};
    }

    // Like HF's get_vocab(): special if marked so, or if it looks like one (llama.cpp's
    // does_token_look_special, which catches Qwen's <|fim_*|> tokens added without the flag).
    static bool looksSpecial(std::string_view text) {
        const auto wrapped = [&](std::string_view open, std::string_view close) {
            return text.size() >= open.size() + close.size() && text.starts_with(open) &&
                   text.ends_with(close);
        };
        return text == "<pad>" || text == "<mask>" || text == "<2mass>" || text == "[@BOS@]" ||
               wrapped("<|", "|>") || wrapped("<\uff5c", "\uff5c>") || wrapped("<unused", ">");
    }

    Status buildTokens(Vocabulary& vocab) const {
        const std::int32_t highest = m_texts.empty() ? -1 : m_texts.rbegin()->first;
        std::int64_t count = std::int64_t(highest) + 1;
        if (m_vocabSize) {
            if (*m_vocabSize <= highest) {
                return corrupt(sibling("config.json"), "vocab_size",
                               std::to_string(*m_vocabSize) + " does not cover token id " +
                                   std::to_string(highest));
            }
            count = *m_vocabSize;
        }
        if (count == 0) return corrupt(m_name, "model.vocab", "the vocabulary is empty");

        vocab.tokens.resize(std::size_t(count));
        vocab.types.resize(std::size_t(count));
        for (std::int32_t id = 0; id < count; ++id) {
            std::string& token = vocab.tokens[std::size_t(id)];
            std::int32_t& type = vocab.types[std::size_t(id)];
            const auto text = m_texts.find(id);
            const auto added = m_added.find(id);
            if (text == m_texts.end()) {
                token = "[PAD" + std::to_string(id) + "]";
                type = std::int32_t(TokenType::Unused);
            } else if (added == m_added.end()) {
                token = text->second;
                type = std::int32_t(TokenType::Normal);
            } else if (added->second.special || looksSpecial(added->second.content)) {
                token = added->second.content;
                type = std::int32_t(TokenType::Control);
            } else {
                // SentencePiece's visible space, as the converter "pre-normalizes" it.
                token = added->second.content;
                for (std::size_t at; (at = token.find("\u2581")) != std::string::npos;)
                    token.replace(at, 3, " ");
                type = std::int32_t(TokenType::UserDefined);
            }
        }
        return {};
    }

    Status readMerges(const json& root, Vocabulary& vocab) const {
        const json* merges = member(root["model"], "merges");
        if (merges == nullptr || !merges->is_array())
            return corrupt(m_name, "model.merges", "missing or not an array");
        vocab.merges.reserve(merges->size());
        for (std::size_t i = 0; i < merges->size(); ++i) {
            const json& merge = (*merges)[i];
            if (merge.is_string()) {
                vocab.merges.push_back(merge.get<std::string>());
                continue;
            }
            // [left, right], the format since transformers 4.45, which allows spaces in tokens;
            // the GGUF's "left right" form cannot, so a space is written as U+0120.
            if (!merge.is_array() || merge.size() != 2 || !merge[0].is_string() ||
                !merge[1].is_string()) {
                return corrupt(
                    m_name, "model.merges[" + std::to_string(i) + "]",
                    merge.dump().substr(0, 200) + " is neither \"a b\" nor [\"a\", \"b\"]");
            }
            const auto spaceless = [](std::string part) {
                for (std::size_t at; (at = part.find(' ')) != std::string::npos;)
                    part.replace(at, 1, "\u0120");
                return part;
            };
            vocab.merges.push_back(spaceless(merge[0].get<std::string>()) + " " +
                                   spaceless(merge[1].get<std::string>()));
        }
        return {};
    }

    // gguf-py's SpecialVocab: tokenizer_config.json names the special tokens (looked up among
    // added_tokens) and the add_*_token flags; config.json's *_token_id fill what is still unset.
    Status readSpecialTokens(Vocabulary& vocab) const {
        Result<json> configResult = readSibling("tokenizer_config.json");
        if (!configResult) return configResult.status();
        json config = std::move(*configResult);
        if (!config.is_object() && !config.is_null())
            return corrupt(sibling("tokenizer_config.json"), "", "the top level is not an object");

        std::map<std::string_view, std::int32_t> ids;
        std::vector<std::string_view> order;  // kinds in the order their ids were set
        const auto setId = [&](std::string_view kind, const json& value) -> Status {
            if (!value.is_number_integer() || ids.contains(kind)) return {};
            const std::optional<std::int32_t> id = idOf(value);
            if (!id || *id >= std::int64_t(vocab.tokens.size())) {
                return corrupt(sibling("config.json"), std::string(kind) + "_token_id",
                               value.dump() + " is not a token id of this vocabulary");
            }
            ids.emplace(kind, *id);
            order.push_back(kind);
            return {};
        };

        if (config.is_object() && !config.empty()) {
            const auto truthy = [&](std::string_view key) {
                const json* value = member(config, key);
                return value != nullptr && !value->is_null() &&
                       !(value->is_string() && value->get<std::string>().empty());
            };
            if (!truthy("bos_token") && truthy("cls_token"))
                config["bos_token"] = config["cls_token"];
            if (!truthy("eos_token") && truthy("sep_token"))
                config["eos_token"] = config["sep_token"];

            IRIS_RETURN_IF_ERROR(readChatTemplates(config, vocab));
            for (const SpecialKind& kind : kSpecialKinds) {
                const std::string name(kind.name);
                if (const json* add = member(config, "add_" + name + "_token");
                    add != nullptr && add->is_boolean() && !kind.addKey.empty()) {
                    vocab.addFlags.emplace_back(kind.addKey, add->get<bool>());
                }
                const json* entry = member(config, name + "_token");
                std::string content;
                if (entry != nullptr && entry->is_string()) {
                    content = entry->get<std::string>();
                } else if (const json* inner = entry ? member(*entry, "content") : nullptr;
                           inner != nullptr && inner->is_string()) {
                    content = inner->get<std::string>();
                } else {
                    continue;
                }
                const auto match =
                    std::find_if(m_addedInOrder.begin(), m_addedInOrder.end(),
                                 [&](const AddedToken& token) { return token.content == content; });
                if (match != m_addedInOrder.end())
                    IRIS_RETURN_IF_ERROR(setId(kind.name, match->id));
            }
        }

        for (const SpecialKind& kind : kSpecialKinds) {
            const std::string key = std::string(kind.name) + "_token_id";
            const json* value = member(m_config, key);
            if (value == nullptr) {
                if (const json* text = member(m_config, "text_config")) value = member(*text, key);
            }
            if (value != nullptr) IRIS_RETURN_IF_ERROR(setId(kind.name, *value));
        }

        for (const std::string_view name : order) {
            const auto kind = std::find_if(kSpecialKinds.begin(), kSpecialKinds.end(),
                                           [&](const SpecialKind& k) { return k.name == name; });
            if (!kind->idKey.empty())
                vocab.specialIds.emplace_back(kind->idKey, std::uint32_t(ids.at(name)));
        }
        return {};
    }

    // tokenizer_config.json's chat_template, else chat_template.jinja, else chat_template.json.
    // A list of {name, template} becomes tokenizer.chat_template (the "default" one),
    // tokenizer.chat_template.<name> and the tokenizer.chat_templates list of names.
    Status readChatTemplates(const json& config, Vocabulary& vocab) const {
        json chatTemplate;
        if (const json* inConfig = member(config, "chat_template")) {
            chatTemplate = *inConfig;
        } else if (std::error_code ec;
                   std::filesystem::is_regular_file(m_directory / "chat_template.jinja", ec)) {
            std::ifstream in(m_directory / "chat_template.jinja", std::ios::binary);
            std::ostringstream text;
            text << in.rdbuf();
            if (!in)
                return Status::ioError((m_directory / "chat_template.jinja").string() +
                                       ": read failed");
            chatTemplate = text.str();
        } else {
            Result<json> file = readSibling("chat_template.json");
            if (!file) return file.status();
            if (const json* inFile = member(*file, "chat_template")) chatTemplate = *inFile;
        }

        if (chatTemplate.is_string()) {
            vocab.chatTemplates.emplace_back("tokenizer.chat_template",
                                             chatTemplate.get<std::string>());
        } else if (chatTemplate.is_array()) {
            std::set<std::string> names;
            for (const json& choice : chatTemplate) {
                std::string name = stringOf(choice, "name");
                const json* text = member(choice, "template");
                if (name.empty() || text == nullptr || !text->is_string()) continue;
                for (char& c : name) {
                    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                }
                if (name == "default") {
                    vocab.chatTemplates.emplace_back("tokenizer.chat_template",
                                                     text->get<std::string>());
                } else {
                    vocab.chatTemplates.emplace_back("tokenizer.chat_template." + name,
                                                     text->get<std::string>());
                    names.insert(name);
                }
            }
            vocab.chatTemplateNames.assign(names.begin(), names.end());
        }
        return {};
    }

    std::filesystem::path m_path;
    std::filesystem::path m_directory;
    std::string m_name;
    std::map<std::int32_t, std::string> m_texts;  // every id's text, added tokens included
    std::map<std::int32_t, AddedToken> m_added;
    std::vector<AddedToken> m_addedInOrder;  // as listed, for SpecialVocab's first-match lookup
    json m_config;                           // config.json, or null
    std::optional<std::int32_t> m_vocabSize;
};

}  // namespace

Status addHfTokenizerToGguf(const std::filesystem::path& tokenizerJson, GgufWriter& writer) {
    Result<Vocabulary> result = Importer(tokenizerJson).run();
    if (!result) return result.status();
    Vocabulary& vocab = *result;

    writer.set("tokenizer.ggml.model", std::string("gpt2"));
    writer.set("tokenizer.ggml.pre", vocab.pre);
    writer.set("tokenizer.ggml.tokens", GgufArray{std::move(vocab.tokens)});
    writer.set("tokenizer.ggml.token_type", GgufArray{std::move(vocab.types)});
    writer.set("tokenizer.ggml.merges", GgufArray{std::move(vocab.merges)});
    for (const auto& [key, id] : vocab.specialIds)
        writer.set(std::string(key), id);
    for (const auto& [key, flag] : vocab.addFlags)
        writer.set(std::string(key), flag);
    for (auto& [key, text] : vocab.chatTemplates)
        writer.set(key, std::move(text));
    if (!vocab.chatTemplateNames.empty())
        writer.set("tokenizer.chat_templates", GgufArray{std::move(vocab.chatTemplateNames)});
    return {};
}

}  // namespace iris::inference
