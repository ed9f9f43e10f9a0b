# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Small models with dynamic dims, exported by the project itself, for tests/models/dynamic/.

Two steps, in two environments (the product never imports torch or onnxruntime):

    /tmp/venv-torch/bin/python tools/export_dynamic_models.py export   # torch, onnx
    PYTHONPATH=/tmp/ortsite python tools/export_dynamic_models.py record   # onnxruntime

`export` writes NAME.onnx (torch.onnx.export, the TorchScript exporter at opset 17: the
Shape -> Gather -> Concat -> Reshape chains real exports carry) and NAME.npz with seeded
inputs at 2-3 shapes (`input:<shape#>:<name>`); `record` adds onnxruntime's outputs for
them (`output:<shape#>:<name>`, graph optimizations off). Models (seeded weights, a few
hundred KB at most):

- swin: patch embedding, window partition / reverse (reshape + permute), a shifted block
  (torch.roll) with its attention mask, relative position bias read from a table; fixed
  32x32 input, dynamic batch.
- segment: a small conv encoder and a head upsampled to the input's size
  (F.interpolate(size=x.shape[-2:])); dynamic batch, height and width.
- cnn: conv / batchnorm / relu / pool, a residual block, global pooling and a classifier;
  dynamic batch, height and width.
- encoder: token and position embeddings (positions from arange(sequence)), two
  pre-norm transformer layers; dynamic batch and sequence.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DIR = os.path.join(HERE, "..", "tests", "models", "dynamic")

# name -> list of {input name: shape} (the shapes recorded), first one used for export
SHAPES = {
    "swin": [{"x": (1, 3, 32, 32)}, {"x": (3, 3, 32, 32)}],
    "segment": [{"x": (1, 3, 32, 32)}, {"x": (2, 3, 48, 40)}, {"x": (1, 3, 24, 56)}],
    "cnn": [{"x": (1, 3, 32, 32)}, {"x": (2, 3, 40, 48)}, {"x": (3, 3, 24, 24)}],
    "encoder": [{"ids": (1, 8)}, {"ids": (2, 13)}, {"ids": (3, 32)}],
}
VOCAB = 50


