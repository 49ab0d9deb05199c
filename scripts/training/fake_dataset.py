"""A tiny stand-in for the generated dataset (agent/grounding's generator writes the real one), in
the same format, for smoke tests of train.py: coloured buttons with labels on a plain page, tasks
"Click the "X" button." answered in pixels of the image, some with a one-step history.

    /usr/bin/python3 scripts/training/fake_dataset.py --out /tmp/fake --pages 40

With --probe, each page has one coloured square and no text ("Click the square."): nothing to
read, so a model that fails it cannot tell where things are (docs/tiny-model.md, section 7).

Format (what train.py reads): DIR/examples.jsonl, one step a line: id, task, step, image
(relative path, already at the model's input size: sides multiples of 28), image_width,
image_height, screen_width, screen_height, instruction, history (earlier answers), answer, kind,
template, split; and DIR/dataset.json describing the set.
"""

import argparse
import json
import os
import random

from PIL import Image, ImageDraw

LABELS = ["Save", "Cancel", "Delete", "Open", "Send", "Search", "Next", "Back", "Login", "Help"]
COLOURS = [(52, 101, 164), (204, 0, 0), (78, 154, 6), (117, 80, 123), (196, 160, 0)]


def page(rng, width, height):
    background = (245, 245, 245) if rng.random() < 0.5 else (30, 30, 35)
    image = Image.new("RGB", (width, height), background)
    draw = ImageDraw.Draw(image)
    buttons = []
    for label in rng.sample(LABELS, 4):
        for _ in range(50):  # a place that overlaps no earlier button
            w, h = 16 + 7 * len(label), 22
            x, y = rng.randrange(4, width - w - 4), rng.randrange(4, height - h - 4)
            if all(x + w < bx or bx + bw < x or y + h < by or by + bh < y
                   for _, bx, by, bw, bh in buttons):
                break
        draw.rectangle([x, y, x + w, y + h], fill=rng.choice(COLOURS))
        draw.text((x + 8, y + 5), label, fill=(255, 255, 255))
        buttons.append((label, x, y, w, h))
    return image, buttons


def probe_page(rng, width, height):
    """One square of 20-40 pixels somewhere on a plain page; its box (x, y, w, h)."""
    background = (245, 245, 245) if rng.random() < 0.5 else (30, 30, 35)
    image = Image.new("RGB", (width, height), background)
    side = rng.randrange(20, 41)
    x, y = rng.randrange(2, width - side - 2), rng.randrange(2, height - side - 2)
    ImageDraw.Draw(image).rectangle([x, y, x + side, y + side], fill=rng.choice(COLOURS))
    return image, (x, y, side, side)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--width", type=int, default=448)
    parser.add_argument("--height", type=int, default=280)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--probe", action="store_true", help="one square a page, no text")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(os.path.join(args.out, "images"), exist_ok=True)
    rows = []
    for p in range(args.pages):
        if args.probe:
            image, (x, y, w, h) = probe_page(rng, args.width, args.height)
        else:
            image, buttons = page(rng, args.width, args.height)
            label, x, y, w, h = rng.choice(buttons)
        name = f"images/page{p:04d}.png"
        image.save(os.path.join(args.out, name))
        answer = f"click(start_box='({x + w // 2},{y + h // 2})')"
        history = ["hotkey(key='tab')"] if p % 3 == 0 and not args.probe else []
        rows.append({"id": f"fake{p:04d}", "task": f"fake{p:04d}", "step": len(history),
                     "image": name, "image_width": args.width, "image_height": args.height,
                     "screen_width": args.width, "screen_height": args.height,
                     "instruction": "Click the square." if args.probe
                     else f'Click the "{label}" button.', "history": history,
                     "answer": answer, "kind": "click", "target_box": [x, y, x + w, y + h],
                     "template": "probe" if args.probe else "fake",
                     "split": "test" if p % 10 == 9 else "train"})
    with open(os.path.join(args.out, "examples.jsonl"), "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    with open(os.path.join(args.out, "dataset.json"), "w", encoding="utf-8") as f:
        json.dump({"generator": "scripts/training/fake_dataset.py", "seed": args.seed,
                   "examples": len(rows)}, f, indent=1)
    print(f"{len(rows)} examples in {args.out}")


if __name__ == "__main__":
    main()
