"""Can the tiny model's architecture tell where things are? Trains it on the smallest grounding
task there is, one coloured square on a plain page, answered as "x,y" in pixels of the image, with
a prompt of four tokens instead of a chat template, on pages drawn fresh for every example (no
epochs). The losses of the x digits and the y digits are reported apart, since a model can learn
one axis and not the other; at the end, greedy answers are scored as clicks (docs/tiny-model.md,
section 7, has the runs and what they showed):

    cd scripts/training
    S="--set hidden=128 --set layers=2 --set heads=2 --set kv_heads=1 --set ffn=384 \
       --set v_width=64 --set v_heads=2 --set v_blocks=2 --set v_ffn=192"
    P="--steps 2000 --eval-every 250 --held-out 60 --width 336 --height 224"
    /usr/bin/python3 position_probe.py --out /tmp/probe-a $P $S
    /usr/bin/python3 position_probe.py --out /tmp/probe-c $P $S \
        --set rope_base=100 --set rope_sections=4,14,14,0 --aux 1

--aux W adds a training-only loss (weight W): a linear head, never exported, asked to give each
image token's position from the output of decoder layer --aux-layer.

Writes OUT/log.jsonl (one line per evaluation) and OUT/probe.json (the config and the last
evaluation). Seeds are fixed; with --steps the learning-rate schedule runs over steps and the
same command gives the same numbers, with --minutes it runs over wall time (as train.py's does),
so the numbers depend on how fast the machine was.
"""

import argparse
import dataclasses
import json
import math
import os
import random
import time

import numpy as np
import torch

from fake_dataset import probe_page
from model import (Config, TinyVlm, image_patches, mixed_precision, position_loss, target_loss,
                   text_rows)

# A vocabulary of its own: the ten digits, then the prompt's and answer's other tokens.
COMMA, IMAGE, VISION_START, VISION_END, CLICK, END = range(10, 16)
VOCAB = 16


def example(rng, width, height):
    image, (x, y, w, h) = probe_page(rng, width, height)
    cx, cy = x + w // 2, y + h // 2
    answer = [int(d) for d in str(cx)] + [COMMA] + [int(d) for d in str(cy)] + [END]
    patches, grid = image_patches(np.asarray(image))
    return torch.tensor(patches), grid, answer, (x, y, x + w, y + h)


def prompt(answer):
    return [VISION_START, IMAGE, VISION_END, CLICK] + answer


def losses(model, patches, grid, answer, aux=None, target=None, centre=None):
    """(cross-entropy of each answer token given the ones before it, position loss, target
    loss). With `aux` (the layer index and a linear head), the position loss is the mean squared
    error of the head's guess of every image token's position from that layer's output: a
    training-only loss that asks the decoder to turn M-RoPE rotations into position features the
    answer can read. With `target` (a linear head) and `centre` (the square's, as fractions of
    the image), the target loss is model.target_loss at the rows that predict the digits."""
    ids = torch.tensor(prompt(answer))
    at = torch.arange(3, len(ids) - 1)  # the logits that predict answer tokens
    layers = ((aux[0],) if aux else ()) + ((model.c.layers - 1,) if target else ())
    if not layers:
        logits = model(ids, 1, patches, grid, IMAGE, logits_at=at)
        return torch.nn.functional.cross_entropy(logits.float(), ids[4:], reduction="none"), \
            None, None
    logits, hidden = model(ids, 1, patches, grid, IMAGE, logits_at=at, hidden_after=layers)
    digits = at[ids[4:] < 10]
    return (torch.nn.functional.cross_entropy(logits.float(), ids[4:], reduction="none"),
            position_loss(hidden[0], 1, grid, aux[1]) if aux else None,
            target_loss(hidden[-1], text_rows(digits, 1, grid), centre, target) if target
            else None)


def greedy(model, patches, grid, limit=10):
    """The answer the model gives, decoded greedily (whole forward pass per token: a probe)."""
    answer = []
    with torch.no_grad():
        while len(answer) < limit:
            ids = torch.tensor(prompt(answer))
            token = int(model(ids, 1, patches, grid, IMAGE,
                              logits_at=torch.tensor([len(ids) - 1]))[0].argmax())
            if token == END:
                break
            answer.append(token)
    return answer


def parse(answer):
    try:
        comma = answer.index(COMMA)
        x, y = answer[:comma], answer[comma + 1:]
        if not x or not y or any(t > 9 for t in x + y):
            return None
        return int("".join(map(str, x))), int("".join(map(str, y)))
    except ValueError:
        return None


