"""Trains the tiny computer-use model (docs/tiny-model.md) on a generated dataset and exports the
two GGUF files Iris ships. One command, fixed seeds, 2 threads (or, faster, --processes 2
--threads 1; --bf16 for bfloat16 products, about 5x faster where the CPU has AVX512-BF16):

    nice -n 19 /usr/bin/python3 scripts/training/train.py --data DATASET_DIR --out RUN_DIR \\
        [--minutes 180] [--steps N] [--batch 8] [--lr 1e-3] [--config tiny.json] [--bf16]

RUN_DIR gets: tokenizer.json, checkpoint.pt (every --checkpoint-every steps and at the end; pass
--resume to continue from it), log.jsonl (loss per step), loss.png, run.json (data size, steps,
time, losses, held-out exact-match) and gguf/iris-tiny-cua.gguf + .mmproj.gguf.

Each example is one agent step rendered exactly as Iris's agent renders it for this model
(prompt.py); the loss is the cross-entropy of the answer's tokens and the <|im_end|> after it,
plus training-only losses that teach the parts of grounding one by one (example_loss; the heads
they use are never exported): --aux, where each image token lies (with RoPE base 100 it took
position_probe.py's task from chance to 90% of clicks on target, docs/tiny-model.md section 7);
--read, which words each image token shows; --mask, which image tokens lie on the clicked
control; --target, where that control lies, at the rows that write the click's digits.
"""

import argparse
import ctypes
import json
import math
import os
import random
import re
import signal
import socket
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from PIL import Image, ImageDraw

import corpus
import export
import model as tiny
import prompt
import tokenizer as tok


def load_examples(data_dir):
    """(training rows, held-out rows) of one dataset folder; each row's "dir" is the folder its
    image path is relative to."""
    with open(os.path.join(data_dir, "examples.jsonl"), encoding="utf-8") as f:
        rows = [dict(json.loads(line), dir=data_dir) for line in f if line.strip()]
    train = [r for r in rows if r.get("split", "train") == "train"]
    held = [r for r in rows if r.get("split", "train") != "train"]
    return train, held


def dataset_budget(data_dir, config):
    """The pixel budget DIR's images were made with (its dataset.json), else the model's."""
    path = os.path.join(data_dir, "dataset.json")
    if not os.path.exists(path):
        return config.max_pixels
    with open(path, encoding="utf-8") as f:
        return json.load(f).get("max_pixels", config.max_pixels)


def check_image_sizes(rows, max_pixels):
    """Iris resizes a screen_width x screen_height screenshot with the pixel budget; the
    dataset's images must already have that size, or the model learns another coordinate frame."""
    bad = [r for r in rows if tiny.smart_resize(r["screen_width"], r["screen_height"], max_pixels)
           != (r["image_width"], r["image_height"])]
    if bad:
        r = bad[0]
        want = tiny.smart_resize(r["screen_width"], r["screen_height"], max_pixels)
        print(f"warning: {len(bad)} examples are not at the size max_pixels={max_pixels} "
              f"gives their screen, e.g. {r['id']}: screen {r['screen_width']}x"
              f"{r['screen_height']} -> {want[0]}x{want[1]}, image {r['image_width']}x"
              f"{r['image_height']}")


