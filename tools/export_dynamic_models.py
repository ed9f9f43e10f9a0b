# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Small models with dynamic dims, exported by the project itself, for tests/models/dynamic/.

Two steps, in two environments (the product never imports torch or onnxruntime):

    /tmp/venv-torch/bin/python tools/export_dynamic_models.py export   # torch, onnx
    PYTHONPATH=/tmp/ortsite python tools/export_dynamic_models.py record   # onnxruntime

`export` writes NAME.onnx (torch.onnx.export, the TorchScript exporter at opset 17: the
Shape -> Gather -> Concat -> Reshape chains real exports carry; if_gate is torch.jit.script-ed
first, so its data-dependent branch becomes an If) and NAME.npz with seeded inputs at 2-3
shapes (`input:<case#>:<name>`; seeds from the model's place in SHAPES, so exporting a subset
gives the same files); `record` adds onnxruntime's outputs for them (`output:<case#>:<name>`,
graph optimizations off) and, for the streaming models (STREAM_STATE), first overwrites each
call's state inputs with the state outputs onnxruntime returned for the call before. Models
(seeded weights, well under 1 MB each):

- swin: patch embedding, window partition / reverse (reshape + permute), a shifted block
  (torch.roll) with its attention mask, relative position bias read from a table; fixed
  32x32 input, dynamic batch.
- segment: a small conv encoder and a head upsampled to the input's size
  (F.interpolate(size=x.shape[-2:])); dynamic batch, height and width.
- cnn: conv / batchnorm / relu / pool, a residual block, global pooling and a classifier;
  dynamic batch, height and width.
- encoder: token and position embeddings (positions from arange(sequence)), two
  pre-norm transformer layers; dynamic batch and sequence.
- crnn: a CRNN text-line recognizer over [N, 1, 32, W]: conv / batchnorm / relu / pool down
  to height 1 (squeezed), a 2-layer bidirectional LSTM (hidden 48) over the W/4 steps, a
  linear classifier and log_softmax per step ([T, N, 20], CTC-style); dynamic batch, width.
- if_gate: a conv stem, then `If mean(x**2) > 1.0` (an If in the main graph) picks a "loud"
  sub-network (strided conv, relu, conv, tanh, + 1) or a "quiet" one (1x1 conv, sigmoid,
  average pool, conv, * 2), a pooled classifier; dynamic batch. Inputs scaled to energies
  far on either side of the threshold; batches 1 and 2 are recorded on both branches.
- vad_stream: a Silero-style voice activity detector, one 512-sample chunk per call: reflect
  pad, a Hann-windowed DFT as a fixed Conv1d, log magnitude, a conv encoder, a 2-layer LSTM
  (hidden 64) whose state h / c [2, 1, 64] is an input and an output, sigmoid, mean over
  frames ([1, 1]). Four consecutive calls of one stream (noise, then voiced harmonics), the
  first from a zero state.
- einsum_attn: a MaxViT-style block after a patch-embedding conv (32x32 -> 8x8): MBConv
  (expand, depthwise, squeeze-excite, project), block attention over 4x4 windows and grid
  attention over a 4x4 grid, both multi-head attention written with torch.einsum
  (bhid,bhjd->bhij, softmax, bhij,bhjd->bhid), each with an MLP; dynamic batch.
- instnorm_feat: wav2vec2's conv feature encoder over raw audio [N, 1, T]: conv (kernel 10,
  stride 5), GroupNorm with a group per channel (exported as InstanceNormalization between
  Reshapes, then the affine Mul / Add), GELU, four more strided convs with GELU, then the
  feature projection (LayerNorm, Linear); dynamic batch and samples.

The second batch (their modules in tools/more_dynamic_models.py):

- gru_tagger: token embedding, a 2-layer bidirectional GRU (hidden 32, batch_first), a
  linear per step ([N, S, 12]); dynamic batch and sequence (int64 ids).
- unet: a small U-Net: conv / batchnorm / relu at full size, a strided conv stage (H/2), a
  max-pooled bottleneck (H/4), two ConvTranspose2d (stride 2) upsamplings each concatenated
  with the encoder's map at its scale, a 1x1 head; dynamic batch, height, width (multiples
  of 4).
