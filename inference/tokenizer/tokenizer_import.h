#pragma once
// Building a GGUF vocabulary from a Hugging Face tokenizer.json, with the keys and values
// llama.cpp's convert_hf_to_gguf.py writes for a Qwen2-family model (its _set_vocab_gpt2 and
// gguf-py's SpecialVocab). Tests use it to run the real Qwen vocabulary, and it lets a model whose
// GGUF lacks a vocabulary (or whose tokenizer was fine-tuned) take one from its HF files.

#include <filesystem>

#include "inference/gguf/gguf_writer.h"
#include "base/status.h"

namespace iris::inference {

// Reads `tokenizerJson` (and, when they sit next to it, tokenizer_config.json, config.json and
// chat_template.jinja / chat_template.json, as the converter does) and sets on `writer`:
//   tokenizer.ggml.model       "gpt2"
//   tokenizer.ggml.pre         "qwen2" for the Qwen2 Split regex, "gpt-2" for a plain ByteLevel
//                              pre-tokenizer; derived from the pre_tokenizer's structure where
//                              llama.cpp hashes a probe text's ids (same answer for Qwen vocabs)
//   tokenizer.ggml.tokens      one per id up to config.json's vocab_size (else the highest id + 1);
//                              ids without a token become "[PAD<id>]"
//   tokenizer.ggml.token_type  1 normal, 3 control (added tokens marked special, or that look
//                              special: "<|...|>", "<｜...｜>", "<unused...>", "<pad>", "<mask>"),
//                              4 user-defined (other added tokens, with "▁" written as " "),
//                              5 unused (the holes)
//   tokenizer.ggml.merges      "left right"; the [left, right] pair format is converted, a space
//                              inside a token written as U+0120 ("Ġ") as the converter does
//   tokenizer.ggml.{bos,eos,unknown,seperator,padding,mask}_token_id   from tokenizer_config.json's
//                              *_token (looked up among added_tokens), then config.json's
//                              *_token_id
//   tokenizer.ggml.add_{bos,eos,sep}_token                 from tokenizer_config.json
//   tokenizer.chat_template (and .<name> / tokenizer.chat_templates for named templates)
// Refused (Unsupported, naming the field): a model other than BPE, byte_fallback, a decoder other
// than ByteLevel, a pre-tokenizer or normalizer llama.cpp would not reproduce (NFC is accepted and,
// like llama.cpp, not applied), a post-processor that adds tokens. Malformed JSON or values give
// Corrupt naming the file and the JSON path; nothing is set on `writer` unless all succeeds.
Status addHfTokenizerToGguf(const std::filesystem::path& tokenizerJson, GgufWriter& writer);

}  // namespace iris::inference
