// addHfTokenizerToGguf on small tokenizer.json files written by the test: the keys llama.cpp's
// converter writes, token types, holes, both merge formats, special tokens from the sibling
// config files, and the refusals.
#include "inference/tokenizer/tokenizer_import.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "inference/gguf/gguf_file.h"
#include "inference/tokenizer/tokenizer.h"
#include "tests/inference/models/scratch_dir.h"

namespace iris::inference {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

const char* const kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A Qwen2-shaped tokenizer.json: ids 0..5 in the model, 6..8 unused, 9..13 added tokens.
json qwenLikeTokenizer() {
    json byteLevel = {{"type", "ByteLevel"},
                      {"add_prefix_space", false},
                      {"trim_offsets", false},
                      {"use_regex", false}};
    return {
        {"version", "1.0"},
        {"added_tokens",
         json::array({
             {{"id", 9}, {"content", "<|endoftext|>"}, {"special", true}, {"normalized", false}},
             {{"id", 10}, {"content", "<|im_end|>"}, {"special", true}, {"normalized", false}},
             {{"id", 11}, {"content", "<|fim_prefix|>"}, {"special", false}},
             {{"id", 12}, {"content", "<tool_call>"}, {"special", false}},
             {{"id", 13}, {"content", "\u2581x"}, {"special", false}},
         })},
        {"normalizer", {{"type", "NFC"}}},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers", json::array({{{"type", "Split"},
                                          {"pattern", {{"Regex", kQwen2Regex}}},
                                          {"behavior", "Isolated"},
                                          {"invert", false}},
                                         byteLevel})}}},
        {"post_processor", byteLevel},
        {"decoder", byteLevel},
        {"model",
         {{"type", "BPE"},
          {"byte_fallback", false},
          {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}, {"\u0120", 3}, {"\u0120a", 4}, {"c", 5}}},
          {"merges", json::array({json::array({"a", "b"}), json::array({"\u0120", "a"})})}}},
    };
}

class TokenizerImport : public ::testing::Test {
protected:
    fs::path write(const std::string& name, const std::string& text) const {
        const fs::path path = m_dir / name;
        std::ofstream(path, std::ios::binary) << text;
        return path;
    }
    fs::path write(const std::string& name, const json& value) const {
        return write(name, value.dump());
    }

    // Imports `tokenizer` and parses the GGUF the writer produces.
    Result<GgufFile> import(const json& tokenizer) {
        GgufWriter writer;
        IRIS_RETURN_IF_ERROR(addHfTokenizerToGguf(write("tokenizer.json", tokenizer), writer));
        m_bytes = writer.serialize();
        return GgufFile::parse(m_bytes, "imported.gguf");
    }

    Status importError(const json& tokenizer) {
        GgufWriter writer;
        writer.set("general.name", std::string("kept"));
        const std::vector<std::byte> before = writer.serialize();
        const Status status = addHfTokenizerToGguf(write("tokenizer.json", tokenizer), writer);
        EXPECT_FALSE(status.isOk());
        EXPECT_EQ(writer.serialize(), before) << "a failed import must leave the writer alone";
        return status;
    }

    static std::vector<std::string> strings(const GgufFile& file, std::string_view key) {
        Result<const GgufArray*> array = file.getArray(key);
        EXPECT_TRUE(array) << array.status().message();
        return array ? std::get<std::vector<std::string>>((*array)->elements)
                     : std::vector<std::string>{};
    }

    testing::ScratchDir m_scratch{"iris_tokenizer_import"};
    const fs::path m_dir = m_scratch.path();
    std::vector<std::byte> m_bytes;
};

