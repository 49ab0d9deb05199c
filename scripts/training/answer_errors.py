"""Where a checkpoint's answers go wrong: each step's answer fed in (teacher forcing), its loss
per step kind, and the first token where the greedy choice differs, counted as a coordinate digit
or as which token the model preferred (`'type'->'finished'`: the action itself). Fast (one
forward pass a step), so it suits a dataset's training and held-out steps alike
(docs/tiny-model.md, section 6).

    /usr/bin/python3 scripts/training/answer_errors.py --checkpoint RUN/checkpoint.pt \\
        --data DATASET_DIR [--count 80] [--seed 0] [--kind type] [--read-layer -1] [--mask-layer 2]

With --read-layer and data whose pages' words were measured (generator version 2), it also says
how well that decoder layer's image tokens read the words they show (train.py --read); with
--mask-layer and a checkpoint trained with train.py --mask, in how many clicks the target-mask
head's most confident image token lies on the control: whether the model finds the control,
whatever digits it then writes.
"""

import argparse
import collections
import json
import os
import random

import torch

import export
import model as tiny
import train


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--data", required=True, help="a dataset folder (any split)")
    parser.add_argument("--count", type=int, default=80, help="steps, drawn at random")
    parser.add_argument("--seed", type=int, default=0, help="the draw's seed")
    parser.add_argument("--kind", help="only steps of this kind (click_label, type, ...)")
    parser.add_argument("--read-layer", type=int,
                        help="also score the reading loss (model.read_loss) at this layer")
    parser.add_argument("--mask-layer", type=int,
                        help="also score the checkpoint's target-mask head (model.mask_loss) "
                             "at this layer")
    args = parser.parse_args()
    torch.set_num_threads(1)
    m, vocab = export.load_checkpoint(args.checkpoint)
    m.eval()
    mask_head = None
    if args.mask_layer is not None:
        state = torch.load(args.checkpoint, map_location="cpu")
        if not state.get("mask_head"):
            raise SystemExit(f"{args.checkpoint}: no target-mask head (trained without --mask)")
        mask_head = torch.nn.Linear(m.c.hidden, 1)
        mask_head.load_state_dict(state["mask_head"])
    with open(os.path.join(args.data, "examples.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    rows = [r for r in rows if args.kind is None or r["kind"] == args.kind]
    random.Random(args.seed).shuffle(rows)
    image_id = vocab.token_id("<|image_pad|>")
    losses, first_errors = collections.defaultdict(list), collections.Counter()
    exact = collections.Counter()  # steps whose every answer token is the greedy choice
    read_loss, read_tokens, read_right, read_pages = 0.0, 0, 0, 0
    mask_hits = collections.Counter()  # kind -> clicks whose most confident token is on target
    clicks = collections.Counter()
    for row in rows[:args.count]:
        example = train.Encoded(row, vocab, args.data)
        patches, grid = example.patches()
        at, wanted = example.targets()
        words = example.read_targets(vocab, grid) if args.read_layer is not None else None
        inside = example.target_cells(grid) if mask_head else None
        layers = ((args.read_layer,) if words else ()) + \
            ((args.mask_layer,) if inside is not None else ())
        with torch.no_grad():
            logits, hidden = m(example.ids, example.image_at, patches, grid, image_id,
                               logits_at=at, hidden_after=layers)
        if words:
            loss, right = tiny.read_loss(hidden[0], example.image_at, words[0], words[1],
                                         m.decoder)
            read_loss, read_pages = read_loss + float(loss), read_pages + 1
            read_tokens, read_right = read_tokens + len(words[0]), read_right + right
        if inside is not None:
            _, hit = tiny.mask_loss(hidden[-1], example.image_at, inside, mask_head)
            mask_hits[row["kind"]] += hit
            clicks[row["kind"]] += 1
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
    if read_pages:
        print(f"reading at layer {args.read_layer}: {read_right} of {read_tokens} text-showing "
              f"image tokens read right (their best token one of their words'), loss "
              f"{read_loss / read_pages:.2f} nats a token")
    for kind, n in sorted(clicks.items()):
        print(f"target mask at layer {args.mask_layer}, {kind}: the most confident image token "
              f"on the control in {mask_hits[kind]} of {n}")
    print("first wrong token (kind, wanted->chosen):")
    for (kind, what), n in first_errors.most_common():
        print(f"  {n:3d} {kind} {what}")


if __name__ == "__main__":
    main()
