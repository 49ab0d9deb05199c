"""Exports an untrained (random-weight) model of a given configuration, with a vocabulary trained
on the fixed prompt text, to measure file sizes and step times with Iris before training
(docs/tiny-model.md, "Measured").

    /usr/bin/python3 scripts/training/random_export.py --out /tmp/tiny [--config tiny.json]
"""

import argparse
import os

import corpus
import export
import model as tiny
import prompt
import tokenizer as tok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--config", help="JSON of model.Config fields (default: Config())")
    parser.add_argument("--type", default="f16", choices=["f32", "f16", "bf16", "q8_0"])
    args = parser.parse_args()
    config = tiny.Config()
    if args.config:
        with open(args.config, encoding="utf-8") as f:
            config = tiny.Config.from_json(f.read())
    examples = [{"instruction": f'Click the "Button {i}" button.',
                 "answer": f"click(start_box='({i},{2 * i})')"} for i in range(200)]
    vocab = tok.Tokenizer(tok.train(corpus.documents(examples), config.vocab))
    config.vocab = len(vocab)
    m = tiny.TinyVlm(config)
    m.init_weights(seed=1)
    for path in export.export(m, vocab, args.out, args.type, "random-tiny-cua"):
        print(f"{path}: {os.path.getsize(path) / 1e6:.2f} MB")
    tower, decoder = tiny.count_parameters(config)
    text = prompt.render(examples[0]["instruction"], [])
    print(f"vocabulary {len(vocab)}; parameters: tower {tower / 1e6:.2f} M, decoder "
          f"{decoder / 1e6:.2f} M; first-step prompt {len(vocab.encode(text))} tokens + image; "
          f"1280x800 -> {tiny.smart_resize(1280, 800, config.max_pixels)}")


if __name__ == "__main__":
    main()
