"""A small byte-level BPE vocabulary for the tiny model (docs/tiny-model.md): a deterministic
trainer, the encoder, and the GGUF metadata (tokenizer.ggml.*) that Iris's tokenizer
(inference/tokenizer/) and llama.cpp read as a GPT-2-style vocabulary with the Qwen2
pre-tokenizer.

Layout of the vocabulary: ids 0-255 the 256 bytes (GPT-2's byte-to-character mapping), then one
token per merge in merge order, then the special tokens of Qwen2-VL's chat template (control
tokens). Ties between equally frequent pairs go to the pair whose text sorts first, so the same
corpus always gives the same vocabulary.

    python3 tokenizer.py --corpus text.txt --vocab 4096 --out tokenizer.json
"""

import argparse
import collections
import heapq
import json
import re

SPECIAL_TOKENS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
]

# The Qwen2 pre-tokenizer's expression with \p{L} (letters) written as [^\W\d_] and \p{N}
# (numbers) as \d, since Python's re has no Unicode property classes. The two agree on the text
# this model sees (ASCII, Latin letters); the tokenizer test compares with Iris on such strings.
_NOT_LETTER_OR_NUMBER = r"(?:[^\r\n\w]|_)"
_PRE_TOKENIZER = re.compile(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
    r"|" + _NOT_LETTER_OR_NUMBER + r"?[^\W\d_]+"
    r"|\d"
    r"| ?(?:[^\s\w]|_)+[\r\n]*"
    r"|\s*[\r\n]+"
    r"|\s+(?!\S)"
    r"|\s+")