TEST_F(TokenizerImport, WritesTheKeysLlamaCppWritesForQwen2) {
    Result<GgufFile> file = import(qwenLikeTokenizer());
    ASSERT_TRUE(file) << file.status().message();
    EXPECT_EQ(file->getString("tokenizer.ggml.model").value(), "gpt2");
    EXPECT_EQ(file->getString("tokenizer.ggml.pre").value(), "qwen2");
    EXPECT_THAT(strings(*file, "tokenizer.ggml.tokens"),
                ElementsAre("a", "b", "ab", "\u0120", "\u0120a", "c", "[PAD6]", "[PAD7]", "[PAD8]",
                            "<|endoftext|>", "<|im_end|>", "<|fim_prefix|>", "<tool_call>", " x"));
    Result<const GgufArray*> types = file->getArray("tokenizer.ggml.token_type");
    ASSERT_TRUE(types);
    // <|fim_prefix|> is not marked special but looks it, so it is control, as the converter has it.
    EXPECT_THAT(std::get<std::vector<std::int32_t>>((*types)->elements),
                ElementsAre(1, 1, 1, 1, 1, 1, 5, 5, 5, 3, 3, 3, 4, 4));
    EXPECT_THAT(strings(*file, "tokenizer.ggml.merges"), ElementsAre("a b", "\u0120 a"));
    // No tokenizer_config.json or config.json: no special ids, flags or template.
    EXPECT_EQ(file->find("tokenizer.ggml.eos_token_id"), nullptr);
    EXPECT_EQ(file->find("tokenizer.chat_template"), nullptr);

    Result<Tokenizer> tokenizer = Tokenizer::fromGguf(*file);
    ASSERT_TRUE(tokenizer) << tokenizer.status().message();
    EXPECT_THAT(tokenizer->encode("ab a<|im_end|><tool_call>", true), ElementsAre(2, 4, 10, 12));
}

TEST_F(TokenizerImport, StringMergesAreKeptAndSpacesInPairMergesBecomeG) {
    json tokenizer = qwenLikeTokenizer();
    tokenizer["model"]["merges"] = json::array({"a b", "\u0120 a"});
    Result<GgufFile> file = import(tokenizer);
    ASSERT_TRUE(file) << file.status().message();
    EXPECT_THAT(strings(*file, "tokenizer.ggml.merges"), ElementsAre("a b", "\u0120 a"));

    tokenizer["model"]["merges"] = json::array({json::array({"a", " b"})});
    file = import(tokenizer);
    ASSERT_TRUE(file) << file.status().message();
    EXPECT_THAT(strings(*file, "tokenizer.ggml.merges"), ElementsAre("a \u0120b"));
}

TEST_F(TokenizerImport, ReadsSpecialTokensVocabSizeAndTemplateFromSiblingFiles) {
    write("tokenizer_config.json",
          json{{"bos_token", nullptr},
               {"eos_token", "<|im_end|>"},
               {"pad_token", {{"content", "<|endoftext|>"}, {"special", true}}},
               {"unk_token", nullptr},
               {"add_bos_token", false},
               {"chat_template", "{% for m in messages %}{{ m.content }}{% endfor %}"}});
    write("config.json", json{{"vocab_size", 16}, {"bos_token_id", 9}, {"eos_token_id", 12}});
    Result<GgufFile> file = import(qwenLikeTokenizer());
    ASSERT_TRUE(file) << file.status().message();

    const std::vector<std::string> tokens = strings(*file, "tokenizer.ggml.tokens");
    ASSERT_EQ(tokens.size(), 16u);
    EXPECT_EQ(tokens[15], "[PAD15]");
    // tokenizer_config.json names <|im_end|>; config.json's eos_token_id comes too late.
    EXPECT_EQ(file->getInteger("tokenizer.ggml.eos_token_id").value(), 10);
    EXPECT_EQ(file->getInteger("tokenizer.ggml.padding_token_id").value(), 9);
    EXPECT_EQ(file->getInteger("tokenizer.ggml.bos_token_id").value(), 9);  // from config.json
    EXPECT_EQ(file->find("tokenizer.ggml.unknown_token_id"), nullptr);
    ASSERT_NE(file->find("tokenizer.ggml.add_bos_token"), nullptr);
    EXPECT_EQ(std::get<bool>(*file->find("tokenizer.ggml.add_bos_token")), false);
    EXPECT_EQ(file->getString("tokenizer.chat_template").value(),
              "{% for m in messages %}{{ m.content }}{% endfor %}");
    // The ids are uint32, as gguf-py writes them.
    EXPECT_EQ(ggufTypeOf(*file->find("tokenizer.ggml.eos_token_id")), GgufType::Uint32);

    Result<Tokenizer> tokenizer = Tokenizer::fromGguf(*file);
    ASSERT_TRUE(tokenizer) << tokenizer.status().message();
    EXPECT_EQ(tokenizer->vocabSize(), 16);
    EXPECT_EQ(tokenizer->eosId(), 10);
}

