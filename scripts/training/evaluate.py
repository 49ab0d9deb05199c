"""Scores a training checkpoint on a dataset's held-out steps, without exporting it: greedy
answers from the PyTorch model, counted per step kind as `iris eval run` would score a single
step (a click inside the target's box, any other action exactly as written), and the clicks'
median distance from the target's centre. Between training stages this says whether the model
has started to ground before an hour goes into the next one (docs/tiny-model.md, section 6).

    /usr/bin/python3 scripts/training/evaluate.py --checkpoint RUN/checkpoint.pt \\
        --data HELDOUT_DIR [--count 60] [--first-steps]
"""

import argparse
import collections
import json
import os
import statistics

import torch

import export
import train


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--data", required=True, help="a dataset folder of the heldout split")
    parser.add_argument("--count", type=int, default=60, help="steps to decode at most")
    parser.add_argument("--first-steps", action="store_true", help="only each task's first step")
    parser.add_argument("--skip-done", action="store_true", help="leave out finished() steps")
    args = parser.parse_args()
    torch.set_num_threads(2)
    m, vocab = export.load_checkpoint(args.checkpoint)
    m.eval()
    with open(os.path.join(args.data, "examples.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    rows = [r for r in rows if (not args.first_steps or r["step"] == 0)
            and (not args.skip_done or r["kind"] != "done")][:args.count]
    hits, totals, distances = collections.Counter(), collections.Counter(), []
    for row in rows:
        got = train.greedy_answer(m, train.Encoded(row, vocab, args.data), vocab)
        hit = train.answer_hits(row, got)
        hits[row["kind"]] += hit
        totals[row["kind"]] += 1
        want, point = train.POINT.match(row["answer"]), train.POINT.match(got)
        if want and point and row.get("target_box"):
            x0, y0, x1, y1 = row["target_box"]
            distances.append(((int(point.group(2)) - (x0 + x1) / 2) ** 2 +
                              (int(point.group(3)) - (y0 + y1) / 2) ** 2) ** 0.5)
        print(f"{row['id']} {row['kind']}: {'hit ' if hit else 'miss'} {got}  (want "
              f"{row['answer']})", flush=True)
    for kind in sorted(totals):
        print(f"{kind}: {hits[kind]}/{totals[kind]}")
    print(f"all: {sum(hits.values())}/{sum(totals.values())}; clicks' median distance from the "
          f"target's centre: {statistics.median(distances) if distances else float('nan'):.1f} px "
          f"({len(distances)} clicks)")


if __name__ == "__main__":
    main()