def byte_characters():
    """GPT-2's reversible map from bytes to printable characters: printable Latin-1 bytes stand for
    themselves, the others take code points from 256 upwards in byte order."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1))
                 + list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


BYTE_CHARS = byte_characters()


def pre_tokenize(text):
    """Pre-tokens as strings of byte characters."""
    return ["".join(BYTE_CHARS[b] for b in piece.encode("utf-8"))
            for piece in _PRE_TOKENIZER.findall(text)]


def train(texts, vocab_size):
    """Merges (pairs of token strings) learnt from `texts` until the vocabulary (bytes + merges +
    special tokens) has `vocab_size` entries or no pair occurs twice."""
    words = collections.Counter()
    for text in texts:
        words.update(pre_tokenize(text))
    symbols = [list(w) for w in words]
    freq = [words[w] for w in words]
    pairs, where = collections.Counter(), collections.defaultdict(set)
    for i, s in enumerate(symbols):
        for pair in zip(s, s[1:]):
            pairs[pair] += freq[i]
            where[pair].add(i)
    heap = [(-count, pair) for pair, count in pairs.items()]
    heapq.heapify(heap)
    merges = []
    budget = vocab_size - 256 - len(SPECIAL_TOKENS)
    while heap and len(merges) < budget:
        count, pair = heapq.heappop(heap)
        current = pairs.get(pair, 0)
        if current != -count:  # the count fell since this entry was pushed: queue it again
            if current >= 2:
                heapq.heappush(heap, (-current, pair))
            continue
        if current < 2:
            break  # no pair occurs twice
        merges.append(pair)
        joined = pair[0] + pair[1]
        for i in sorted(where.pop(pair, ())):
            s, f = symbols[i], freq[i]
            for old in zip(s, s[1:]):
                pairs[old] -= f
            merged, j = [], 0
            while j < len(s):
                if j + 1 < len(s) and s[j] == pair[0] and s[j + 1] == pair[1]:
                    merged.append(joined)
                    j += 2
                else:
                    merged.append(s[j])
                    j += 1
            symbols[i] = merged
            for new in zip(merged, merged[1:]):
                pairs[new] += f
                where[new].add(i)
                heapq.heappush(heap, (-pairs[new], new))
        pairs.pop(pair, None)
    return merges


class Tokenizer:
    def __init__(self, merges):
        self.merges = [tuple(m) for m in merges]
        self.tokens = [BYTE_CHARS[b] for b in range(256)]
        self.tokens += [a + b for a, b in self.merges]
        self.tokens += SPECIAL_TOKENS
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        assert len(self.ids) == len(self.tokens), "duplicate token"
        self.ranks = {m: r for r, m in enumerate(self.merges)}
        self._cache = {}
        self._special = re.compile("(" + "|".join(re.escape(t) for t in SPECIAL_TOKENS) + ")")

    def __len__(self):
        return len(self.tokens)

    def token_id(self, text):
        return self.ids[text]

    def _bpe(self, word):
        if word in self._cache:
            return self._cache[word]
        parts = list(word)
        while len(parts) > 1:
            ranked = [(self.ranks.get(p, 1 << 30), k) for k, p in enumerate(zip(parts, parts[1:]))]
            rank, k = min(ranked)
            if rank == 1 << 30:
                break
            parts[k:k + 2] = [parts[k] + parts[k + 1]]
        ids = [self.ids[p] for p in parts]
        self._cache[word] = ids
        return ids

    def encode(self, text, special=True):
        """Token ids; with `special` the special tokens' texts become their ids (Iris's
        parseSpecial), otherwise they are ordinary text."""
        ids = []
        pieces = self._special.split(text) if special else [text]
        for k, piece in enumerate(pieces):
            if special and k % 2 == 1:
                ids.append(self.ids[piece])
                continue
            for word in pre_tokenize(piece):
                ids.extend(self._bpe(word))
        return ids

    def decode(self, ids):
        back = {c: b for b, c in BYTE_CHARS.items()}
        out = bytearray()
        for i in ids:
            t = self.tokens[i]
            if t in SPECIAL_TOKENS:
                out += t.encode("utf-8")
            else:
                out += bytes(back[c] for c in t)
        return out.decode("utf-8", errors="replace")

    def gguf_metadata(self, chat_template):
        """[key, type, value] entries for iris_pack_gguf's manifest, as llama.cpp's converter
        writes them for Qwen2-VL: control tokens type 3, normal tokens 1."""
        types = [3 if t in SPECIAL_TOKENS else 1 for t in self.tokens]
        return [
            ["tokenizer.ggml.model", "string", "gpt2"],
            ["tokenizer.ggml.pre", "string", "qwen2"],
            ["tokenizer.ggml.tokens", "array:string", self.tokens],
            ["tokenizer.ggml.token_type", "array:int32", types],
            ["tokenizer.ggml.merges", "array:string", [a + " " + b for a, b in self.merges]],
            ["tokenizer.ggml.eos_token_id", "uint32", self.ids["<|im_end|>"]],
            ["tokenizer.ggml.padding_token_id", "uint32", self.ids["<|endoftext|>"]],
            ["tokenizer.ggml.bos_token_id", "uint32", self.ids["<|endoftext|>"]],
            ["tokenizer.ggml.add_bos_token", "bool", False],
            ["tokenizer.chat_template", "string", chat_template],
        ]

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"merges": [list(m) for m in self.merges]}, f, ensure_ascii=False)

    @staticmethod
    def load(path):
        with open(path, encoding="utf-8") as f:
            return Tokenizer(json.load(f)["merges"])


# A ChatML template with Qwen2-VL's image markers and default system message, for llama.cpp (a
# Jinja template); Iris reads "vision_start" in it as its Qwen2-VL template
# (inference/chat_template.cpp), which writes the same text.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' or part['type'] == 'image_url' %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, help="UTF-8 text file")
    parser.add_argument("--vocab", type=int, default=4096)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open(args.corpus, encoding="utf-8") as f:
        text = f.read()
    tok = Tokenizer(train(text.split("\n\n"), args.vocab))
    tok.save(args.out)
    print(f"{len(tok)} tokens ({len(tok.merges)} merges) -> {args.out}")


if __name__ == "__main__":
    main()