- mobilenet_block: a MobileNetV3-style stem (strided conv, hardswish), three inverted
  residual blocks (1x1 expand, depthwise 3x3 / 5x5, squeeze-excite with hardsigmoid, 1x1
  project; relu or hardswish; a strided one, two with the residual), a 1x1 conv, global
  pooling, a hardswish classifier; dynamic batch, height, width.
- gpt_kv: a tiny causal decoder (2 layers, dim 32, 2 heads) with the key / value cache as
  inputs past_key / past_value [2, 1, 2, past, 16] and outputs present_key / present_value
  (past + 1): positions and the causal mask (Range, Greater, Where) from the past's length.
  A stream of four one-token calls, the first from an empty past (length 0), each next one
  fed the present the call before returned (so every call has new shapes).
- vit_tiny: a patch-embedding conv (32x32 -> 8x8), a class token expanded to the batch and
  concatenated, a learned position embedding, 2 pre-norm nn.TransformerEncoderLayer layers
  (nn.MultiheadAttention's exported attention), a classifier on the class token; dynamic
  batch.
- rnn_denoiser: audio [N, 1, T] (T a multiple of 8): a strided Conv1d front end, an nn.RNN
  (tanh, 1 layer) over the frames, a ConvTranspose1d back to samples, subtracted from the
  input; dynamic batch and samples.
- tcn_classifier: a temporal conv net over [N, 8, T]: three dilated (1, 2, 4) causal Conv1d
  (left padding by F.pad), LayerNorm over channels between permutes, relu, residuals (a 1x1
  conv where the channels change), adaptive average pooling, a linear; dynamic batch, time.
- detector_nms: a conv detection head over a fixed [1, 3, 64, 64] image: a box and a score
  per 8x8 cell (boxes [1, 64, 4] around the cell centres, sigmoid scores [1, 1, 64]),
  torchvision.ops.nms (NonMaxSuppression, IoU 0.4), the kept boxes and scores gathered (a
  count decided by the data: three images recorded, each keeping a different count).
- espcn_sr: ESPCN super-resolution over [N, 1, H, W]: three convs (tanh between) to 9
  channels, PixelShuffle x3 (DepthToSpace, CRD), sigmoid; dynamic batch, height, width.

The third batch (their modules and token / image / point inputs in
tools/more_dynamic_models_2.py; the image models' convs He-initialized, their images with a
contrast and brightness per image, so that a batch's logits differ):

- resnet_tiny: a ResNet-style stem (conv, batchnorm, relu, max pool 3 / 2) and two stages of
  bottlenecks (1x1, 3x3, 1x1 with batchnorm; the first of stage two strided, its shortcut a
  strided 1x1 conv + batchnorm), global average pooling, a linear; dynamic batch, height,
  width.
- densenet_tiny: two dense blocks of three BN-ReLU-Conv1x1-BN-ReLU-Conv3x3 layers (growth 8)
  each concatenating its features to its input, a transition between them (BN-ReLU-Conv1x1
  halving the channels, average pool 2), global pooling, a linear; dynamic batch, height,
  width.
- convnext_tiny_block: a patchify stem (4x4 conv, stride 4) with LayerNorm over channels
  (permute, LayerNorm, permute back), ConvNeXt blocks (depthwise 7x7, LayerNorm channels
  last, Linear 4x, GELU, Linear, layer scale, residual), a downsampling layer (LayerNorm,
  2x2 conv stride 2), mean pooling, LayerNorm, a linear; dynamic batch, height, width.
- bert_tiny: a BERT-style encoder over input_ids / token_type_ids / attention_mask (int64;
  rows padded at the end, two sentences split at random): word + position (arange) + token
  type embeddings, LayerNorm, two post-norm layers whose attention scores get the extended
  mask (1 - mask) * -10000, a pooler (tanh of a linear of the first token); outputs hidden
  [N, S, 32] and pooled [N, 32]; dynamic batch, sequence.
- gpt2_tiny: a GPT-2-style decoder without cache: learned positions, pre-norm blocks, the
  causal mask a [:s, :s] slice of a tril buffer (Where), GELU with the tanh approximation,
  the LM head tied to the token embedding; dynamic batch, sequence.
- conformer_block: a Conformer block over [N, T, 32]: half feed-forward (SiLU), multi-head
  self-attention, the conv module (pointwise Conv1d, GLU, depthwise Conv1d kernel 15,
  BatchNorm1d, SiLU, pointwise Conv1d), half feed-forward, LayerNorm; dynamic batch, time.
- pointnet: a PointNet classifier over [N, 3, P] points: a T-Net's predicted 3x3 transform
  (+ identity) applied by bmm, a shared Conv1d MLP (3 -> 32 -> 64 -> 128, batchnorm, relu),
  max over points, an MLP classifier with BatchNorm1d; dynamic batch, points.
- yolo_head: a tiny YOLO-style detector: strided conv / batchnorm / SiLU to strides 8 and
  16, a neck (nearest upsampling x2 of stride 16, concatenated with stride 8, a conv), a 1x1
  head per scale with 2 anchors decoded on a grid from arange / meshgrid of its feature
  size (sigmoid; xy = (2 s - 0.5 + grid) * stride, wh = (2 s)^2 * anchor) into
  [N, A, 5 + 3]; dynamic batch, height, width (multiples of 16).
- efficientnet_block: a strided conv stem with SiLU, two fused-MBConvs (EfficientNetV2: a
  3x3 expand conv, a 1x1 project; one residual, one strided), two MBConvs (1x1 expand,
  depthwise 5x5 / 3x3, squeeze-excite with SiLU and sigmoid, 1x1 project; stochastic depth
  off), a 1x1 conv, global pooling, a linear; dynamic batch, height, width.
- seq2seq_gru: a GRU encoder over src ids [N, S] and a GRU decoder run for 6 steps on the
  teacher-forced tgt ids [N, 6], each step fed the previous attention context and attending
  (dot product, softmax) over the encoder's outputs, a linear to the vocabulary per step
  ([N, 6, 60]); dynamic batch and source length.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from more_dynamic_models import VOCAB, build_more, gpt_state_shape
from more_dynamic_models_2 import SEQ2SEQ_STEPS, build_more_2, make_inputs_2

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DIR = os.path.join(HERE, "..", "tests", "models", "dynamic")

VAD_CHUNK = 512
VAD_STATE = (2, 1, 64)  # (layers, batch, hidden) of the 2-layer LSTM
# name -> list of {input name: shape} (the shapes recorded), first one used for export
SHAPES = {
    "swin": [{"x": (1, 3, 32, 32)}, {"x": (3, 3, 32, 32)}],
    "segment": [{"x": (1, 3, 32, 32)}, {"x": (2, 3, 48, 40)}, {"x": (1, 3, 24, 56)}],
    "cnn": [{"x": (1, 3, 32, 32)}, {"x": (2, 3, 40, 48)}, {"x": (3, 3, 24, 24)}],
    "encoder": [{"ids": (1, 8)}, {"ids": (2, 13)}, {"ids": (3, 32)}],
    "crnn": [{"image": (1, 1, 32, 64)}, {"image": (2, 1, 32, 100)}, {"image": (3, 1, 32, 40)}],
    # batch 1 and 2 each take both branches (one plan per shape must serve either)
    "if_gate": [{"x": (b, 3, 24, 24)} for b in (1, 2, 3, 2, 1)],
    # one stream: call k+1 gets the state call k returned (`record` chains them)
    "vad_stream": [{"audio": (1, VAD_CHUNK), "h": VAD_STATE, "c": VAD_STATE}] * 4,
    "einsum_attn": [{"x": (1, 3, 32, 32)}, {"x": (2, 3, 32, 32)}, {"x": (4, 3, 32, 32)}],
    "instnorm_feat": [{"audio": (1, 1, 1600)}, {"audio": (2, 1, 2000)}, {"audio": (3, 1, 1203)}],
    # the second batch (tools/more_dynamic_models.py)
    "gru_tagger": [{"ids": (1, 7)}, {"ids": (2, 12)}, {"ids": (3, 5)}],
    "unet": [{"x": (1, 3, 32, 32)}, {"x": (2, 3, 24, 40)}, {"x": (1, 3, 16, 48)}],
    "mobilenet_block": [{"x": (1, 3, 32, 32)}, {"x": (2, 3, 40, 48)}, {"x": (3, 3, 24, 28)}],
    # one stream, one token per call: the past grows by one each call, from empty
    "gpt_kv": [
        {"ids": (1, 1), "past_key": gpt_state_shape(p), "past_value": gpt_state_shape(p)}
        for p in range(4)
    ],
    "vit_tiny": [{"x": (1, 3, 32, 32)}, {"x": (2, 3, 32, 32)}, {"x": (3, 3, 32, 32)}],
    "rnn_denoiser": [{"audio": (1, 1, 640)}, {"audio": (2, 1, 1000)}, {"audio": (3, 1, 1600)}],
    "tcn_classifier": [{"x": (1, 8, 50)}, {"x": (2, 8, 128)}, {"x": (3, 8, 17)}],
    # fixed input; the number of boxes kept differs per image
    "detector_nms": [{"image": (1, 3, 64, 64)}] * 3,
    "espcn_sr": [{"x": (1, 1, 16, 16)}, {"x": (2, 1, 20, 12)}, {"x": (1, 1, 9, 31)}],
    # the third batch (tools/more_dynamic_models_2.py)
    "resnet_tiny": [{"x": (1, 3, 32, 32)}, {"x": (2, 3, 40, 24)}, {"x": (3, 3, 17, 29)}],
    "densenet_tiny": [{"x": (1, 3, 32, 32)}, {"x": (2, 3, 24, 40)}, {"x": (3, 3, 19, 27)}],
    "convnext_tiny_block": [{"x": (1, 3, 32, 32)}, {"x": (2, 3, 48, 40)}, {"x": (1, 3, 24, 64)}],
    "bert_tiny": [
        {"input_ids": s, "token_type_ids": s, "attention_mask": s}
        for s in ((1, 8), (2, 13), (3, 20))
    ],
    "gpt2_tiny": [{"ids": (1, 7)}, {"ids": (2, 16)}, {"ids": (3, 30)}],
    "conformer_block": [
        {"features": (1, 20, 32)},
        {"features": (2, 37, 32)},
        {"features": (3, 9, 32)},
    ],
    "pointnet": [{"points": (1, 3, 100)}, {"points": (2, 3, 257)}, {"points": (4, 3, 64)}],
    # height and width multiples of 16 (the coarser output's stride)
    "yolo_head": [{"x": (1, 3, 32, 32)}, {"x": (2, 3, 48, 64)}, {"x": (1, 3, 64, 48)}],
    "efficientnet_block": [{"x": (1, 3, 32, 32)}, {"x": (2, 3, 40, 48)}, {"x": (3, 3, 24, 28)}],
    "seq2seq_gru": [
        {"src": (n, s), "tgt": (n, SEQ2SEQ_STEPS)} for n, s in ((1, 9), (2, 14), (4, 5))
    ],
}
# the recorded case traced by `export` where it is not the first (gpt_kv: a non-empty past)
EXPORT_CASE = {"gpt_kv": 1}
# if_gate: the "loud" branch runs when mean(x**2) > IF_GATE_THRESHOLD; the recorded inputs
# are standard normal times these gains (energies about 4, 0.25, 2.6, 3.2, 0.36: loud, quiet,
# loud, loud, quiet, all far from the threshold)
IF_GATE_THRESHOLD = 1.0
IF_GATE_GAINS = [2.0, 0.5, 1.6, 1.8, 0.6]
# streaming models: {state input: the output that feeds it on the next call}
STREAM_STATE = {
    "vad_stream": {"h": "h_out", "c": "c_out"},
    "gpt_kv": {"past_key": "present_key", "past_value": "present_value"},
}


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

    class Crnn(nn.Module):
        """Text-line recognizer: conv stack to height 1, 2-layer BiLSTM over width, CTC logits."""

        def __init__(self, classes=20, hidden=48):
            super().__init__()

            def block(cin, cout, pool):
                return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU()] + (
                    [nn.MaxPool2d(pool)] if pool else []
                )

            self.features = nn.Sequential(
                *block(1, 16, 2),  # 16 x W/2
                *block(16, 32, 2),  # 8 x W/4
                *block(32, 48, None),
                *block(48, 48, (2, 1)),  # 4 x W/4
                nn.Conv2d(48, 64, (4, 1)),  # 1 x W/4
                nn.BatchNorm2d(64),
                nn.ReLU(),
            )
            self.rnn = nn.LSTM(64, hidden, num_layers=2, bidirectional=True)
            self.fc = nn.Linear(2 * hidden, classes)

        def forward(self, image):
            f = self.features(image).squeeze(2).permute(2, 0, 1)  # [T, N, C]
            y, _ = self.rnn(f)
            return self.fc(y).log_softmax(-1)  # [T, N, classes]

    class IfGate(nn.Module):
        """Scripted: the input's energy picks one of two sub-networks (an If in the main graph)."""

        def __init__(self, classes=10):
            super().__init__()
            self.threshold = IF_GATE_THRESHOLD
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU())
            self.loud = nn.Sequential(
                nn.Conv2d(16, 32, 3, stride=2, padding=1),
                nn.ReLU(),
                nn.Conv2d(32, 32, 3, padding=1),
                nn.Tanh(),
            )
            self.quiet = nn.Sequential(
                nn.Conv2d(16, 32, 1), nn.Sigmoid(), nn.AvgPool2d(2), nn.Conv2d(32, 32, 3, padding=1)
            )
            self.fc = nn.Linear(32, classes)

        def forward(self, x):
            h = self.stem(x)
            if bool((x * x).mean() > self.threshold):
                y = self.loud(h) + 1.0
            else:
                y = self.quiet(h) * 2.0
            return self.fc(y.mean([2, 3]))

    class VadStream(nn.Module):
        """Streaming VAD (Silero-like): reflect pad, a Hann-windowed DFT as a fixed Conv1d, log
        magnitude, a conv encoder, a 2-layer LSTM whose state goes in and out, a sigmoid."""

        def __init__(self, window=128, hop=64):
            super().__init__()
            self.pad = window // 2 - hop // 2
            bins = window // 2 + 1
            t = torch.arange(window, dtype=torch.float64)
            f = torch.arange(bins, dtype=torch.float64)[:, None]
            hann = 0.5 - 0.5 * torch.cos(2 * torch.pi * t / window)
            basis = torch.cat(
                [
                    torch.cos(2 * torch.pi * f * t / window),
                    -torch.sin(2 * torch.pi * f * t / window),
                ]
            )
            self.register_buffer("basis", (basis * hann).float()[:, None, :])  # [2*bins, 1, window]
            self.hop, self.bins = hop, bins
            self.encoder = nn.Sequential(
                nn.Conv1d(bins, 64, 3, padding=1),
                nn.ReLU(),
                nn.Conv1d(64, 64, 3, stride=2, padding=1),
                nn.ReLU(),
            )
            self.rnn = nn.LSTM(64, VAD_STATE[2], num_layers=VAD_STATE[0], batch_first=True)
            self.out = nn.Linear(VAD_STATE[2], 1)

        def forward(self, audio, h, c):
            x = F.pad(audio.unsqueeze(1), (self.pad, self.pad), mode="reflect")
            spec = F.conv1d(x, self.basis, stride=self.hop)
            re, im = spec[:, : self.bins], spec[:, self.bins :]
            mag = torch.log(torch.sqrt(re * re + im * im) + 1e-3)
            y, (h, c) = self.rnn(self.encoder(mag).transpose(1, 2), (h, c))
            return torch.sigmoid(self.out(y)).mean(1), h, c  # [1, 1]

    class EinsumAttention(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads, self.scale = heads, (dim // heads) ** -0.5
            self.norm = nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

        def forward(self, x):  # [B, N, C] -> residual
            b, n, c = x.shape
            qkv = self.qkv(self.norm(x)).view(b, n, 3, self.heads, c // self.heads)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)
            attn = torch.einsum("bhid,bhjd->bhij", q * self.scale, k).softmax(-1)
            out = torch.einsum("bhij,bhjd->bhid", attn, v)
            return x + self.proj(out.transpose(1, 2).reshape(b, n, c))

    class MaxVitBlock(nn.Module):
        """MBConv (expand, depthwise, squeeze-excite, project), block attention over p x p
        windows, grid attention over a g x g grid; each attention followed by an MLP."""

        def __init__(self, dim, heads, part):
            super().__init__()
            self.part = part
            self.mbconv = nn.Sequential(
                nn.Conv2d(dim, 2 * dim, 1),
                nn.BatchNorm2d(2 * dim),
                nn.GELU(),
                nn.Conv2d(2 * dim, 2 * dim, 3, padding=1, groups=2 * dim),
                nn.BatchNorm2d(2 * dim),
                nn.GELU(),
            )
            self.se = nn.Sequential(
                nn.AdaptiveAvgPool2d(1),
                nn.Conv2d(2 * dim, dim // 4, 1),
                nn.SiLU(),
                nn.Conv2d(dim // 4, 2 * dim, 1),
                nn.Sigmoid(),
            )
            self.project = nn.Conv2d(2 * dim, dim, 1)
            self.block_attn, self.grid_attn = (
                EinsumAttention(dim, heads),
                EinsumAttention(dim, heads),
            )
            self.mlps = nn.ModuleList(
                nn.Sequential(
                    nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim)
                )
                for _ in range(2)
            )

        def forward(self, x):  # [B, C, H, W]
            y = self.mbconv(x)
            x = x + self.project(y * self.se(y))
            b, c, h, w = x.shape
            p = self.part
            # block: windows of p x p neighbours
            t = x.view(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1).reshape(-1, p * p, c)
            t = self.block_attn(t)
            t = t + self.mlps[0](t)
            x = t.view(b, h // p, w // p, p, p, c).permute(0, 5, 1, 3, 2, 4).reshape(b, c, h, w)
            # grid: p x p tokens strided by h/p, w/p across the whole image
            t = x.view(b, c, p, h // p, p, w // p).permute(0, 3, 5, 2, 4, 1).reshape(-1, p * p, c)
            t = self.grid_attn(t)
            t = t + self.mlps[1](t)
            return t.view(b, h // p, w // p, p, p, c).permute(0, 5, 3, 1, 4, 2).reshape(b, c, h, w)

    class EinsumAttn(nn.Module):
        def __init__(self, dim=32, heads=2, classes=10):
            super().__init__()
            self.embed = nn.Conv2d(3, dim, 4, stride=4)  # 32x32 -> 8x8 patches
            self.block = MaxVitBlock(dim, heads, part=4)
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, classes)

        def forward(self, x):
            x = self.block(self.embed(x))
            return self.head(self.norm(x.mean([2, 3])))

    class FeatureExtractor(nn.Module):
        """wav2vec2's conv feature encoder ("group" norm: GroupNorm with a group per channel
        after the first conv), GELU, then its feature projection (LayerNorm, Linear)."""

        def __init__(self, dim=64, out=48):
            super().__init__()
            self.conv0 = nn.Conv1d(1, dim, 10, stride=5, bias=False)
            self.norm0 = nn.GroupNorm(dim, dim)
            self.convs = nn.ModuleList(
                nn.Conv1d(dim, dim, k, stride=s, bias=False) for k, s in [(3, 2)] * 3 + [(2, 2)]
            )
            self.proj_norm = nn.LayerNorm(dim)
            self.proj = nn.Linear(dim, out)

        def forward(self, audio):
            x = F.gelu(self.norm0(self.conv0(audio)))
            for conv in self.convs:
                x = F.gelu(conv(x))
            return self.proj(self.proj_norm(x.transpose(1, 2)))  # [N, frames, out]

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
    if name == "crnn":
        axes = {"image": {0: "batch", 3: "width"}, "logits": {0: "time", 1: "batch"}}
        return Crnn(), ["image"], ["logits"], axes
    if name == "if_gate":
        return IfGate(), ["x"], ["logits"], {"x": {0: "batch"}, "logits": {0: "batch"}}
    if name == "vad_stream":
        return VadStream(), ["audio", "h", "c"], ["prob", "h_out", "c_out"], {}
    if name == "einsum_attn":
        return EinsumAttn(), ["x"], ["logits"], {"x": {0: "batch"}, "logits": {0: "batch"}}
    if name == "instnorm_feat":
        axes = {"audio": {0: "batch", 2: "samples"}, "features": {0: "batch", 1: "frames"}}
        return FeatureExtractor(), ["audio"], ["features"], axes
    more = build_more(name)
    if more is None:
        more = build_more_2(name)
    if more is not None:
        return more
    raise ValueError(f"unknown model {name!r}: accepted are {', '.join(SHAPES)}")


def make_inputs(name: str, shapes: dict, rng: np.random.Generator, case: int) -> dict:
    if name in ("encoder", "gru_tagger"):
        return {k: rng.integers(0, VOCAB, size=s).astype(np.int64) for k, s in shapes.items()}
    if name == "vad_stream":  # a stream from silence: noise, then voiced harmonics in noise
        t = (case * VAD_CHUNK + np.arange(VAD_CHUNK)) / 16000.0
        voiced = sum(np.sin(2 * np.pi * 140 * k * t + k) / k for k in range(1, 6))
        audio = 0.01 * rng.standard_normal(VAD_CHUNK) + (0.3 * voiced if case else 0.0)
        state = np.zeros(VAD_STATE, np.float32)  # the stream's start; later calls: `record`
        return {"audio": audio[None].astype(np.float32), "h": state, "c": state}
    if name == "gpt_kv":  # the past: empty on the first call, later ones set by `record`
        ids = rng.integers(0, VOCAB, size=shapes["ids"]).astype(np.int64)
        past = np.zeros(shapes["past_key"], np.float32)
        return {"ids": ids, "past_key": past, "past_value": past}
    feeds = make_inputs_2(name, shapes, rng)  # the third batch's token / image / point models
    if feeds is not None:
        return feeds
    gain = IF_GATE_GAINS[case] if name == "if_gate" else 1.0
    return {k: (gain * rng.standard_normal(s)).astype(np.float32) for k, s in shapes.items()}


def export(names: list[str], folder: str) -> None:
    import torch

    for name in names:
        i = list(SHAPES).index(name)  # the seeds do not depend on which models are exported
        torch.manual_seed(i)
        model, inputs, outputs, axes = build(name)
        with torch.no_grad():  # non-trivial normalization statistics and affine parameters
            for m in model.modules():
                if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
                    m.running_mean.normal_(0, 0.2)
                    m.running_var.uniform_(0.5, 1.5)
                    m.weight.normal_(1, 0.2)
                    m.bias.normal_(0, 0.2)
                elif isinstance(m, (torch.nn.LayerNorm, torch.nn.GroupNorm)):
                    m.weight.normal_(1, 0.2)
                    m.bias.normal_(0, 0.2)
        model.eval()
        if name == "if_gate":  # data-dependent control flow: scripted, so it exports an If
            model = torch.jit.script(model)
        rng = np.random.default_rng(100 + i)
        feeds = [make_inputs(name, s, rng, j) for j, s in enumerate(SHAPES[name])]
        args = tuple(torch.from_numpy(feeds[EXPORT_CASE.get(name, 0)][k]) for k in inputs)
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
        state = STREAM_STATE.get(name, {})
        for j in range(len(SHAPES[name])):
            if j and state:  # the state this call gets is the state the previous call returned
                for k, out in state.items():
                    arrays[f"input:{j}:{k}"] = arrays[f"output:{j - 1}:{out}"]
            feed = {k.split(":", 2)[2]: v for k, v in arrays.items() if k.startswith(f"input:{j}:")}
            results = session.run(None, feed)
            for out, value in zip(session.get_outputs(), results):
                arrays[f"output:{j}:{out.name}"] = value
        np.savez_compressed(npz, **arrays)
        print(f"{name}: recorded {len(SHAPES[name])} cases")


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