class Encoded:
    """One example as token ids: the prompt (with one <|image_pad|>) then the answer."""

    def __init__(self, row, vocab, data_dir):
        self.row = row
        prompt_ids = vocab.encode(prompt.render(row["instruction"], row["history"]))
        answer_ids = vocab.encode(prompt.answer_text(row["answer"]))
        self.ids = torch.tensor(prompt_ids + answer_ids)
        self.prompt_length = len(prompt_ids)
        self.image_at = prompt_ids.index(vocab.token_id("<|image_pad|>"))
        self.image_path = os.path.join(data_dir, row["image"])

    def patches(self):
        rgb = np.asarray(Image.open(self.image_path).convert("RGB"))
        patches, grid = tiny.image_patches(rgb)
        return torch.from_numpy(patches), grid

    def targets(self):
        """(rows whose logits predict the answer, the answer's ids)."""
        rows = torch.arange(self.prompt_length - 1, len(self.ids) - 1)
        return rows, self.ids[self.prompt_length:]

    def read_targets(self, vocab, grid):
        """The reading loss's targets (model.read_loss): the indices of the merged image tokens
        that show text, and [those, vocab] distributions over the text tokens each shows; None
        when the row has no text boxes (data written before generator version 2) or its page
        shows none. Each word is cut into its tokens (word_pieces), each piece placed in the
        word's box by its share of the letters; a piece counts for an image token when a third
        of it lies there, weighted by the area it covers."""
        if not self.row.get("texts"):
            return None
        if not hasattr(self, "_read"):
            weights = {}
            for left, top, right, bottom, word in self.row["texts"]:
                for ids, start, end in word_pieces(vocab, word):
                    x0, x1 = left + (right - left) * start, left + (right - left) * end
                    area = max(x1 - x0, 1e-3) * max(bottom - top, 1e-3)
                    for cell, w in covered_cells((x0, top, x1, bottom), grid):
                        if w >= area / 3:
                            row = weights.setdefault(cell, {})
                            for i in ids:
                                row[i] = row.get(i, 0.0) + w / len(ids)
            # Kept sparse (a dense row per token would hold gigabytes over a data set).
            self._read = [(cell, list(weights[cell].items())) for cell in sorted(weights)]
        if not self._read:
            return None
        wanted = torch.zeros(len(self._read), len(vocab))
        for n, (_, row) in enumerate(self._read):
            for i, w in row:
                wanted[n, i] = w
        wanted /= wanted.sum(-1, keepdim=True).clamp_min(1e-9)
        return torch.tensor([cell for cell, _ in self._read], dtype=torch.long), wanted

    def target_cells(self, grid):
        """[merged tokens] 1.0 where the token lies on the control a click aims at (a third of
        the token or of the control inside it, and always the token under the click), else 0;
        None for other answers."""
        centre = self.click_centre()
        if centre is None:
            return None
        gh, gw = grid[0] // 2, grid[1] // 2
        left, top, right, bottom = self.row["target_box"]
        inside = torch.zeros(gh * gw)
        least = min(CELL * CELL, max(right - left, 1e-3) * max(bottom - top, 1e-3)) / 3
        for cell, area in covered_cells(self.row["target_box"], grid):
            if area >= least:
                inside[cell] = 1.0
        inside[min(gh - 1, int(centre[1] * gh)) * gw + min(gw - 1, int(centre[0] * gw))] = 1.0
        return inside

    def click_centre(self):
        """The centre of the control a click answer aims at, as (x, y) fractions of the image;
        None for other answers."""
        box = self.row.get("target_box")
        if not box or not POINT.match(self.row["answer"]):
            return None
        x0, y0, x1, y1 = box
        return torch.tensor([(x0 + x1) / 2 / self.row["image_width"],
                             (y0 + y1) / 2 / self.row["image_height"]])


CELL = 2 * tiny.PATCH  # a merged image token's side in the image's pixels
_WORD_PIECES = {}


