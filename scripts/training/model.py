"""The tiny computer-use model in PyTorch: a Qwen2-VL decoder (GGUF arch `qwen2vl`, M-RoPE) and a
Qwen2.5-VL vision tower with its 2x2 patch merger (mmproj `qwen2.5vl_merger`), computing what
Iris's engine computes on the same weights (docs/qwen25vl.md sections 3 and 4; docs/tiny-model.md).

Weights are kept in the shapes the GGUF files need (export.py writes them unchanged), so the
forward pass below is also the specification the parity test (tests/inference/trained/) checks
Iris against.
"""

import dataclasses
import functools
import json
import math

import numpy as np
import torch
import torch.nn.functional as F

PATCH = 14
MERGE = 2
FACTOR = PATCH * MERGE  # 28: image sides are multiples of this
WINDOW = 112  # clip.vision.window_size: 4 merged units = 8 patches per side
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


@dataclasses.dataclass
class Config:
    vocab: int = 4096
    hidden: int = 256
    layers: int = 4
    heads: int = 4
    kv_heads: int = 2
    ffn: int = 768
    rope_base: float = 1000000.0
    rope_sections: tuple = (8, 12, 12, 0)  # pairs per (t, h, w, e); sum = head / 2
    rms_eps: float = 1e-6
    v_width: int = 128
    v_heads: int = 2
    v_blocks: int = 4
    v_ffn: int = 384
    v_wa_pattern: int = 2  # block b attends over the whole image when (b + 1) % this == 0
    v_eps: float = 1e-6
    max_pixels: int = 313600  # image budget (400 merged tokens): 1280x800 -> 700x420

    @property
    def head_dim(self):
        return self.hidden // self.heads

    def check(self):
        assert self.hidden % self.heads == 0 and self.heads % self.kv_heads == 0
        assert sum(self.rope_sections) == self.head_dim // 2, "sections must cover head/2 pairs"
        assert (self.v_width // self.v_heads) % 4 == 0, "vision head size must divide by 4"

    def to_json(self):
        return json.dumps(dataclasses.asdict(self), indent=1)

    @staticmethod
    def from_json(text):
        values = json.loads(text)
        if "rope_sections" in values:  # JSON has lists, the dataclass compares tuples
            values["rope_sections"] = tuple(values["rope_sections"])
        return Config(**values)


def rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rotate_neox(x, cos, sin):
    """Rotates dimension pairs (i, i + d/2) of x [..., tokens, d] by angles cos/sin [tokens, d/2]."""
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


# ---------------------------------------------------------------------------------------------
# Images: the patches Iris's preprocessing gives an image already at its model size.


def image_patches(rgb):
    """rgb: uint8 array [h, w, 3], h and w multiples of 28 (the dataset's images are resized
    already, so Iris's smart resize leaves them alone). Returns float32 [patches, 1176] in 2x2
    merge-window order, each row [channel][frame][py][px] with the two frames equal
    (docs/qwen25vl.md 4.2), and the patch grid (grid_h, grid_w)."""
    h, w, _ = rgb.shape
    assert h % FACTOR == 0 and w % FACTOR == 0, f"image {w}x{h} is not a multiple of {FACTOR}"
    x = rgb.astype(np.float32) / 255.0
    x = (x - np.array(CLIP_MEAN, np.float32)) / np.array(CLIP_STD, np.float32)
    gh, gw = h // PATCH, w // PATCH
    # [gh/2, 2, 14, gw/2, 2, 14, 3] -> [gh/2, gw/2, dy, dx, channel, py, px]
    x = x.reshape(gh // 2, 2, PATCH, gw // 2, 2, PATCH, 3).transpose(0, 3, 1, 4, 6, 2, 5)
    x = x.reshape(gh * gw, 3, 1, PATCH, PATCH)
    x = np.concatenate([x, x], axis=2)  # the two temporal frames of a still image
    return np.ascontiguousarray(x.reshape(gh * gw, 3 * 2 * PATCH * PATCH)), (gh, gw)


def vision_rope(grid, head_dim):
    """cos, sin [patches, head_dim/2] of the tower's 2-D rotary embedding, patches in
    merge-window order (docs/qwen25vl.md 4.4)."""
    gh, gw = grid
    pairs, quarter = head_dim // 2, head_dim // 4
    inverse = 10000.0 ** (-2.0 * np.arange(quarter, dtype=np.float64) / pairs)
    rows, cols = _patch_rows_cols(grid)
    angles = np.concatenate([rows[:, None] * inverse, cols[:, None] * inverse], axis=1)
    return (torch.tensor(np.cos(angles), dtype=torch.float32),
            torch.tensor(np.sin(angles), dtype=torch.float32))


def _patch_rows_cols(grid):
    gh, gw = grid
    y, x, dy, dx = np.meshgrid(np.arange(gh // 2), np.arange(gw // 2), np.arange(2), np.arange(2),
                               indexing="ij")
    return (2 * y + dy).reshape(-1).astype(np.float64), (2 * x + dx).reshape(-1).astype(np.float64)


@functools.lru_cache(maxsize=16)
def window_groups(grid):
    """The tower's 112-pixel windows as gather indices: (index int64 [windows, slots], valid bool
    [windows, slots], inverse int64 [patches]). Row w of `index` lists window w's patches, padded
    to the slots of a whole window with patch 0 where `valid` is False (windows on the right and
    bottom edges are partial); `inverse` puts the valid slots, read in row order, back into
    merge-window order. Attention within windows then costs windows x slots^2, not patches^2."""
    rows, cols = _patch_rows_cols(grid)
    per = WINDOW // PATCH
    window = (rows // per) * 10000 + cols // per
    ids, members = np.unique(window, return_inverse=True)
    slots = per * per
    index = np.zeros((len(ids), slots), dtype=np.int64)
    valid = np.zeros((len(ids), slots), dtype=bool)
    for w in range(len(ids)):
        patches = np.flatnonzero(members == w)  # ascending: merge-window order within the window
        index[w, :len(patches)] = patches
        valid[w, :len(patches)] = True
    order = index[valid]
    return torch.from_numpy(index), torch.from_numpy(valid), torch.from_numpy(np.argsort(order))


def windowed_attention(q, k, v, grid):
    """Softmax attention of q, k, v [heads, patches, d] (scaled q) within each window."""
    index, valid, inverse = window_groups(grid)
    qw, kw, vw = q[:, index], k[:, index], v[:, index]  # [heads, windows, slots, d]
    scores = (qw @ kw.transpose(-1, -2)).masked_fill(~valid[None, :, None, :], float("-inf"))
    o = torch.softmax(scores, dim=-1) @ vw
    return o[:, valid][:, inverse]


# ---------------------------------------------------------------------------------------------


def _param(*shape):
    return torch.nn.Parameter(torch.empty(*shape))


class VisionTower(torch.nn.Module):
    """Patch embedding, blocks (window or full attention), merger. Linear weights are [out, in],
    i.e. the GGUF tensor {in, out} in ggml order."""

    def __init__(self, c: Config):
        super().__init__()
        self.c = c
        w, f = c.v_width, c.v_ffn
        self.patch = _param(w, 3, 2, PATCH, PATCH)  # Conv3d kernel, time slices 0 and 1
        self.blocks = torch.nn.ModuleList()
        for _ in range(c.v_blocks):
            b = torch.nn.Module()
            b.ln1, b.ln2 = _param(w), _param(w)
            for name, (o, i) in {"q": (w, w), "k": (w, w), "v": (w, w), "out": (w, w),
                                 "gate": (f, w), "up": (f, w), "down": (w, f)}.items():
                setattr(b, name + "_w", _param(o, i))
                setattr(b, name + "_b", _param(o))
            self.blocks.append(b)
        self.post_ln = _param(w)
        self.mm0_w, self.mm0_b = _param(4 * w, 4 * w), _param(4 * w)
        self.mm2_w, self.mm2_b = _param(c.hidden, 4 * w), _param(c.hidden)

    def forward(self, patches, grid):
        c = self.c
        heads, d = c.v_heads, c.v_width // c.v_heads
        cos, sin = vision_rope(grid, d)
        x = patches @ self.patch.reshape(c.v_width, -1).t()
        n = x.shape[0]
        for index, b in enumerate(self.blocks):
            full = (index + 1) % c.v_wa_pattern == 0
            y = rms_norm(x, b.ln1, c.v_eps)
            q = (y @ b.q_w.t() + b.q_b).reshape(n, heads, d).transpose(0, 1)
            k = (y @ b.k_w.t() + b.k_b).reshape(n, heads, d).transpose(0, 1)
            v = (y @ b.v_w.t() + b.v_b).reshape(n, heads, d).transpose(0, 1)
            q, k = rotate_neox(q, cos, sin), rotate_neox(k, cos, sin)
            q = q / math.sqrt(d)
            if full:
                o = torch.softmax(q @ k.transpose(1, 2), dim=-1) @ v
            else:
                o = windowed_attention(q, k, v, grid)
            o = o.transpose(0, 1).reshape(n, c.v_width)
            x = x + o @ b.out_w.t() + b.out_b
            y = rms_norm(x, b.ln2, c.v_eps)
            g = F.silu(y @ b.gate_w.t() + b.gate_b) * (y @ b.up_w.t() + b.up_b)
            x = x + g @ b.down_w.t() + b.down_b
        y = rms_norm(x, self.post_ln, c.v_eps).reshape(n // 4, 4 * c.v_width)
        return gelu_tanh(y @ self.mm0_w.t() + self.mm0_b) @ self.mm2_w.t() + self.mm2_b


class Decoder(torch.nn.Module):
    """Qwen2 blocks with q/k/v biases, GQA, M-RoPE; tied output embedding."""

    def __init__(self, c: Config):
        super().__init__()
        self.c = c
        e, hd = c.hidden, c.head_dim
        self.embed = _param(c.vocab, e)
        self.layers = torch.nn.ModuleList()
        for _ in range(c.layers):
            l = torch.nn.Module()
            l.attn_norm, l.ffn_norm = _param(e), _param(e)
            l.q_w, l.q_b = _param(c.heads * hd, e), _param(c.heads * hd)
            l.k_w, l.k_b = _param(c.kv_heads * hd, e), _param(c.kv_heads * hd)
            l.v_w, l.v_b = _param(c.kv_heads * hd, e), _param(c.kv_heads * hd)
            l.o_w = _param(e, c.heads * hd)
            l.gate_w, l.up_w, l.down_w = _param(c.ffn, e), _param(c.ffn, e), _param(e, c.ffn)
            self.layers.append(l)
        self.out_norm = _param(e)

    def rope(self, positions):
        """positions: int64 [tokens, 4] (t, h, w, e) -> cos, sin [tokens, head/2]."""
        c = self.c
        pairs = c.head_dim // 2
        component = np.repeat(np.arange(4), c.rope_sections)
        inverse = torch.tensor(c.rope_base ** (-2.0 * np.arange(pairs) / c.head_dim),
                               dtype=torch.float64)
        p = positions[:, torch.tensor(component)].to(torch.float64)
        angles = p * inverse
        return torch.cos(angles).float(), torch.sin(angles).float()

    def forward(self, x, positions, logits_at=None, hidden_after=None, past=None,
                keep_kv=False):
        """x: input vectors [tokens, hidden] (token embeddings or image rows); causal. Logits of
        every token, or of the rows `logits_at` (an index tensor) only. With `hidden_after` (a
        layer index, or -1 for the decoder's input), returns (logits, that layer's output) for
        training-only auxiliary losses; with a tuple of layer indices, (logits, a tuple of their
        outputs).

        `past`: the keys and values (per layer, [kv_heads, P, head] after RoPE) of P tokens
        that come before `x`, which every row of `x` sees; `positions` are then x's own. With
        `keep_kv`, returns instead those of `x` for a later call's `past` (a prompt prefix that
        many examples share is computed once per batch; gradients flow through it to each)."""
        c = self.c
        n, hd, group = x.shape[0], c.head_dim, c.heads // c.kv_heads
        before = past[0][0].shape[1] if past else 0
        cos, sin = self.rope(positions)
        causal = torch.ones(n, before + n, dtype=torch.bool).tril(before)
        wanted = hidden_after if isinstance(hidden_after, tuple) else (hidden_after,)
        hidden, kept = {-1: x}, []  # -1: the decoder's input (token embeddings, image rows)
        for index, l in enumerate(self.layers):
            a = rms_norm(x, l.attn_norm, c.rms_eps)
            q = (a @ l.q_w.t() + l.q_b).reshape(n, c.heads, hd).transpose(0, 1)
            k = (a @ l.k_w.t() + l.k_b).reshape(n, c.kv_heads, hd).transpose(0, 1)
            v = (a @ l.v_w.t() + l.v_b).reshape(n, c.kv_heads, hd).transpose(0, 1)
            q, k = rotate_neox(q, cos, sin), rotate_neox(k, cos, sin)
            if keep_kv:
                kept.append((k, v))
            if past:
                k, v = torch.cat([past[index][0], k], dim=1), torch.cat([past[index][1], v], dim=1)
            k, v = k.repeat_interleave(group, 0), v.repeat_interleave(group, 0)
            scores = (q @ k.transpose(1, 2) / math.sqrt(hd)).masked_fill(~causal, float("-inf"))
            o = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1).reshape(n, c.heads * hd)
            x = x + o @ l.o_w.t()
            f = rms_norm(x, l.ffn_norm, c.rms_eps)
            x = x + (F.silu(f @ l.gate_w.t()) * (f @ l.up_w.t())) @ l.down_w.t()
            if index in wanted:
                hidden[index] = x
        if keep_kv:
            return kept
        if logits_at is not None:
            x = x[logits_at]
        logits = rms_norm(x, self.out_norm, c.rms_eps) @ self.embed.t()
        if hidden_after is None:
            return logits
        if isinstance(hidden_after, tuple):
            return logits, tuple(hidden[i] for i in hidden_after)
        return logits, hidden[hidden_after]


class TinyVlm(torch.nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        c.check()
        self.c = c
        self.tower = VisionTower(c)
        self.decoder = Decoder(c)

    def init_weights(self, seed):
        """Deterministic initialisation: norms 1, biases 0, matrices N(0, 0.02) (the embedding
        too; the tied output reads it)."""
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, p in self.named_parameters():
                last = name.rsplit(".", 1)[-1]
                if last in ("ln1", "ln2", "post_ln", "attn_norm", "ffn_norm", "out_norm"):
                    p.fill_(1.0)
                elif last.endswith("_b"):
                    p.zero_()
                else:
                    p.normal_(0.0, 0.02, generator=g)

    def forward(self, ids, image_at, patches, grid, image_token_id, logits_at=None,
                hidden_after=None, prefix=None):
        """Logits [tokens, vocab] for a prompt whose single `image_token_id` (at `image_at`, or
        None for text only) stands for the image's merged tokens, as Engine::splitAtPlaceholders
        expands it. `logits_at`: indices into `ids` whose logits are wanted (default all; the
        image's own rows are then included). `hidden_after`: as in Decoder.forward.

        `prefix`: (P, prefix_kv(ids[:P])) when the first P tokens (text, before the image) were
        computed already; logits_at still indexes `ids`, and the rows returned (logits and the
        hidden output) are those of the tokens from P on."""
        skip, past = prefix if prefix else (0, None)
        assert image_at is None or skip <= image_at
        embed = self.decoder.embed[ids[skip:]]
        if image_at is None:
            x = embed
            positions = text_positions(len(ids))[skip:]
            rows = logits_at - skip if logits_at is not None else None
        else:
            assert int(ids[image_at]) == image_token_id
            image = self.tower(patches, grid)
            at = image_at - skip
            x = torch.cat([embed[:at], image, embed[at + 1:]], dim=0)
            positions = prompt_positions(image_at, grid, len(ids) - image_at - 1)[skip:]
            rows = None
            if logits_at is not None:  # text index i after the image is row i + tokens - 1
                tokens = image.shape[0]
                rows = logits_at - skip + (logits_at > image_at).long() * (tokens - 1)
        return self.decoder(x, positions, rows, hidden_after, past)

    def prefix_kv(self, ids):
        """The decoder's keys and values of a text-only prompt prefix, for forward's `prefix`."""
        return self.decoder(self.decoder.embed[ids], text_positions(len(ids)), keep_kv=True)


def text_positions(count, start=0):
    p = torch.arange(start, start + count, dtype=torch.int64)
    return torch.stack([p, p, p, torch.zeros_like(p)], dim=1)


def prompt_positions(before, grid, after):
    """(t, h, w, e) per token of: `before` text tokens, the image, `after` text tokens
    (docs/qwen25vl.md 3.2)."""
    gh, gw = grid[0] // 2, grid[1] // 2
    r, c = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    r, c = r.reshape(-1), c.reshape(-1)
    s = torch.full_like(r, before)
    image = torch.stack([s, s + r, s + c, torch.zeros_like(r)], dim=1)
    return torch.cat([text_positions(before), image,
                      text_positions(after, before + max(gh, gw))], dim=0)


def merged_token_centres(grid):
    """Where each merged image token's centre lies, as (x, y) fractions of the image, in the
    order the decoder sees them [tokens, 2]: the target of the training-only position loss."""
    gh, gw = grid[0] // 2, grid[1] // 2
    r, c = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    return torch.stack([(c.reshape(-1) + 0.5) / gw, (r.reshape(-1) + 0.5) / gh], dim=1)


def text_rows(indices, image_at, grid, skip=0):
    """The decoder rows of prompt indices (into the ids with one image placeholder at
    `image_at`) that come after the image: the image's merged tokens take the placeholder's
    place. `skip`: leading tokens computed as a shared prefix, which have no rows."""
    tokens = (grid[0] // 2) * (grid[1] // 2)
    return indices - skip + (indices > image_at).long() * (tokens - 1)


def target_loss(hidden, rows, centre, head):
    """The training-only target loss (docs/tiny-model.md, section 6): mean squared error of
    `head`'s guess of the clicked control's centre (x, y fractions of the image) from `hidden`'s
    `rows`, the last decoder layer's output where the answer's coordinate digits are predicted.
    The digits' cross-entropy says little about a click three columns off; this says how far."""
    guess = head(rms(hidden[rows])).float()
    return F.mse_loss(guess, centre.expand_as(guess))


def position_loss(hidden, image_at, grid, head):
    """The training-only position loss (docs/tiny-model.md, section 7): mean squared error of
    `head`'s guess of each image token's centre from `hidden`, the rows of a decoder layer's
    output for a prompt whose image tokens start at row `image_at`."""
    centres = merged_token_centres(grid)
    guess = head(hidden[image_at:image_at + centres.shape[0]]).float()
    return F.mse_loss(guess, centres)


def rms(h):
    """h RMS-normalised with no weight: a training-only head's input, whose scale must not drift
    with the residual stream's."""
    h = h.float()
    return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)


def mask_loss(hidden, image_at, inside, head):
    """The training-only target-mask loss (docs/tiny-model.md, section 6): `head` says from
    `hidden`'s image rows (they start at row `image_at` and see the instruction before them)
    which merged tokens lie on the control a click aims at; `inside` [tokens] is 1 there. A
    binary cross-entropy balanced between the control's few tokens and the rest. Returns (loss,
    whether the head's most confident token lies on the control)."""
    logit = head(rms(hidden[image_at:image_at + inside.shape[0]])).squeeze(-1)
    bce = F.binary_cross_entropy_with_logits(logit, inside, reduction="none")
    loss = 0.5 * (bce[inside > 0].mean() + bce[inside == 0].mean())
    return loss, bool(inside[int(logit.argmax())] > 0)


def read_loss(hidden, image_at, cells, wanted, decoder):
    """The training-only reading loss (docs/tiny-model.md, section 6): `hidden`'s image rows
    `cells` (the merged tokens that show text; the image starts at row `image_at`) read out as the
    decoder's final layer reads its last one (out_norm, held fixed here, then the tied
    embedding), and their cross-entropy against `wanted` [cells, vocab], each row a distribution
    over the tokens of the words that token shows. The image rows come to look like the words'
    embeddings, which is what an instruction's tokens can then find by attention; and the
    embedding is trained too, since answers alone leave letters nearly alike (run I: 'e', 'o'
    and 'm' at cosine 0.93), which no image row could tell apart. Returns (loss, rows whose best
    token is one of the wanted ones)."""
    h = hidden[image_at + cells].float()
    logits = rms_norm(h, decoder.out_norm.detach(), decoder.c.rms_eps) @ decoder.embed.float().t()
    loss = -(wanted * F.log_softmax(logits, dim=-1)).sum(-1).mean()
    return loss, int((wanted.gather(1, logits.argmax(-1, keepdim=True)) > 0).sum())


def mixed_precision(enabled):
    """Training's forward passes with bfloat16 matrix products (torch.autocast on the CPU): 5 times
    as fast as float32 where the CPU has AVX512-BF16 (docs/tiny-model.md, section 6). The
    weights, their gradients, the optimizer and the losses stay float32 (the losses here and in
    train.py take .float() of what a product gave); evaluation and export do not use it."""
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=enabled)


def smart_resize(width, height, max_pixels, min_pixels=8 * 28 * 28):
    """The model-input size Iris gives a width x height screenshot (docs/qwen25vl.md 4.1)."""
    h = max(FACTOR, round(height / FACTOR) * FACTOR)
    w = max(FACTOR, round(width / FACTOR) * FACTOR)
    if h * w > max_pixels:
        b = math.sqrt(height * width / max_pixels)
        h = max(FACTOR, math.floor(height / b / FACTOR) * FACTOR)
        w = max(FACTOR, math.floor(width / b / FACTOR) * FACTOR)
    elif h * w < min_pixels:
        b = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * b / FACTOR) * FACTOR
        w = math.ceil(width * b / FACTOR) * FACTOR
    return w, h


def count_parameters(c: Config):
    m = TinyVlm(c)
    tower = sum(p.numel() for p in m.tower.parameters())
    decoder = sum(p.numel() for p in m.decoder.parameters())
    return tower, decoder


def forward_flops(c: Config, image_width, image_height, text_tokens):
    """Multiply-adds x 2 of one forward pass: the tower on a width x height image (already at its
    model size) and the decoder on `text_tokens` text tokens plus the image's tokens. Training
    costs about three times this (forward, and backward for activations and weights)."""
    patches = (image_width // PATCH) * (image_height // PATCH)
    w, f = c.v_width, c.v_ffn
    full_blocks = sum(1 for b in range(c.v_blocks) if (b + 1) % c.v_wa_pattern == 0)
    window_patches = (WINDOW // PATCH) ** 2
    tower = 2 * patches * 3 * 2 * PATCH * PATCH * w
    tower += c.v_blocks * 2 * patches * (4 * w * w + 3 * w * f)
    tower += full_blocks * 4 * patches * patches * w
    tower += (c.v_blocks - full_blocks) * 4 * patches * window_patches * w
    tower += 2 * (patches // 4) * (16 * w * w + 4 * w * c.hidden)
    n, e, hd = text_tokens + patches // 4, c.hidden, c.head_dim
    per_layer = 2 * e * (c.heads * hd) * 2 + 2 * e * (c.kv_heads * hd) * 2 + 3 * 2 * e * c.ffn
    decoder = c.layers * (n * per_layer + 2 * n * n * c.heads * hd)  # causal: half of 4 n^2 d
    return tower, decoder
