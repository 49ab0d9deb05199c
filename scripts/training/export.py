"""Exports a TinyVlm as the two GGUF files Iris and llama.cpp load: the decoder (`qwen2vl`, with
the tokenizer) and the vision projector (`clip`, `qwen2.5vl_merger`). Python writes a JSON
manifest and an f32 blob per file; tests/tools/pack_gguf.cpp (`iris_pack_gguf`, built with the
project) turns each into a GGUF with the project's GgufWriter. Tensor names and keys:
docs/qwen25vl.md section 2, docs/tiny-model.md.

    python3 export.py --checkpoint run/model.pt --out-dir run/gguf [--type f16]
"""

import argparse
import json
import os
import shutil
import subprocess

import numpy as np
import torch

import model as tiny
import tokenizer as tok

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_PACKER = os.path.join(REPO, "build", "dev", "tests", "tools", "iris_pack_gguf")


class Packer:
    """Collects one GGUF file's metadata and tensors."""

    def __init__(self, matrix_type):
        self.metadata, self.tensors, self.chunks, self.offset = [], [], [], 0
        self.matrix_type = matrix_type

    def key(self, key, kind, value):
        self.metadata.append([key, kind, value])

    def tensor(self, name, value, shape=None):
        """`value` a torch tensor in row-major order; `shape` in ggml order (reversed torch shape
        by default). 1-D tensors stay f32, as llama.cpp's converter keeps them."""
        array = value.detach().to(torch.float32).contiguous().numpy().reshape(-1)
        shape = shape or list(reversed(value.shape))
        kind = "f32" if len(shape) == 1 else self.matrix_type
        self.tensors.append({"name": name, "shape": [int(s) for s in shape], "type": kind,
                             "offset": self.offset})
        self.chunks.append(array)
        self.offset += array.size

    def write(self, packer, folder, stem, out_path):
        blob = stem + ".f32"
        np.concatenate(self.chunks).astype("<f4").tofile(os.path.join(folder, blob))
        manifest = os.path.join(folder, stem + ".json")
        with open(manifest, "w", encoding="utf-8") as f:
            json.dump({"data": blob, "metadata": self.metadata, "tensors": self.tensors}, f)
        subprocess.run([packer, manifest, out_path], check=True, stdout=subprocess.DEVNULL)


def decoder_file(m, tokenizer, matrix_type, name):
    c, d, p = m.c, m.decoder, Packer(matrix_type)
    a = "qwen2vl"
    p.key("general.architecture", "string", a)
    p.key("general.name", "string", name)
    p.key(a + ".block_count", "uint32", c.layers)
    p.key(a + ".context_length", "uint32", 8192)
    p.key(a + ".embedding_length", "uint32", c.hidden)
    p.key(a + ".feed_forward_length", "uint32", c.ffn)
    p.key(a + ".attention.head_count", "uint32", c.heads)
    p.key(a + ".attention.head_count_kv", "uint32", c.kv_heads)
    p.key(a + ".rope.freq_base", "float32", c.rope_base)
    p.key(a + ".attention.layer_norm_rms_epsilon", "float32", c.rms_eps)
    p.key(a + ".rope.dimension_sections", "array:int32", list(c.rope_sections))
    for entry in tokenizer.gguf_metadata(tok.CHAT_TEMPLATE):
        p.key(*entry)
    p.tensor("token_embd.weight", d.embed)
    p.tensor("output_norm.weight", d.out_norm)
    for i, l in enumerate(d.layers):
        b = f"blk.{i}."
        p.tensor(b + "attn_norm.weight", l.attn_norm)
        for g in ("q", "k", "v"):
            p.tensor(b + f"attn_{g}.weight", getattr(l, g + "_w"))
            p.tensor(b + f"attn_{g}.bias", getattr(l, g + "_b"))
        p.tensor(b + "attn_output.weight", l.o_w)
        p.tensor(b + "ffn_norm.weight", l.ffn_norm)
        p.tensor(b + "ffn_gate.weight", l.gate_w)
        p.tensor(b + "ffn_up.weight", l.up_w)
        p.tensor(b + "ffn_down.weight", l.down_w)
    return p


