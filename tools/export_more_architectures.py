# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Architectures export_real_models.py builds itself (imported by it; needs torch).

Each is the shape of a kind of model people ship as ONNX and that torchvision / transformers
do not cover as such; sizes are those of small production models:
  - byte_classifier: a byte-level file classifier: byte embedding, two strided 1-D
    convolutions, two transformer encoder layers over the downsampled sequence, attention
    pooling, a linear head (malware / file-type classifiers);
  - crnn_ocr: a CRNN text recognizer: VGG-style 3x3 conv + BatchNorm + ReLU with max pooling
    on a 32-pixel-high grayscale line, a two-layer bidirectional LSTM, a CTC head;
  - mobile_ocr: a mobile text recognizer: MobileNetV3-style depthwise blocks (hardswish,
    squeeze-and-excitation) on a 48-pixel-high colour line, pooling over the height,
    pointwise mixing and a CTC head, no recurrence;
  - kws_tcn: a keyword-spotting TCN on log-mel frames: depthwise-separable 1-D convolutions
    with BatchNorm, residuals and dilation, mean pooling over time, a linear head.
"""

from __future__ import annotations

import torch
from torch import nn


class ByteClassifier(nn.Module):
    def __init__(self, length: int = 4096, dim: int = 128, classes: int = 16):
        super().__init__()
        self.embed = nn.Embedding(257, 16)
        self.conv1 = nn.Conv1d(16, dim, kernel_size=8, stride=4, padding=2)
        self.conv2 = nn.Conv1d(dim, dim, kernel_size=8, stride=4, padding=2)
        layer = nn.TransformerEncoderLayer(dim, 4, 2 * dim, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.position = nn.Parameter(torch.randn(1, length // 16, dim) * 0.02)
        self.pool_query = nn.Linear(dim, 1)
        self.head = nn.Linear(dim, classes)

    def forward(self, data):
        x = self.embed(data).transpose(1, 2)  # [N, 16, L]
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x)).transpose(1, 2)  # [N, L/16, dim]
        x = self.encoder(x + self.position)
        weights = torch.softmax(self.pool_query(x), dim=1)  # [N, L/16, 1]
        return self.head((weights * x).sum(dim=1))


def _conv_bn_relu(cin: int, cout: int) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]


class CrnnOcr(nn.Module):
    def __init__(self, classes: int = 97):
        super().__init__()
        self.features = nn.Sequential(
            *_conv_bn_relu(1, 64),
            nn.MaxPool2d(2),
            *_conv_bn_relu(64, 128),
            nn.MaxPool2d(2),
            *_conv_bn_relu(128, 256),
            *_conv_bn_relu(256, 256),
            nn.MaxPool2d((2, 1)),
            *_conv_bn_relu(256, 256),
            *_conv_bn_relu(256, 256),
            nn.MaxPool2d((2, 1)),
            *_conv_bn_relu(256, 256),
        )
        self.rnn = nn.LSTM(256 * 2, 128, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(256, classes)

    def forward(self, image):
        x = self.features(image)  # [N, 256, 2, W/4]
        n, c, h, w = x.shape
        x = x.reshape(n, c * h, w).transpose(1, 2)
        x, _ = self.rnn(x)
        return self.head(x).log_softmax(-1)


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.reduce = nn.Conv2d(channels, channels // 4, 1)
        self.expand = nn.Conv2d(channels // 4, channels, 1)

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)
        return x * nn.functional.hardsigmoid(self.expand(torch.relu(self.reduce(s))))


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, expand: int, stride, se: bool):
        super().__init__()
        mid = cin * expand
        layers = [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.Hardswish()]
        layers += [nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid)]
        layers += [nn.Hardswish()] + ([SqueezeExcite(mid)] if se else [])
        layers += [nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.residual = cin == cout and stride == 1

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class MobileOcr(nn.Module):
    def __init__(self, classes: int = 97):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish()
        )
        self.blocks = nn.Sequential(
            InvertedResidual(16, 24, 3, 1, False),
            InvertedResidual(24, 32, 3, (2, 1), True),
            InvertedResidual(32, 32, 3, 1, True),
            InvertedResidual(32, 64, 4, (2, 1), True),
            InvertedResidual(64, 64, 4, 1, True),
            InvertedResidual(64, 96, 4, (2, 1), True),
            InvertedResidual(96, 96, 4, 1, True),
        )
        self.mix = nn.Sequential(nn.Conv2d(96, 256, 1), nn.Hardswish())
        self.head = nn.Linear(256, classes)

    def forward(self, image):
        x = self.blocks(self.stem(image))  # [N, 96, 3, W/2]
        x = nn.functional.adaptive_avg_pool2d(x, (1, None))
        x = self.mix(x).squeeze(2).transpose(1, 2)  # [N, W/2, 256]
        return self.head(x).log_softmax(-1)


class SeparableBlock(nn.Module):
    def __init__(self, cin: int, cout: int, kernel: int, dilation: int):
        super().__init__()
        pad = dilation * (kernel - 1) // 2
        self.depthwise = nn.Conv1d(cin, cin, kernel, padding=pad, dilation=dilation, groups=cin)
        self.pointwise = nn.Conv1d(cin, cout, 1, bias=False)
        self.norm = nn.BatchNorm1d(cout)
        self.skip = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        return torch.relu(self.norm(self.pointwise(self.depthwise(x))) + self.skip(x))


class KwsTcn(nn.Module):
    def __init__(self, mels: int = 64, classes: int = 35):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv1d(mels, 128, 11, 2, 5), nn.BatchNorm1d(128), nn.ReLU())
        self.blocks = nn.Sequential(
            SeparableBlock(128, 128, 13, 1),
            SeparableBlock(128, 128, 15, 2),
            SeparableBlock(128, 192, 17, 4),
            SeparableBlock(192, 192, 21, 8),
            SeparableBlock(192, 256, 25, 1),
        )
        self.head = nn.Linear(256, classes)

    def forward(self, mel):
        return self.head(self.blocks(self.stem(mel)).mean(-1))


def custom_model(name: str):
    """(module, feeds, output names) for one of this file's architectures, seeded."""
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    if name == "byte_classifier":
        model = ByteClassifier()
        feeds = {"data": torch.randint(0, 257, (1, 4096), generator=gen, dtype=torch.int64)}
        return model, feeds, ["logits"], None
    if name == "crnn_ocr":
        model = CrnnOcr()
        return (
            model,
            {"image": torch.randn(1, 1, 32, 320, generator=gen)},
            ["log_probs"],
            (lambda: torch.randn(4, 1, 32, 320)),
        )
    if name == "mobile_ocr":
        model = MobileOcr()
        return (
            model,
            {"image": torch.randn(1, 3, 48, 320, generator=gen)},
            ["log_probs"],
            (lambda: torch.randn(4, 3, 48, 320)),
        )
    if name == "kws_tcn":
        model = KwsTcn()
        return (
            model,
            {"mel": torch.randn(1, 64, 200, generator=gen)},
            ["logits"],
            (lambda: torch.randn(4, 64, 200)),
        )
    raise ValueError(name)


CUSTOM = ["byte_classifier", "crnn_ocr", "mobile_ocr", "kws_tcn"]
