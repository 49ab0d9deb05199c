"""Writes the PyTorch model's greedy first-step answers on a dataset's held-out tasks: the
independent reference CI compares the shipped model's answers in Iris against
(tests/app/bundled_model/, docs/tiny-model.md section 5).

    /usr/bin/python3 scripts/training/reference_answers.py --checkpoint RUN/checkpoint.pt \\
        --data HELDOUT_DIR --out tests/app/bundled_model/reference_answers.txt

HELDOUT_DIR is `iris models data --split heldout` with the options the bundled tasks were made
with, so its first steps are the screenshots Iris sees at step 1 of each bundled task. The
weights are rounded to the exported type first (f16 matrices, f32 vectors, as export.py writes
them), so the reference is the model in the shipped files, not the checkpoint.

Each output line is `TASK: ANSWER`, in the dataset's task order, after a comment with the
smallest top-2 logit margin of every answer: how far each greedy choice is from flipping.
"""

import argparse
import json
import os

import torch

import export
import train


@torch.no_grad()
def round_like_export(m, matrix_type):
    if matrix_type == "f32":
        return
    kind = {"f16": torch.float16, "bf16": torch.bfloat16}[matrix_type]
    for p in m.parameters():
        if p.dim() > 1:
            p.copy_(p.to(kind).float())


@torch.no_grad()
def greedy_with_margin(m, example, vocab, max_tokens=40):
    """(answer text, smallest top-2 logit margin over the answer's tokens and its end)."""
    patches, grid = example.patches()
    ids = example.ids[:example.prompt_length].tolist()
    end, image_id, out, margin = vocab.token_id("<|im_end|>"), vocab.token_id("<|image_pad|>"), [], 1e9
    for _ in range(max_tokens):
        logits = m(torch.tensor(ids + out), example.image_at, patches, grid, image_id,
                   logits_at=torch.tensor([len(ids) + len(out) - 1]))[-1]
        top = torch.topk(logits, 2).values
        margin = min(margin, float(top[0] - top[1]))
        nxt = int(logits.argmax())
        if nxt == end:
            break
        out.append(nxt)
    return vocab.decode(out), margin


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--data", required=True, help="a dataset folder of the heldout split")
    parser.add_argument("--out", required=True)
    parser.add_argument("--type", default="f16", choices=["f32", "f16", "bf16"])
    parser.add_argument("--count", type=int, default=20, help="tasks (their first steps)")
    args = parser.parse_args()
    torch.set_num_threads(2)
    m, vocab = export.load_checkpoint(args.checkpoint)
    m.eval()
    round_like_export(m, args.type)
    with open(os.path.join(args.data, "examples.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    firsts = [r for r in rows if r["step"] == 0][:args.count]
    lines, margins = [], []
    for row in firsts:
        answer, margin = greedy_with_margin(m, train.Encoded(row, vocab, args.data), vocab)
        lines.append(f"{row['task']}: {answer}")
        margins.append(margin)
        print(f"{lines[-1]}  (margin {margin:.4f}, want {row['answer']})", flush=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(f"# {os.path.basename(__file__)}: greedy answers of the {args.type} model, "
                f"smallest top-2 logit margin {min(margins):.4f}\n")
        f.write("".join(line + "\n" for line in lines))


if __name__ == "__main__":
    main()
