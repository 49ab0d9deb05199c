"""Where a checkpoint's answers go wrong: each step's answer fed in (teacher forcing), its loss
per step kind, and the first token where the greedy choice differs, counted as a coordinate digit
or as which token the model preferred (`'type'->'finished'`: the action itself). Fast (one
forward pass a step), so it suits a dataset's training and held-out steps alike
(docs/tiny-model.md, section 6).

    /usr/bin/python3 scripts/training/answer_errors.py --checkpoint RUN/checkpoint.pt \\
        --data DATASET_DIR [--count 80] [--seed 0] [--kind type]
"""

import argparse
import collections
import json
import os
import random

import torch

import export
import train


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--data", required=True, help="a dataset folder (any split)")
    parser.add_argument("--count", type=int, default=80, help="steps, drawn at random")
    parser.add_argument("--seed", type=int, default=0, help="the draw's seed")
    parser.add_argument("--kind", help="only steps of this kind (click_label, type, ...)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    m, vocab = export.load_checkpoint(args.checkpoint)
    m.eval()
    with open(os.path.join(args.data, "examples.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    rows = [r for r in rows if args.kind is None or r["kind"] == args.kind]
    random.Random(args.seed).shuffle(rows)
    image_id = vocab.token_id("<|image_pad|>")
    losses, first_errors = collections.defaultdict(list), collections.Counter()
    exact = collections.Counter()  # steps whose every answer token is the greedy choice
    for row in rows[:args.count]:
        example = train.Encoded(row, vocab, args.data)
        patches, grid = example.patches()
        at, wanted = example.targets()
        with torch.no_grad():
            logits = m(example.ids, example.image_at, patches, grid, image_id, logits_at=at)
        nll = -torch.log_softmax(logits.float(), -1)[torch.arange(len(wanted)), wanted]
        losses[row["kind"]].append(float(nll.sum()))
        chosen = logits.argmax(-1).tolist()
        exact[row["kind"]] += chosen == wanted.tolist()
        for want, got in zip(wanted.tolist(), chosen):
            if want != got:
                text = vocab.decode([want])
                what = "digit" if text.strip("'(),").isdigit() else \
                    f"{text!r}->{vocab.decode([got])!r}"
                first_errors[(row["kind"], what)] += 1
                break
    for kind, values in sorted(losses.items()):
        print(f"{kind}: {len(values)} steps, answer loss {sum(values) / len(values):.2f} nats, "
              f"{exact[kind]} with every token right")
    print("first wrong token (kind, wanted->chosen):")
    for (kind, what), n in first_errors.most_common():
        print(f"  {n:3d} {kind} {what}")


if __name__ == "__main__":
    main()
