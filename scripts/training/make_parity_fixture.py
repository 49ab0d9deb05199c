"""Writes the fixture of the trained-model parity test (tests/inference/trained/): a tiny
random-weight model exported through export.py (f32), a screenshot-like image, and what the torch
model (model.py, in float64) computes on them: the prompt's token ids, the tower's output, the
logits of the last prompt tokens and a greedy continuation.

    /usr/bin/python3 scripts/training/make_parity_fixture.py --out tests/inference/trained/data

Deterministic (fixed seeds); rerun it when model.py, tokenizer.py, prompt.py or export.py change.
"""

import argparse
import json
import os

import numpy as np
import torch
from PIL import Image

import corpus
import export
import model as tiny
import prompt
import tokenizer as tok

INSTRUCTIONS = ['Click the "Save" button.', "Type your name into the Email field.",
                'Click the second "Delete" button.', "Scroll down to find the Settings link.",
                "Press Enter.", "Open the File menu."]
ANSWERS = ["click(start_box='(124,56)')", "type(content='Ada Lovelace')",
           "scroll(start_box='(200,150)', direction='down')", "hotkey(key='enter')",
           "finished(content='done')"]


def fixture_config():
    return tiny.Config(vocab=512, hidden=64, layers=2, heads=4, kv_heads=2, ffn=128,
                       rope_sections=(2, 3, 3, 0), v_width=32, v_heads=2, v_blocks=2, v_ffn=64,
                       v_wa_pattern=2)


def fixture_image(width, height, seed):
    """Blocks of colour with a few bright rectangles: structured enough that windows differ."""
    rng = np.random.default_rng(seed)
    image = np.repeat(np.repeat(rng.integers(0, 256, (height // 14, width // 14, 3)), 14, 0), 14, 1)
    for _ in range(4):
        x, y = rng.integers(0, width - 40), rng.integers(0, height - 20)
        image[y:y + 20, x:x + 40] = rng.integers(0, 256, 3)
    return image.astype(np.uint8)


def greedy(m, ids, image_at, patches, grid, image_id, end_id, steps):
    out = []
    for _ in range(steps):
        logits = m(torch.tensor(ids + out), image_at, patches, grid, image_id)
        nxt = int(logits[-1].argmax())
        top2 = torch.topk(logits[-1], 2).values
        print(f"  greedy token {nxt}, margin {float(top2[0] - top2[1]):.3g}")
        if nxt == end_id:
            break
        out.append(nxt)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=6)  # greedy varies; margins >= 0.0013
    args = parser.parse_args()
    torch.manual_seed(0)
    examples = [{"instruction": i, "answer": a} for i in INSTRUCTIONS for a in ANSWERS]
    c = fixture_config()
    vocab = tok.Tokenizer(tok.train(corpus.documents(examples), c.vocab))
    c.vocab = len(vocab)
    m = tiny.TinyVlm(c)
    m.init_weights(seed=args.seed)
    with torch.no_grad():  # larger random weights than training's start, so logits spread
        for name, p in m.named_parameters():
            if p.dim() > 1:
                p.mul_(4.0)
            elif name.endswith("_b"):
                p.normal_(0.0, 0.1)
    os.makedirs(args.out, exist_ok=True)
    export.export(m, vocab, args.out, matrix_type="f32", name="parity")

    rgb = fixture_image(252, 196, seed=2)
    Image.fromarray(rgb).save(os.path.join(args.out, "image.png"))
    text = prompt.render(INSTRUCTIONS[2], [ANSWERS[0]])
    ids = vocab.encode(text)
    image_id = vocab.token_id("<|image_pad|>")
    image_at = ids.index(image_id)
    patches, grid = tiny.image_patches(rgb)
    m = m.double()
    with torch.no_grad():
        patches_t = torch.tensor(patches, dtype=torch.float64)
        tower = m.tower(patches_t, grid)
        logits = m(torch.tensor(ids), image_at, patches_t, grid, image_id)
        tokens = greedy(m, ids, image_at, patches_t, grid, image_id,
                        vocab.token_id("<|im_end|>"), 6)
    strings = INSTRUCTIONS + ANSWERS + [text, "(screenshot of step 3 omitted)",
                                        "Sélectionnez l'élément «Annuler» — 42 fois!\n\n  x_y",
                                        "I'M here, we'll see: it's 1280x800 px.\t<|im_end|>"]
    reference = {
        "command": "/usr/bin/python3 scripts/training/make_parity_fixture.py --out "
                   "tests/inference/trained/data",
        "model": "parity.gguf", "mmproj": "parity.mmproj.gguf", "image": "image.png",
        "prompt": text, "ids": ids, "image_at": image_at, "grid": list(grid),
        "tower": tower.flatten().tolist(),
        "last_logits": logits[-4:].flatten().tolist(),
        "greedy": tokens, "greedy_max_tokens": 6,
        "tokenizer_cases": [{"text": s, "ids": vocab.encode(s)} for s in strings],
        # The agent's prompt for steps 1, 2 and 4 of a task (prompt.py), which Iris's prompt
        # builder and chat template must write identically.
        "prompt_cases": [{"instruction": INSTRUCTIONS[k], "history": ANSWERS[:k],
                          "prompt": prompt.render(INSTRUCTIONS[k], ANSWERS[:k])}
                         for k in (0, 1, 3)],
    }
    with open(os.path.join(args.out, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(reference, f, ensure_ascii=False)
    print(f"{len(ids)} prompt tokens, image {grid}, vocab {len(vocab)}, greedy {tokens}")


if __name__ == "__main__":
    main()