def covered_cells(box, grid):
    """(merged image token, how many of the box's pixels lie in it) for each token the box
    [left, top, right, bottom] (the image's pixels) reaches; tokens in the decoder's order."""
    left, top, right, bottom = box
    gh, gw = grid[0] // 2, grid[1] // 2
    for r in range(max(0, int(top // CELL)), min(gh, int(bottom // CELL) + 1)):
        for c in range(max(0, int(left // CELL)), min(gw, int(right // CELL) + 1)):
            yield r * gw + c, (max(0.0, min(right, (c + 1) * CELL) - max(left, c * CELL)) *
                               max(0.0, min(bottom, (r + 1) * CELL) - max(top, r * CELL)))


def word_pieces(vocab, word):
    """`word` as its tokens: (token ids, where the piece starts and ends as fractions of the
    word's letters). The first piece has two ids, the word's first token alone and after a
    space (a bare space token left out): how an instruction may quote it."""
    if word not in _WORD_PIECES:
        ids = vocab.encode(word)
        texts = [vocab.decode([i]) for i in ids]
        total, at, pieces = max(1, sum(len(t) for t in texts)), 0, []
        for i, t in zip(ids, texts):
            pieces.append(([i], at / total, (at + len(t)) / total))
            at += len(t)
        space, spaced = vocab.encode(" "), vocab.encode(" " + word)
        spaced = spaced[len(space):] if spaced[:len(space)] == space else spaced
        if spaced and spaced[0] != ids[0]:
            pieces[0] = ([ids[0], spaced[0]], pieces[0][1], pieces[0][2])
        _WORD_PIECES[word] = pieces
    return _WORD_PIECES[word]


TYPED = re.compile(r"^type\(content='(.+)'\)$")
VOWELS, CONSONANTS = "aeiou", "bcdfghjklmnpqrstvwxyz"
DRILL_SIDE = 56  # a drill's blank screen: 2 x 2 image tokens


def reshaped(text, rng):
    """`text` with every letter replaced by a random one of its kind (vowel or consonant, same
    case) and every digit by a random digit: new text of the same shape, tokenized like the
    invented text of the data."""
    out = []
    for ch in text:
        low = ch.lower()
        if ch.isascii() and ch.isdigit():
            out.append(rng.choice("0123456789"))
        elif low in VOWELS or low in CONSONANTS:
            new = rng.choice(VOWELS if low in VOWELS else CONSONANTS)
            out.append(new.upper() if ch.isupper() else new)
        else:
            out.append(ch)
    return "".join(out)


def drillable(row):
    """Whether a training row can become a copy drill: a type step whose text the instruction
    quotes."""
    typed = TYPED.match(row["answer"])
    return bool(typed) and typed.group(1) in row["instruction"]


class CopyDrill(Encoded):
    """A type step whose text is replaced everywhere (instruction, earlier answers, answer) by
    new text of the same shape, on a blank screen of 2 x 2 image tokens: practice at copying
    the text an instruction quotes into type(content='...') at a sixtieth of a page's cost
    (docs/tiny-model.md, section 6)."""

    def __init__(self, row, vocab, rng):
        typed = TYPED.match(row["answer"]).group(1)
        new = reshaped(typed, rng)
        drill = dict(row, instruction=row["instruction"].replace(typed, new),
                     history=[h.replace(typed, new) for h in row["history"]],
                     answer=row["answer"].replace(typed, new), image_width=DRILL_SIDE,
                     image_height=DRILL_SIDE, target_box=None)
        super().__init__(drill, vocab, "")

    def patches(self):
        patches, grid = tiny.image_patches(np.full((DRILL_SIDE, DRILL_SIDE, 3), 255, np.uint8))
        return torch.from_numpy(patches), grid


def example_loss(m, example, image_id, is_digit, prefix=None, aux=None, vocab=None):
    """One example's losses, a dict: "answer" (the answer tokens' cross-entropy, summed),
    "tokens", "digit_loss" (summed over the coordinate digits, a float) and "digits"; and each
    training-only loss that `aux` asks for and the example allows (docs/tiny-model.md, sections 6
    and 7), each read from a decoder layer's output by a linear head trained with the model and
    never exported:
    - "position" (aux["position"] = (layer, head)): tiny.position_loss, where each image token
      lies: makes the decoder turn M-RoPE rotations into position features;
    - "read" (aux["read"] = layer; pages whose words the data measured): (tiny.read_loss, image
      tokens read, of them right): the image tokens read the words they show;
    - "mask" (aux["mask"] = (layer, head); clicks): (tiny.mask_loss, hit): which image tokens lie
      on the clicked control, seen after the instruction;
    - "target" (aux["target"] = head; clicks): tiny.target_loss at the rows that predict the
      click's digits, where the control lies.
    `prefix`: the batch's shared prompt prefix, as TinyVlm.forward takes it."""
    aux = aux or {}
    patches, grid = example.patches()
    rows, targets = example.targets()
    digits = is_digit[targets]
    skipped = prefix[0] if prefix else 0
    image_rows = example.image_at - skipped
    inside = example.target_cells(grid) if "mask" in aux or "target" in aux else None
    words = example.read_targets(vocab, grid) if "read" in aux else None
    layer_of = {}  # loss -> the decoder layer whose output it reads
    if "position" in aux:
        layer_of["position"] = aux["position"][0]
    if words:
        layer_of["read"] = aux["read"]
    if inside is not None and "mask" in aux:
        layer_of["mask"] = aux["mask"][0]
    if inside is not None and "target" in aux and digits.any():
        layer_of["target"] = m.c.layers - 1
    out = {}
    if layer_of:
        logits, hidden = m(example.ids, example.image_at, patches, grid, image_id,
                           logits_at=rows, hidden_after=tuple(layer_of.values()), prefix=prefix)
        hidden = dict(zip(layer_of, hidden))
        if "position" in hidden:
            out["position"] = tiny.position_loss(hidden["position"], image_rows, grid,
                                                 aux["position"][1])
        if "read" in hidden:
            loss, right = tiny.read_loss(hidden["read"], image_rows, words[0], words[1],
                                         m.decoder)
            out["read"] = (loss, len(words[0]), right)
        if "mask" in hidden:
            out["mask"] = tiny.mask_loss(hidden["mask"], image_rows, inside, aux["mask"][1])
        if "target" in hidden:
            at = tiny.text_rows(rows[digits], example.image_at, grid, skipped)
            out["target"] = tiny.target_loss(hidden["target"], at, example.click_centre(),
                                             aux["target"])
    else:
        logits = m(example.ids, example.image_at, patches, grid, image_id, logits_at=rows,
                   prefix=prefix)
    per_token = F.cross_entropy(logits.float(), targets, reduction="none")
    out.update(answer=per_token.sum(), tokens=len(targets),
               digit_loss=float(per_token.detach()[digits].sum()), digits=int(digits.sum()))
    return out


# What a step adds up over its batch (summed over the training processes too).
STATISTICS = ("total", "count", "digit_total", "digit_count", "position_total", "target_total",
              "target_count", "drill_total", "drill_count", "read_total", "read_tokens",
              "read_right", "read_pages", "mask_total", "mask_hits", "mask_count")


def add_statistics(sums, out):
    """Adds one example's losses (example_loss's dict) to a step's sums."""
    sums["total"] += float(out["answer"])
    sums["count"] += out["tokens"]
    sums["digit_total"] += out["digit_loss"]
    sums["digit_count"] += out["digits"]
    if "position" in out:
        sums["position_total"] += float(out["position"])
    if "target" in out:
        sums["target_total"] += float(out["target"])
        sums["target_count"] += 1
    if "read" in out:
        sums["read_total"] += float(out["read"][0])
        sums["read_tokens"] += out["read"][1]
        sums["read_right"] += out["read"][2]
        sums["read_pages"] += 1
    if "mask" in out:
        sums["mask_total"] += float(out["mask"][0])
        sums["mask_hits"] += out["mask"][1]
        sums["mask_count"] += 1


def log_entry(sums, batch):
    """log.jsonl's means for a step (those of the losses the step had)."""
    def mean(total, count):
        return sums[total] / sums[count] if sums[count] else None
    entry = {"digit_loss": mean("digit_total", "digit_count")}
    if sums["position_total"]:
        entry["position_mse"] = sums["position_total"] / batch
    for key, value in (("target_mse", mean("target_total", "target_count")),
                       ("copy_drill_loss", mean("drill_total", "drill_count")),
                       ("read_loss", mean("read_total", "read_pages")),  # per page
                       # the share of text-showing image tokens read right
                       ("read_right", mean("read_right", "read_tokens")),
                       ("mask_loss", mean("mask_total", "mask_count")),
                       # clicks whose most confident image token lies on the control
                       ("mask_hits", mean("mask_hits", "mask_count"))):
        if value is not None:
            entry[key] = value
    return entry


def shared_prefix_length(examples):
    """How many leading tokens every example has in common (the system prompt and the UI-TARS
    text before the instruction), stopping before any image: the prefix whose keys and values
    each training step computes once for its whole batch."""
    first = examples[0].ids.tolist()
    length = min([len(first)] + [e.image_at for e in examples])
    for e in examples[1:]:
        ids = e.ids[:length].tolist()
        length = next((i for i, (a, b) in enumerate(zip(first, ids)) if a != b), len(ids))
    return length


def learning_rate(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress))))


@torch.no_grad()
def greedy_answer(m, example, vocab, max_tokens=40):
    patches, grid = example.patches()
    ids = example.ids[:example.prompt_length].tolist()
    end, image_id, out = vocab.token_id("<|im_end|>"), vocab.token_id("<|image_pad|>"), []
    for _ in range(max_tokens):  # no KV cache: fine for a few held-out checks
        logits = m(torch.tensor(ids + out), example.image_at, patches, grid, image_id,
                   logits_at=torch.tensor([len(ids) + len(out) - 1]))
        nxt = int(logits[-1].argmax())
        if nxt == end:
            break
        out.append(nxt)
    return vocab.decode(out)


POINT = re.compile(r"^(\w+)\(start_box='\((\d+),(\d+)\)'\)$")


def answer_hits(row, got):
    """Whether an answer does what the step asks: a click inside the target's box (what
    `iris eval run` scores), any other action exactly as written."""
    want, point = POINT.match(row["answer"]), POINT.match(got)
    if not want or not row.get("target_box") or not point:
        return got == row["answer"]
    x0, y0, x1, y1 = row["target_box"]
    return (point.group(1) == want.group(1) and x0 <= int(point.group(2)) <= x1
            and y0 <= int(point.group(3)) <= y1)


def plot_losses(losses, path):
    """A loss curve as a PNG, drawn with Pillow (no plotting library needed)."""
    width, height, pad = 800, 450, 50
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle([pad, pad, width - pad, height - pad], outline="black")
    if losses:
        top = max(losses)
        xs = [pad + (width - 2 * pad) * i / max(1, len(losses) - 1) for i in range(len(losses))]
        ys = [height - pad - (height - 2 * pad) * v / top for v in losses]
        draw.line(list(zip(xs, ys)), fill=(52, 101, 164), width=2)
        draw.text((pad, pad - 20), f"training loss per answer token (max {top:.3f}, last "
                                   f"{losses[-1]:.3f}), {len(losses)} steps", fill="black")
        draw.text((pad - 30, height - pad - 5), "0", fill="black")
        draw.text((width - pad - 30, height - pad + 8), f"step {len(losses)}", fill="black")
    image.save(path)


def save_checkpoint(path, m, optimizer, vocab, step, losses, heads):
    torch.save({"config": m.c.to_json(), "model": m.state_dict(), "merges": vocab.merges,
                "optimizer": optimizer.state_dict(), "step": step, "losses": losses,
                **{key: head.state_dict() if head else None for key, head in heads.items()}},
               path + ".tmp")
    os.replace(path + ".tmp", path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, nargs="+", metavar="DIR",
                        help="dataset folders of `iris models data` (several: their training "
                             "rows together, e.g. two seeds; the held-out rows of the first)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--config", help="JSON of model.Config fields (default: Config())")
    parser.add_argument("--steps", type=int, default=100000, help="optimizer steps at most")
    parser.add_argument("--minutes", type=float, default=170.0, help="training wall time at most")
    parser.add_argument("--batch", type=int, default=8, help="examples per optimizer step")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--checkpoint-every", type=int, default=200)
    parser.add_argument("--eval", type=int, default=20, help="held-out examples to decode")
    parser.add_argument("--export-type", default="f16", choices=["f32", "f16", "bf16", "q8_0"])
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--init", help="an earlier run's checkpoint.pt to start from: its "
                                       "vocabulary, configuration and weights (and position head), "
                                       "with a fresh optimizer and schedule on --data (the second "
                                       "stage of a curriculum)")
    parser.add_argument("--done-weight", type=float, default=0.25,
                        help="sampling weight of 'finished()' steps (easy; the rest weigh 1), "
                             "so most of the compute goes to grounding")
    parser.add_argument("--held", help="a dataset folder (its heldout split) to decode at the end "
                                       "instead of DATA's held-out rows")
    parser.add_argument("--aux", type=float, default=0.0,
                        help="weight of the training-only loss on image-token positions, per "
                             "answer token (0: off; position_probe.py measures what it buys)")
    parser.add_argument("--aux-layer", type=int, default=0,
                        help="the decoder layer whose output the position loss reads")
    parser.add_argument("--target", type=float, default=0.0,
                        help="weight of the training-only loss on where a click's target lies, "
                             "read at the rows that predict its digits, per answer token (0: off)")
    parser.add_argument("--read", type=float, default=0.0,
                        help="weight of the training-only reading loss (the image tokens of "
                             "decoder layer --read-layer read out as the words they show), per "
                             "answer token (0: off); needs data with text boxes")
    parser.add_argument("--read-layer", type=int, default=-1,
                        help="the decoder layer whose output the reading loss reads (-1: the "
                             "decoder's input, i.e. the vision tower's merged tokens)")
    parser.add_argument("--mask", type=float, default=0.0,
                        help="weight of the training-only loss on which image tokens lie on a "
                             "click's control (read at decoder layer --mask-layer, where the "
                             "image rows have seen the instruction), per answer token (0: off)")
    parser.add_argument("--mask-layer", type=int, default=2,
                        help="the decoder layer whose output the target-mask loss reads")
    parser.add_argument("--bf16", action="store_true",
                        help="bfloat16 matrix products in training's forward passes (float32 "
                             "weights, optimizer and losses): 5x faster on this project's "
                             "AVX512-BF16 CPU (docs/tiny-model.md, section 6)")
    parser.add_argument("--copy-drills", type=int, default=0,
                        help="copy drills (CopyDrill: a type step with new text on a blank "
                             "screen) added to every batch, weighted as its examples")
    parser.add_argument("--processes", type=int, default=1,
                        help="data-parallel training processes, each with --threads threads and "
                             "its share of every batch (the same steps as one process)")
    args = parser.parse_args()
    if args.processes < 1 or args.batch % args.processes:
        raise SystemExit(f"--processes {args.processes}: must divide --batch {args.batch}")
    if args.processes == 1:
        train_process(0, args, None)
        return
    with socket.socket() as s:  # a free local port for the processes' rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torch.multiprocessing.spawn(train_process, args=(args, port), nprocs=args.processes)


def all_reduce(values):
    """Sums a float64 vector over the training processes (no-op for one)."""
    t = torch.tensor(values, dtype=torch.float64)
    if dist.is_initialized():
        dist.all_reduce(t)
    return t.tolist()


def all_reduce_gradients(parameters):
    """Sums the gradients over the training processes. A parameter with no gradient in any
    process keeps none, so that the optimizer skips it exactly as one process would."""
    present = torch.tensor([float(p.grad is not None) for p in parameters])
    flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                      for p in parameters])
    dist.all_reduce(present)
    dist.all_reduce(flat)
    offset = 0
    for p, has in zip(parameters, present.tolist()):
        n = p.numel()
        p.grad = flat[offset:offset + n].view_as(p).clone() if has else None
        offset += n


