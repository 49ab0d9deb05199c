"""Can the tiny model's vision tower read the page at a given pixel budget? Trains the tower alone
(no decoder), with a linear head of its own, to say which text tokens each merged image token
shows (train.py's reading targets, Encoded.read_targets), and compares its held-out loss with the
prior: the cross-entropy of always guessing the training pages' average token distribution. A
tower that cannot read stays at the prior; one that reads goes below it (docs/tiny-model.md,
section 6, has the runs and what they showed):

    cd scripts/training
    /usr/bin/python3 read_probe.py --checkpoint RUN/checkpoint.pt --data TRAIN_DIR [...] \\
        --held HELD_DIR --out /tmp/read-probe --steps 600 [--init-tower] [--bf16] [--save PT]

The checkpoint gives the vocabulary (the targets' tokens) and the tower's configuration; with
--init-tower its trained tower is the start, else a fresh one (seeded). The data are `iris models
data` folders of generator version 2 (their `texts`) at one pixel budget. Writes OUT/log.jsonl,
one line per evaluation. --save writes the checkpoint with its tower replaced by the one trained
here, everything else as it was, for `train.py --init`: reading first, then the rest.
"""

import argparse
import json
import os
import random
import time

import torch
import torch.nn.functional as F

import export
import model as tiny
import train


def pages(data_dir, vocab, split=None):
    """(patches, grid, cells, wanted) of every step of `data_dir` whose page shows text, with
    the reading targets of train.Encoded."""
    rows, held = train.load_examples(data_dir)
    out = []
    for row in rows + held:
        if split and row.get("split", "train") != split:
            continue
        example = train.Encoded(row, vocab, data_dir)
        if targets(example, vocab) is not None:
            out.append(example)
    return out


def page_loss(tower, head, example, vocab):
    """(mean soft cross-entropy over the page's text-showing image tokens, tokens, of them read
    right), the head reading the tower's merged tokens RMS-normalised."""
    patches, grid = example.patches()
    cells, wanted = example.read_targets(vocab, grid)
    logits = head(tiny.rms(tower(patches, grid)[cells])).float()
    loss = -(wanted * F.log_softmax(logits, dim=-1)).sum(-1).mean()
    right = int((wanted.gather(1, logits.argmax(-1, keepdim=True)) > 0).sum())
    return loss, len(cells), right


def targets(example, vocab):
    """The page's [text-showing image tokens, vocab] reading targets."""
    row = example.row
    read = example.read_targets(vocab, (row["image_height"] // tiny.PATCH,
                                        row["image_width"] // tiny.PATCH))
    return None if read is None else read[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a train.py checkpoint.pt")
    parser.add_argument("--data", required=True, nargs="+", metavar="DIR",
                        help="training pages (their train split), one folder or several")
    parser.add_argument("--held", required=True, help="held-out pages (any split)")
    parser.add_argument("--held-count", type=int, default=60)
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--init-tower", action="store_true",
                        help="start from the checkpoint's tower (else a fresh one)")
    parser.add_argument("--bf16", action="store_true", help="as train.py's --bf16")
    parser.add_argument("--save", metavar="PT",
                        help="write --checkpoint with this tower in it (for train.py --init)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)

    m, vocab = export.load_checkpoint(args.checkpoint)
    if not args.init_tower:
        m.init_weights(args.seed)
    tower = m.tower
    head = torch.nn.Linear(m.c.hidden, len(vocab))
    examples = [e for data in args.data for e in pages(data, vocab, "train")]
    held = pages(args.held, vocab)[:args.held_count]
    if not examples or not held:
        raise SystemExit("no pages with measured words (generator version 2) in --data/--held")
    # The prior: the training pages' average target distribution, guessed for every token.
    average = sum(targets(e, vocab).sum(0) for e in examples[:500])
    log_average = torch.log((average / average.sum()).clamp_min(1e-12))
    held_prior = sum(float(-(targets(e, vocab) * log_average).sum(-1).mean())
                     for e in held) / len(held)
    parameters = list(tower.parameters()) + list(head.parameters())
    optimizer = torch.optim.AdamW(parameters, lr=args.lr, betas=(0.9, 0.95), weight_decay=0.01)
    order = random.Random(args.seed)
    log = open(os.path.join(args.out, "log.jsonl"), "w", encoding="utf-8")
    started = time.time()
    print(f"{len(examples)} training pages, {len(held)} held out; held-out prior "
          f"{held_prior:.3f} nats a token", flush=True)

    def evaluate(step, train_loss):
        with torch.no_grad():
            results = [page_loss(tower, head, e, vocab) for e in held]
        entry = {"step": step, "train_loss": train_loss,
                 "held_loss": sum(float(r[0]) for r in results) / len(results),
                 "held_prior": held_prior,
                 "held_right": sum(r[2] for r in results) / sum(r[1] for r in results),
                 "seconds": round(time.time() - started, 1)}
        log.write(json.dumps(entry) + "\n")
        log.flush()
        print(json.dumps(entry), flush=True)

    recent = []
    for step in range(args.steps):
        lr = train.learning_rate(step, args.steps, args.lr, args.warmup)
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad()
        total = 0.0
        for example in order.choices(examples, k=args.batch):
            with tiny.mixed_precision(args.bf16):
                loss, _, _ = page_loss(tower, head, example, vocab)
            (loss / args.batch).backward()
            total += float(loss) / args.batch
        torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        optimizer.step()
        recent = (recent + [total])[-args.eval_every:]
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            evaluate(step + 1, sum(recent) / len(recent))
    if args.save:
        start = torch.load(args.checkpoint)
        state = dict(start["model"])
        state.update({"tower." + key: value for key, value in tower.state_dict().items()})
        torch.save({"config": start["config"], "merges": start["merges"], "model": state,
                    "step": 0, "losses": []}, args.save)


if __name__ == "__main__":
    main()