def mmproj_file(m, matrix_type, name):
    c, t, p = m.c, m.tower, Packer(matrix_type)
    p.key("general.architecture", "string", "clip")
    p.key("general.name", "string", name + " vision")
    p.key("clip.projector_type", "string", "qwen2.5vl_merger")
    p.key("clip.has_vision_encoder", "bool", True)
    p.key("clip.use_silu", "bool", True)
    p.key("clip.vision.embedding_length", "uint32", c.v_width)
    p.key("clip.vision.feed_forward_length", "uint32", c.v_ffn)
    p.key("clip.vision.block_count", "uint32", c.v_blocks)
    p.key("clip.vision.attention.head_count", "uint32", c.v_heads)
    p.key("clip.vision.attention.layer_norm_epsilon", "float32", c.v_eps)
    p.key("clip.vision.patch_size", "uint32", tiny.PATCH)
    p.key("clip.vision.image_size", "uint32", 560)
    p.key("clip.vision.projection_dim", "uint32", c.hidden)
    p.key("clip.vision.n_wa_pattern", "uint32", c.v_wa_pattern)
    p.key("clip.vision.window_size", "uint32", tiny.WINDOW)
    p.key("clip.vision.spatial_merge_size", "uint32", tiny.MERGE)
    p.key("clip.vision.image_mean", "array:float32", list(tiny.CLIP_MEAN))
    p.key("clip.vision.image_std", "array:float32", list(tiny.CLIP_STD))
    # The Conv3d kernel [C, 3, 2, 14, 14] as its two time slices {14, 14, 3, C}.
    p.tensor("v.patch_embd.weight", t.patch[:, :, 0])
    p.tensor("v.patch_embd.weight.1", t.patch[:, :, 1])
    for i, b in enumerate(t.blocks):
        v = f"v.blk.{i}."
        p.tensor(v + "ln1.weight", b.ln1)
        for g in ("q", "k", "v", "out"):
            p.tensor(v + f"attn_{g}.weight", getattr(b, g + "_w"))
            p.tensor(v + f"attn_{g}.bias", getattr(b, g + "_b"))
        p.tensor(v + "ln2.weight", b.ln2)
        for g in ("gate", "up", "down"):
            p.tensor(v + f"ffn_{g}.weight", getattr(b, g + "_w"))
            p.tensor(v + f"ffn_{g}.bias", getattr(b, g + "_b"))
    p.tensor("v.post_ln.weight", t.post_ln)
    p.tensor("mm.0.weight", t.mm0_w)
    p.tensor("mm.0.bias", t.mm0_b)
    p.tensor("mm.2.weight", t.mm2_w)
    p.tensor("mm.2.bias", t.mm2_b)
    return p


def export(m, tokenizer, out_dir, matrix_type="f16", name="iris-tiny-cua", packer=None):
    """Writes OUT_DIR/NAME.gguf and OUT_DIR/NAME.mmproj.gguf; returns both paths."""
    packer = packer or os.environ.get("IRIS_PACK_GGUF", DEFAULT_PACKER)
    if not os.path.exists(packer):
        raise SystemExit(f"{packer} not found: build the target iris_pack_gguf "
                         "(cmake --build build/dev --target iris_pack_gguf) or set IRIS_PACK_GGUF")
    os.makedirs(out_dir, exist_ok=True)
    work = os.path.join(out_dir, "manifests")
    os.makedirs(work, exist_ok=True)
    model_path = os.path.join(out_dir, name + ".gguf")
    mmproj_path = os.path.join(out_dir, name + ".mmproj.gguf")
    decoder_file(m, tokenizer, matrix_type, name).write(packer, work, "decoder", model_path)
    mmproj_file(m, matrix_type, name).write(packer, work, "mmproj", mmproj_path)
    shutil.rmtree(work)  # the manifests and blobs are only for the packer
    return model_path, mmproj_path


def load_checkpoint(path):
    state = torch.load(path, map_location="cpu")
    m = tiny.TinyVlm(tiny.Config.from_json(state["config"]))
    m.load_state_dict(state["model"])
    return m, tok.Tokenizer(state["merges"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--type", default="f16", choices=["f32", "f16", "bf16", "q8_0"])
    parser.add_argument("--name", default="iris-tiny-cua")
    args = parser.parse_args()
    m, tokenizer = load_checkpoint(args.checkpoint)
    for path in export(m, tokenizer, args.out_dir, args.type, args.name):
        print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