def die_with_parent():
    """Ends this worker process when the one that spawned it ends (Linux's PR_SET_PDEATHSIG):
    without it, stopping a --processes run by killing the command leaves its workers training
    and writing into RUN_DIR."""
    pr_set_pdeathsig = 1
    if ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() == 1:  # the parent ended before the call
        raise SystemExit("train.py: the launching process has ended")


def train_process(rank, args, port):
    """The training run, or with --processes N one of N processes: each takes every N-th example
    of every batch (all draw the same batches) and the gradients are summed before the optimizer
    step, so the weights stay equal on all of them; process 0 writes everything."""
    world = args.processes
    if world > 1:
        die_with_parent()
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world)
    lead = rank == 0
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    started = time.time()

    config = tiny.Config()
    if args.config:
        with open(args.config, encoding="utf-8") as f:
            config = tiny.Config.from_json(f.read())
    train_rows, held_rows = load_examples(args.data[0])
    for more in args.data[1:]:
        train_rows += load_examples(more)[0]
    if args.held:
        held_rows = load_examples(args.held)[1]
    checkpoint_path = os.path.join(args.out, "checkpoint.pt")
    if args.resume and args.init:
        raise SystemExit("--resume continues RUN_DIR's own run; --init starts a new one from "
                         "another run's weights: pass one of them")
    state = torch.load(checkpoint_path) if args.resume else None
    start = state or (torch.load(args.init) if args.init else None)
    if start:
        vocab = tok.Tokenizer(start["merges"])
        config = tiny.Config.from_json(start["config"])
    else:
        # Trained once and shared: the processes must agree on every token.
        merges = [tok.train(corpus.documents(train_rows), config.vocab) if lead else None]
        if world > 1:
            dist.broadcast_object_list(merges, src=0)
        vocab = tok.Tokenizer(merges[0])
    config.vocab = len(vocab)
    budgets = {data: dataset_budget(data, config) for data in args.data}
    budget = budgets[args.data[0]]
    if len(set(budgets.values())) > 1:
        raise SystemExit("--data: the folders' images were made with different pixel budgets: "
                         + ", ".join(f"{d} {b}" for d, b in budgets.items()))
    if budget != config.max_pixels and lead:
        # A curriculum's first stage: smaller images, the same answers in their pixels.
        print(f"{' '.join(args.data)}: images at max_pixels {budget}; the model ships with "
              f"{config.max_pixels}")
    check_image_sizes(train_rows, budget)
    if held_rows:
        check_image_sizes(held_rows, dataset_budget(args.held or args.data[0], config))
    if lead:
        vocab.save(os.path.join(args.out, "tokenizer.json"))
    m = tiny.TinyVlm(config)
    m.init_weights(args.seed)
    # The training-only losses' heads are trained with the model, kept in the checkpoint, never
    # exported (example_loss says what each does).
    for option, layer, lowest in (("--aux-layer", args.aux_layer, 0),
                                  ("--read-layer", args.read_layer, -1),
                                  ("--mask-layer", args.mask_layer, 0)):
        if not lowest <= layer < config.layers:
            raise SystemExit(f"{option} {layer}: the decoder has layers 0-{config.layers - 1}"
                             + (" (-1: its input, the vision tower's output)" if lowest < 0
                                else ""))
    heads = {"position_head": torch.nn.Linear(config.hidden, 2) if args.aux > 0 else None,
             "target_head": torch.nn.Linear(config.hidden, 2) if args.target > 0 else None,
             "mask_head": torch.nn.Linear(config.hidden, 1) if args.mask > 0 else None}
    if heads["target_head"]:  # it starts by guessing the image's centre, no pull on the model yet
        torch.nn.init.zeros_(heads["target_head"].weight)
        torch.nn.init.constant_(heads["target_head"].bias, 0.5)
    aux = {}
    if heads["position_head"]:
        aux["position"] = (args.aux_layer, heads["position_head"])
    if heads["target_head"]:
        aux["target"] = heads["target_head"]
    if args.read > 0:
        aux["read"] = args.read_layer
    if heads["mask_head"]:
        aux["mask"] = (args.mask_layer, heads["mask_head"])
    decay = [p for p in m.parameters() if p.dim() > 1]
    no_decay = [p for p in m.parameters() if p.dim() <= 1]
    groups = [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}]
    for head in heads.values():
        if head:
            groups.append({"params": list(head.parameters()), "weight_decay": 0.0})
    optimizer = torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.95))
    step, losses = 0, []
    for (key, head), option in zip(heads.items(), ("--aux", "--target", "--mask")):
        if state and bool(head) != bool(state.get(key)):
            raise SystemExit(f"{checkpoint_path}: {option} must be "
                             f"{'on' if head is None else 'off'} to resume this run, as it was "
                             "when the run started")
    if start:
        m.load_state_dict(start["model"])
        for key, head in heads.items():
            if head and start.get(key):  # else a new head learns from the start
                head.load_state_dict(start[key])
    if state:
        optimizer.load_state_dict(state["optimizer"])
        step, losses = state["step"], state["losses"]

    examples = [Encoded(r, vocab, r["dir"]) for r in train_rows]
    held = [Encoded(r, vocab, r["dir"]) for r in held_rows[:args.eval]]
    is_digit = torch.tensor([vocab.decode([i]).isdigit() for i in range(len(vocab))])
    weights = [args.done_weight if e.row.get("kind") == "done" else 1.0 for e in examples]
    drill_rows = [r for r in train_rows if drillable(r)] if args.copy_drills else []
    if args.copy_drills and not drill_rows:
        raise SystemExit("--copy-drills: the data has no type steps whose text the instruction "
                         "quotes")
    image_id = vocab.token_id("<|image_pad|>")
    shared = shared_prefix_length(examples)
    tower, decoder = tiny.count_parameters(config)
    parameters = [p for g in groups for p in g["params"]]
    if lead:
        print(f"{len(examples)} training examples, {len(held_rows)} held out; vocabulary "
              f"{len(vocab)}; parameters: tower {tower / 1e6:.2f} M, decoder "
              f"{decoder / 1e6:.2f} M; {shared} prompt tokens shared by all (computed once a "
              f"batch); {world} process(es) of {args.threads} thread(s)")

    # A resumed run draws on from a stream of its own: the seed alone would replay the batches of
    # the steps already taken.
    order = random.Random(args.seed if step == 0 else f"{args.seed}/{step}")
    log = open(os.path.join(args.out, "log.jsonl"), "a", encoding="utf-8") if lead else None
    train_started, out_of_time = time.time(), False
    while step < args.steps and not out_of_time:
        lr = learning_rate(step, args.steps, args.lr, args.warmup)
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad()
        sums = dict.fromkeys(STATISTICS, 0.0)
        # The shared prefix's forward runs once; the batch's losses backpropagate together.
        with tiny.mixed_precision(args.bf16):
            prefix = (shared, m.prefix_kv(examples[0].ids[:shared])) if shared else None
        batch_loss = 0.0
        batch = order.choices(examples, weights=weights, k=args.batch)
        # Every process draws the same drills from the same stream, then takes its share.
        batch += [CopyDrill(r, vocab, order) for r in order.choices(drill_rows, k=args.copy_drills)
                  ] if drill_rows else []
        for example in batch[rank::world]:
            with tiny.mixed_precision(args.bf16):
                out = example_loss(m, example, image_id, is_digit, prefix, aux, vocab)
            n = out["tokens"]
            # The training-only losses are weighted per answer token, so that --aux means what
            # position_probe.py's does.
            loss_to_train = out["answer"]
            for key, weight in (("position", args.aux), ("target", args.target)):
                if key in out:
                    loss_to_train = loss_to_train + weight * n * out[key]
            for key, weight in (("read", args.read), ("mask", args.mask)):
                if key in out:
                    loss_to_train = loss_to_train + weight * n * out[key][0]
            batch_loss = batch_loss + loss_to_train / args.batch
            if isinstance(example, CopyDrill):  # apart: the curves stay those of the data
                sums["drill_total"] += float(out["answer"])
                sums["drill_count"] += n
                continue
            add_statistics(sums, out)
        batch_loss.backward()
        if world > 1:
            all_reduce_gradients(parameters)
        torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        optimizer.step()
        step += 1
        # The statistics of the whole batch, and process 0's clock deciding for all.
        totals = all_reduce([sums[k] for k in STATISTICS] +
                            [lead and time.time() - train_started >= args.minutes * 60])
        sums, out_of_time = dict(zip(STATISTICS, totals)), totals[-1] > 0
        if not lead:
            continue
        losses.append(sums["total"] / sums["count"])
        entry = {"step": step, "loss": losses[-1], "lr": lr,
                 "seconds": round(time.time() - train_started, 1), **log_entry(sums, args.batch)}
        digit_loss = entry["digit_loss"]
        log.write(json.dumps(entry) + "\n")
        log.flush()
        if step % 10 == 0:
            print(f"step {step}: loss {losses[-1]:.4f} digits {digit_loss or 0:.4f} lr {lr:.2e} "
                  f"{time.time() - train_started:.0f} s", flush=True)
        if step % args.checkpoint_every == 0:
            save_checkpoint(checkpoint_path, m, optimizer, vocab, step, losses, heads)
    train_seconds = time.time() - train_started
    if world > 1:
        dist.destroy_process_group()
    if not lead:
        return
    flops = 3 * sum(sum(tiny.forward_flops(config, e.row["image_width"], e.row["image_height"],
                                           len(e.ids))) for e in examples) / len(examples)
    save_checkpoint(checkpoint_path, m, optimizer, vocab, step, losses, heads)
    plot_losses(losses, os.path.join(args.out, "loss.png"))

    m.eval()
    answers = [(e.row["answer"], greedy_answer(m, e, vocab)) for e in held]
    exact = sum(want == got for want, got in answers)
    hits = sum(answer_hits(e.row, got) for e, (_, got) in zip(held, answers))
    model_path, mmproj_path = export.export(m, vocab, os.path.join(args.out, "gguf"),
                                            args.export_type)
    record = {
        "data": [os.path.abspath(d) for d in args.data], "train_examples": len(examples),
        "held_out_examples": len(held_rows), "config": json.loads(config.to_json()),
        "parameters": {"tower": tower, "decoder": decoder}, "steps": step, "batch": args.batch,
        "lr": args.lr, "seed": args.seed, "threads": args.threads,
        "aux": args.aux, "aux_layer": args.aux_layer, "target": args.target, "init": args.init,
        "read": args.read, "read_layer": args.read_layer, "mask": args.mask,
        "mask_layer": args.mask_layer,
        "bf16": args.bf16, "processes": args.processes, "copy_drills": args.copy_drills,
        "train_seconds": round(train_seconds, 1), "total_seconds": round(time.time() - started, 1),
        "train_gflop_per_example": round(flops / 1e9, 2),
        "effective_gflops": round(flops * step * args.batch / max(train_seconds, 1e-9) / 1e9, 2),
        "first_loss": losses[0] if losses else None,
        "last_loss": float(np.mean(losses[-10:])) if losses else None,
        "held_out_exact": f"{exact}/{len(answers)}", "held_out_hits": f"{hits}/{len(answers)}",
        "held_out_samples": answers[:5],
        "files": {p: os.path.getsize(p) for p in (model_path, mmproj_path)},
    }
    with open(os.path.join(args.out, "run.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    print(json.dumps({k: record[k] for k in ("steps", "train_seconds", "effective_gflops",
                                             "first_loss", "last_loss",
                                             "held_out_exact", "held_out_hits", "files")}, indent=1))


if __name__ == "__main__":
    main()