def evaluate(model, held_out, decode, aux):
    """Losses of the x and y digits (and the auxiliary position error); with `decode`, also the
    greedy answers: clicks inside the square and the median distance to its centre."""
    hits, dx, dy, x_loss, y_loss, parsed, aux_loss = 0, [], [], [], [], 0, []
    for patches, grid, answer, (x0, y0, x1, y1) in held_out:
        with torch.no_grad():
            token_losses, position_loss, _ = losses(model, patches, grid, answer, aux)
            token_losses = token_losses.tolist()
        if position_loss is not None:
            aux_loss.append(float(position_loss))
        comma = answer.index(COMMA)
        x_loss += token_losses[:comma]
        y_loss += token_losses[comma + 1:-1]
        if not decode:
            continue
        point = parse(greedy(model, patches, grid))
        if point is None:
            continue
        parsed += 1
        hits += x0 <= point[0] <= x1 and y0 <= point[1] <= y1
        dx.append(abs(point[0] - (x0 + x1) / 2))
        dy.append(abs(point[1] - (y0 + y1) / 2))
    result = {"x_digit_loss": float(np.mean(x_loss)), "y_digit_loss": float(np.mean(y_loss))}
    if aux_loss:
        result["position_mse"] = float(np.mean(aux_loss))
    if decode:
        result.update({"hits": hits, "of": len(held_out), "parsed": parsed,
                       "median_dx": float(np.median(dx)) if dx else None,
                       "median_dy": float(np.median(dy)) if dy else None})
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--minutes", type=float, default=20, help="length, unless --steps")
    parser.add_argument("--steps", type=int, help="length in optimizer steps")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--width", type=int, default=448)
    parser.add_argument("--height", type=int, default=280)
    parser.add_argument("--eval-every", type=int, default=50,
                        help="steps between evaluations (losses; the answers are decoded at the end)")
    parser.add_argument("--held-out", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--aux", type=float, default=0.0,
                        help="weight of the auxiliary loss on image-token positions (0: off)")
    parser.add_argument("--aux-layer", type=int, default=0,
                        help="the decoder layer whose output the auxiliary loss reads")
    parser.add_argument("--target", type=float, default=0.0,
                        help="weight of the training-only loss on the square's centre, read "
                             "where the digits are predicted (train.py's --target; 0: off)")
    parser.add_argument("--bf16", action="store_true",
                        help="bfloat16 matrix products in training (as train.py's --bf16)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="a Config field (model.py), e.g. rope_base=100 or "
                             "rope_sections=4,14,14,0; default: the shipped model's config")
    args = parser.parse_args()

    fields = {"vocab": VOCAB}
    for item in args.set:
        name, value = item.split("=", 1)
        fields[name] = tuple(int(v) for v in value.split(",")) if "," in value else float(value) \
            if "." in value or "e" in value else int(value)
    config = dataclasses.replace(Config(), **fields)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    model = TinyVlm(config)
    model.init_weights(args.seed)
    parameters = list(model.parameters())
    aux = None
    if args.aux > 0:  # a head that is trained with the model and never exported
        if not 0 <= args.aux_layer < config.layers:
            raise SystemExit(f"--aux-layer {args.aux_layer}: the decoder has layers "
                             f"0-{config.layers - 1}")
        head = torch.nn.Linear(config.hidden, 2)
        parameters += list(head.parameters())
        aux = (args.aux_layer, head)
    target = None
    if args.target > 0:  # starts by guessing the image's centre, as in train.py
        target = torch.nn.Linear(config.hidden, 2)
        torch.nn.init.zeros_(target.weight)
        torch.nn.init.constant_(target.bias, 0.5)
        parameters += list(target.parameters())
    optimizer = torch.optim.AdamW(parameters, lr=args.lr, betas=(0.9, 0.95), weight_decay=0.01)
    held_out = [example(random.Random(10_000_000 + i), args.width, args.height)
                for i in range(args.held_out)]
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    log = open(os.path.join(args.out, "log.jsonl"), "w", encoding="utf-8")
    start, step, last = time.time(), 0, None
    # Warm-up in steps, then cosine over the steps or the minutes.
    while True:
        elapsed = time.time() - start
        progress = step / args.steps if args.steps else elapsed / (60 * args.minutes)
        if step % args.eval_every == 0 or progress >= 1:
            model.eval()
            last = {"step": step, "examples": step * args.batch, "seconds": round(elapsed),
                    **evaluate(model, held_out, progress >= 1, aux)}
            model.train()
            print(json.dumps(last), flush=True)
            log.write(json.dumps(last) + "\n")
            log.flush()
        if progress >= 1:
            break
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * \
            (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad()
        for _ in range(args.batch):
            patches, grid, answer, (x0, y0, x1, y1) = example(rng, args.width, args.height)
            centre = torch.tensor([(x0 + x1) / 2 / args.width, (y0 + y1) / 2 / args.height])
            with mixed_precision(args.bf16):
                token_losses, position_loss, square_loss = losses(model, patches, grid, answer,
                                                                  aux, target, centre)
                loss = token_losses.mean() + (args.aux * position_loss if aux else 0) + \
                    (args.target * square_loss if target else 0)
            (loss / args.batch).backward()
        torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        optimizer.step()
        step += 1
    with open(os.path.join(args.out, "probe.json"), "w", encoding="utf-8") as f:
        json.dump({"config": dataclasses.asdict(config), "args": vars(args), "last": last}, f,
                  indent=1)


if __name__ == "__main__":
    main()