TEST_F(TokenizerImport, NamedChatTemplatesAndTheJinjaFile) {
    write("tokenizer_config.json",
          json{{"chat_template", json::array({{{"name", "default"}, {"template", "A"}},
                                              {{"name", "tool use"}, {"template", "B"}}})}});
    Result<GgufFile> file = import(qwenLikeTokenizer());
    ASSERT_TRUE(file) << file.status().message();
    EXPECT_EQ(file->getString("tokenizer.chat_template").value(), "A");
    EXPECT_EQ(file->getString("tokenizer.chat_template.tool_use").value(), "B");
    EXPECT_THAT(strings(*file, "tokenizer.chat_templates"), ElementsAre("tool_use"));

    write("tokenizer_config.json", json{{"eos_token", "<|im_end|>"}});
    write("chat_template.jinja", std::string("{{ jinja }}"));
    file = import(qwenLikeTokenizer());
    ASSERT_TRUE(file) << file.status().message();
    EXPECT_EQ(file->getString("tokenizer.chat_template").value(), "{{ jinja }}");
}

TEST_F(TokenizerImport, RefusesWhatLlamaCppWouldNotReproduce) {
    struct Case {
        std::string pointer;  // JSON pointer into the tokenizer
        json value;
        std::string expected;
    };
    const std::vector<Case> cases = {
        {"/model/type", "Unigram", "model.type: 'Unigram' is not supported"},
        {"/model/byte_fallback", true, "model.byte_fallback"},
        {"/decoder", {{"type", "Metaspace"}}, "decoder: a ByteLevel decoder is required"},
        {"/normalizer", {{"type", "Lowercase"}}, "normalizer"},
        {"/post_processor",
         {{"type", "TemplateProcessing"}},
         "post_processor: 'TemplateProcessing'"},
        {"/pre_tokenizer", {{"type", "Metaspace"}}, "pre_tokenizer"},
        {"/pre_tokenizer/pretokenizers/0/pattern/Regex", "\\s+", "pre_tokenizer"},
    };
    for (const Case& c : cases) {
        json tokenizer = qwenLikeTokenizer();
        tokenizer[json::json_pointer(c.pointer)] = c.value;
        const Status status = importError(tokenizer);
        EXPECT_EQ(status.code(), StatusCode::Unsupported) << c.pointer << ": " << status.message();
        EXPECT_THAT(status.message(), HasSubstr(c.expected)) << c.pointer;
        EXPECT_THAT(status.message(), HasSubstr("tokenizer.json")) << c.pointer;
    }

    json gpt2 = qwenLikeTokenizer();
    gpt2["pre_tokenizer"] = {
        {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
    Result<GgufFile> file = import(gpt2);
    ASSERT_TRUE(file) << file.status().message();
    EXPECT_EQ(file->getString("tokenizer.ggml.pre").value(), "gpt-2");
}

TEST_F(TokenizerImport, MalformedFilesAreCorruptNamingFileAndField) {
    struct Case {
        std::string pointer;
        json value;
        std::string expected;
    };
    const std::vector<Case> cases = {
        {"/model/vocab/a", -1, "model.vocab['a']: -1 is not a token id"},
        {"/model/vocab/b", 0, "is also"},
        {"/model/vocab", json::array(), "model.vocab: missing or not an object"},
        {"/model/merges/1", json::array({"a", "b", "c"}), "model.merges[1]"},
        {"/added_tokens/2/id", "eleven", "added_tokens[2]: needs a string 'content'"},
    };
    for (const Case& c : cases) {
        json tokenizer = qwenLikeTokenizer();
        tokenizer[json::json_pointer(c.pointer)] = c.value;
        const Status status = importError(tokenizer);
        EXPECT_EQ(status.code(), StatusCode::Corrupt) << c.pointer << ": " << status.message();
        EXPECT_THAT(status.message(), HasSubstr(c.expected)) << c.pointer;
    }

    GgufWriter writer;
    const Status syntax =
        addHfTokenizerToGguf(write("tokenizer.json", std::string("{\"model\": [")), writer);
    EXPECT_EQ(syntax.code(), StatusCode::Corrupt);
    EXPECT_THAT(syntax.message(), HasSubstr("tokenizer.json"));

    const Status missing = addHfTokenizerToGguf(m_dir / "absent.json", writer);
    EXPECT_EQ(missing.code(), StatusCode::IoError);
    EXPECT_THAT(missing.message(), HasSubstr("absent.json"));

    write("config.json", json{{"vocab_size", 8}});
    const Status small = importError(qwenLikeTokenizer());
    EXPECT_EQ(small.code(), StatusCode::Corrupt);
    EXPECT_THAT(small.message(),
                HasSubstr("config.json: vocab_size: 8 does not cover token id 13"));
}

}  // namespace
}  // namespace iris::inference