def build(name: str):
    """(module, input names, output names, dynamic_axes) for one model."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    class WindowAttention(nn.Module):
        def __init__(self, dim, window, heads):
            super().__init__()
            self.window, self.heads = window, heads
            self.qkv = nn.Linear(dim, dim * 3)
            self.proj = nn.Linear(dim, dim)
            self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads) * 0.5)
            coords = torch.stack(
                torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")
            ).flatten(1)
            rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + window - 1
            self.register_buffer("index", rel[..., 0] * (2 * window - 1) + rel[..., 1])

        def forward(self, x, mask):
            b, n, c = x.shape
            qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            attn = (q * (c // self.heads) ** -0.5) @ k.transpose(-2, -1)
            bias = self.table[self.index.view(-1)].view(n, n, -1).permute(2, 0, 1)
            attn = attn + bias.unsqueeze(0)
            if mask is not None:
                windows = mask.shape[0]
                attn = attn.view(b // windows, windows, self.heads, n, n) + mask[None, :, None]
                attn = attn.view(-1, self.heads, n, n)
            attn = attn.softmax(-1)
            return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))

    class SwinBlock(nn.Module):
        def __init__(self, dim, res, window, shift, heads):
            super().__init__()
            self.res, self.window, self.shift = res, window, shift
            self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.attn = WindowAttention(dim, window, heads)
            self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
            if shift:
                img = torch.zeros(1, res, res, 1)
                spans = (slice(0, -window), slice(-window, -shift), slice(-shift, None))
                count = 0
                for h in spans:
                    for w in spans:
                        img[:, h, w, :] = count
                        count += 1
                wins = self.partition(img).view(-1, window * window)
                mask = wins[:, None, :] - wins[:, :, None]
                self.register_buffer("mask", mask.masked_fill(mask != 0, -100.0))
            else:
                self.mask = None

        def partition(self, x):
            b, h, w, c = x.shape
            ws = self.window
            x = x.view(b, h // ws, ws, w // ws, ws, c).permute(0, 1, 3, 2, 4, 5)
            return x.reshape(-1, ws, ws, c)

        def reverse(self, windows, h, w):
            ws = self.window
            b = windows.shape[0] // (h * w // ws // ws)
            x = windows.view(b, h // ws, w // ws, ws, ws, -1).permute(0, 1, 3, 2, 4, 5)
            return x.reshape(b, h, w, -1)

        def forward(self, x):
            b, _, c = x.shape
            h = w = self.res
            y = self.norm1(x).view(b, h, w, c)
            if self.shift:
                y = torch.roll(y, shifts=(-self.shift, -self.shift), dims=(1, 2))
            windows = self.partition(y).view(-1, self.window * self.window, c)
            windows = self.attn(windows, self.mask)
            y = self.reverse(windows.view(-1, self.window, self.window, c), h, w)
            if self.shift:
                y = torch.roll(y, shifts=(self.shift, self.shift), dims=(1, 2))
            x = x + y.reshape(b, h * w, c)
            return x + self.mlp(self.norm2(x))

    class Swin(nn.Module):
        def __init__(self, dim=32, patch=4, image=32, window=4, heads=2, classes=10):
            super().__init__()
            res = image // patch
            self.embed = nn.Conv2d(3, dim, patch, stride=patch)
            self.blocks = nn.Sequential(
                SwinBlock(dim, res, window, 0, heads),
                SwinBlock(dim, res, window, window // 2, heads),
            )
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, classes)

        def forward(self, x):
            x = self.embed(x).flatten(2).transpose(1, 2)
            x = self.norm(self.blocks(x))
            return self.head(x.mean(1))

    class Segment(nn.Module):
        def __init__(self, classes=5):
            super().__init__()
            self.encoder = nn.Sequential(
                nn.Conv2d(3, 16, 3, stride=2, padding=1),
                nn.BatchNorm2d(16),
                nn.ReLU(),
                nn.Conv2d(16, 32, 3, stride=2, padding=1),
                nn.BatchNorm2d(32),
                nn.ReLU(),
                nn.Conv2d(32, 32, 3, padding=1),
                nn.ReLU(),
            )
            self.head = nn.Conv2d(32, classes, 1)

        def forward(self, x):
            y = self.head(self.encoder(x))
            return F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)

    class Cnn(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2)
            )
            self.block = nn.Sequential(
                nn.Conv2d(16, 16, 3, padding=1),
                nn.BatchNorm2d(16),
                nn.ReLU(),
                nn.Conv2d(16, 16, 3, padding=1),
                nn.BatchNorm2d(16),
            )
            self.fc = nn.Linear(16, classes)

        def forward(self, x):
            x = self.stem(x)
            x = F.relu(x + self.block(x))
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    class EncoderLayer(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x):
            b, s, c = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            attn = torch.softmax(q @ k.transpose(-1, -2) / (c // self.heads) ** 0.5, -1)
            x = x + self.proj((attn @ v).transpose(1, 2).reshape(b, s, c))
            return x + self.mlp(self.norm2(x))

    class Encoder(nn.Module):
        def __init__(self, dim=32, heads=4, layers=2, max_len=64):
            super().__init__()
            self.tokens = nn.Embedding(VOCAB, dim)
            self.positions = nn.Embedding(max_len, dim)
            self.layers = nn.Sequential(*[EncoderLayer(dim, heads) for _ in range(layers)])
            self.norm = nn.LayerNorm(dim)

        def forward(self, ids):
            positions = torch.arange(ids.shape[1], device=ids.device)
            x = self.tokens(ids) + self.positions(positions)[None]
            return self.norm(self.layers(x))

    spatial = {0: "batch", 2: "height", 3: "width"}
    if name == "swin":
        return Swin(), ["x"], ["logits"], {"x": {0: "batch"}, "logits": {0: "batch"}}
    if name == "segment":
        return Segment(), ["x"], ["mask"], {"x": spatial, "mask": spatial}
    if name == "cnn":
        return Cnn(), ["x"], ["logits"], {"x": spatial, "logits": {0: "batch"}}
    if name == "encoder":
        axes = {0: "batch", 1: "sequence"}
        return Encoder(), ["ids"], ["hidden"], {"ids": axes, "hidden": axes}
    raise ValueError(f"unknown model {name!r}: accepted are {', '.join(SHAPES)}")


def make_inputs(name: str, shapes: dict, rng: np.random.Generator) -> dict:
    if name == "encoder":
        return {k: rng.integers(0, VOCAB, size=s).astype(np.int64) for k, s in shapes.items()}
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}


def export(names: list[str], folder: str) -> None:
    import torch

    for i, name in enumerate(names):
        torch.manual_seed(i)
        model, inputs, outputs, axes = build(name)
        with torch.no_grad():  # non-trivial batchnorm statistics and affine parameters
            for m in model.modules():
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.running_mean.normal_(0, 0.2)
                    m.running_var.uniform_(0.5, 1.5)
                    m.weight.normal_(1, 0.2)
                    m.bias.normal_(0, 0.2)
                elif isinstance(m, torch.nn.LayerNorm):
                    m.weight.normal_(1, 0.2)
                    m.bias.normal_(0, 0.2)
        model.eval()
        rng = np.random.default_rng(100 + i)
        feeds = [make_inputs(name, s, rng) for s in SHAPES[name]]
        args = tuple(torch.from_numpy(feeds[0][k]) for k in inputs)
        path = os.path.join(folder, name + ".onnx")
        torch.onnx.export(
            model,
            args,
            path,
            input_names=inputs,
            output_names=outputs,
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
        arrays = {f"input:{j}:{k}": v for j, feed in enumerate(feeds) for k, v in feed.items()}
        np.savez_compressed(os.path.join(folder, name + ".npz"), **arrays)
        print(f"{name}: {os.path.getsize(path)} bytes, shapes {SHAPES[name]}")


def record(names: list[str], folder: str) -> None:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    for name in names:
        session = ort.InferenceSession(
            os.path.join(folder, name + ".onnx"), options, providers=["CPUExecutionProvider"]
        )
        npz = os.path.join(folder, name + ".npz")
        arrays = {k: v for k, v in np.load(npz).items() if k.startswith("input:")}
        for j in range(len(SHAPES[name])):
            feed = {k.split(":", 2)[2]: v for k, v in arrays.items() if k.startswith(f"input:{j}:")}
            results = session.run(None, feed)
            for out, value in zip(session.get_outputs(), results):
                arrays[f"output:{j}:{out.name}"] = value
        np.savez_compressed(npz, **arrays)
        print(f"{name}: recorded {len(SHAPES[name])} shapes")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["export", "record"])
    parser.add_argument(
        "--models", default=",".join(SHAPES), help=f"comma-separated, from {', '.join(SHAPES)}"
    )
    parser.add_argument("--out", default=DEFAULT_DIR)
    args = parser.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    for n in names:
        if n not in SHAPES:
            parser.error(f"unknown model {n!r}: accepted are {', '.join(SHAPES)}")
    os.makedirs(args.out, exist_ok=True)
    (export if args.step == "export" else record)(names, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
