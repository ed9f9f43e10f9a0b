# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The second batch of tools/export_dynamic_models.py's models (gru_tagger, unet,
mobilenet_block, gpt_kv, vit_tiny, rnn_denoiser, tcn_classifier, detector_nms, espcn_sr):
torch modules and their export signatures. Described in export_dynamic_models.py's docstring;
imported by its `build` (torch only, at export time)."""

from __future__ import annotations

VOCAB = 50  # token ids of gru_tagger and gpt_kv
GPT_LAYERS, GPT_HEADS, GPT_DIM = 2, 2, 32
DETECTOR_SIZE, DETECTOR_STRIDE = 64, 8  # fixed input 64x64, one anchor per 8x8 cell
DETECTOR_IOU = 0.4


def gpt_state_shape(past: int) -> tuple:
    """past_key / past_value: [layers, batch, heads, past, head dim]."""
    return (GPT_LAYERS, 1, GPT_HEADS, past, GPT_DIM // GPT_HEADS)


def build_more(name: str):
    """(module, input names, output names, dynamic_axes) for one of this batch's models."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    def conv_bn(cin, cout, k=3, stride=1, groups=1, act=nn.ReLU):
        return [
            nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
        ] + ([act()] if act else [])

    class GruTagger(nn.Module):
        """Per-token tags: embedding, 2-layer bidirectional GRU, a linear per step."""

        def __init__(self, dim=24, hidden=32, tags=12):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, dim)
            self.rnn = nn.GRU(dim, hidden, num_layers=2, bidirectional=True, batch_first=True)
            self.fc = nn.Linear(2 * hidden, tags)

        def forward(self, ids):
            y, _ = self.rnn(self.embed(ids))
            return self.fc(y)  # [N, S, tags]

    class UNet(nn.Module):
        """Two downsampling stages, a bottleneck, two ConvTranspose2d upsamplings, each
        concatenated with the encoder's feature map at its scale, a 1x1 head."""

        def __init__(self, classes=3):
            super().__init__()
            self.enc1 = nn.Sequential(*conv_bn(3, 8), *conv_bn(8, 8))  # H
            self.enc2 = nn.Sequential(*conv_bn(8, 16, stride=2), *conv_bn(16, 16))  # H/2
            self.bottleneck = nn.Sequential(nn.MaxPool2d(2), *conv_bn(16, 32), *conv_bn(32, 32))
            self.up2 = nn.ConvTranspose2d(32, 16, 2, stride=2)  # H/4 -> H/2
            self.dec2 = nn.Sequential(*conv_bn(32, 16))
            self.up1 = nn.ConvTranspose2d(16, 8, 2, stride=2)  # H/2 -> H
            self.dec1 = nn.Sequential(*conv_bn(16, 8))
            self.head = nn.Conv2d(8, classes, 1)

        def forward(self, x):
            e1 = self.enc1(x)
            e2 = self.enc2(e1)
            y = self.bottleneck(e2)
            y = self.dec2(torch.cat([self.up2(y), e2], 1))
            y = self.dec1(torch.cat([self.up1(y), e1], 1))
            return self.head(y)

    class SqueezeExcite(nn.Module):
        def __init__(self, channels, reduced):
            super().__init__()
            self.fc1, self.fc2 = nn.Conv2d(channels, reduced, 1), nn.Conv2d(reduced, channels, 1)

        def forward(self, x):
            s = F.adaptive_avg_pool2d(x, 1)
            return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))

    class InvertedResidual(nn.Module):
        """MobileNetV3: 1x1 expand, depthwise k x k, squeeze-excite, 1x1 project (+ x)."""

        def __init__(self, cin, expand, cout, k, stride, act):
            super().__init__()
            self.residual = stride == 1 and cin == cout
            self.body = nn.Sequential(
                *conv_bn(cin, expand, 1, act=act),
                *conv_bn(expand, expand, k, stride, groups=expand, act=act),
                SqueezeExcite(expand, max(8, expand // 4)),
                *conv_bn(expand, cout, 1, act=None),
            )

        def forward(self, x):
            y = self.body(x)
            return x + y if self.residual else y

    class MobileNetBlock(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            self.stem = nn.Sequential(*conv_bn(3, 16, stride=2, act=nn.Hardswish))
            self.blocks = nn.Sequential(
                InvertedResidual(16, 32, 16, 3, 1, nn.ReLU),
                InvertedResidual(16, 48, 24, 5, 2, nn.Hardswish),
                InvertedResidual(24, 72, 24, 5, 1, nn.Hardswish),
            )
            self.last = nn.Sequential(*conv_bn(24, 64, 1, act=nn.Hardswish))
            self.classifier = nn.Sequential(
                nn.Linear(64, 96), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(96, classes)
            )

        def forward(self, x):
            x = self.last(self.blocks(self.stem(x)))
            return self.classifier(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    class GptLayer(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x, past_k, past_v, masked):
            b, s, c = x.shape
            qkv = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, c // self.heads)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)
            k, v = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
            scores = (q @ k.transpose(-1, -2)) * (c // self.heads) ** -0.5
            attn = scores.masked_fill(masked, float("-inf")).softmax(-1)
            x = x + self.proj((attn @ v).transpose(1, 2).reshape(b, s, c))
            return x + self.mlp(self.ln2(x)), k, v

    class GptKv(nn.Module):
        """Causal decoder with a key / value cache in and out: positions and the causal mask
        from the past's length."""

        def __init__(self, max_len=64):
            super().__init__()
            self.tokens = nn.Embedding(VOCAB, GPT_DIM)
            self.positions = nn.Embedding(max_len, GPT_DIM)
            self.layers = nn.ModuleList(GptLayer(GPT_DIM, GPT_HEADS) for _ in range(GPT_LAYERS))
            self.norm = nn.LayerNorm(GPT_DIM)
            self.head = nn.Linear(GPT_DIM, VOCAB, bias=False)

        def forward(self, ids, past_key, past_value):
            past, s = past_key.shape[3], ids.shape[1]
            x = self.tokens(ids) + self.positions(torch.arange(past, past + s))[None]
            rows = torch.arange(s)[:, None] + past
            masked = torch.arange(past + s)[None, :] > rows  # [s, past + s]: the future
            keys, values = [], []
            for i, layer in enumerate(self.layers):
                x, k, v = layer(x, past_key[i], past_value[i], masked)
                keys.append(k)
                values.append(v)
            return self.head(self.norm(x)), torch.stack(keys), torch.stack(values)

    class VitTiny(nn.Module):
        """Patch embedding, a class token, learned positions, 2 pre-norm encoder layers
        (nn.TransformerEncoderLayer), a classifier on the class token."""

        def __init__(self, dim=32, patch=4, image=32, classes=10):
            super().__init__()
            self.embed = nn.Conv2d(3, dim, patch, stride=patch)
            self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.5)
            self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.2)
            layer = nn.TransformerEncoderLayer(
                dim, 2, 2 * dim, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
            )
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, classes)

        def forward(self, x):
            x = self.embed(x).flatten(2).transpose(1, 2)  # [N, patches, dim]
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
            return self.head(self.norm(self.encoder(x))[:, 0])

    class RnnDenoiser(nn.Module):
        """Audio [N, 1, T] (T a multiple of 8): strided Conv1d frames, a tanh RNN over them,
        a ConvTranspose1d back to samples: the noise estimate subtracted from the input."""

        def __init__(self, channels=32, hop=8):
            super().__init__()
            self.encode = nn.Conv1d(1, channels, 2 * hop, stride=hop, padding=hop // 2)
            self.rnn = nn.RNN(channels, channels, batch_first=True)
            self.decode = nn.ConvTranspose1d(channels, 1, 2 * hop, stride=hop, padding=hop // 2)

        def forward(self, audio):
            frames = F.relu(self.encode(audio)).transpose(1, 2)  # [N, T / hop, C]
            y, _ = self.rnn(frames)
            return audio - self.decode(y.transpose(1, 2))

    class TcnBlock(nn.Module):
        """Dilated causal Conv1d (left padding), LayerNorm over channels, ReLU, residual."""

        def __init__(self, cin, cout, dilation, k=3):
            super().__init__()
            self.pad = (k - 1) * dilation
            self.conv = nn.Conv1d(cin, cout, k, dilation=dilation)
            self.norm = nn.LayerNorm(cout)
            self.skip = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()

        def forward(self, x):
            y = self.conv(F.pad(x, (self.pad, 0)))
            y = self.norm(y.permute(0, 2, 1)).permute(0, 2, 1)
            return F.relu(y) + self.skip(x)

    class TcnClassifier(nn.Module):
        def __init__(self, cin=8, channels=32, classes=6):
            super().__init__()
            self.blocks = nn.Sequential(
                *(TcnBlock(cin if d == 1 else channels, channels, d) for d in (1, 2, 4))
            )
            self.fc = nn.Linear(channels, classes)

        def forward(self, x):
            return self.fc(F.adaptive_avg_pool1d(self.blocks(x), 1).flatten(1))

    class DetectorNms(nn.Module):
        """A conv head over a fixed 64x64 image: one box and score per 8x8 cell (boxes
        [1, A, 4] from the cell centres, scores [1, 1, A]), torchvision's nms, the kept boxes
        and scores gathered (their count decided by the data)."""

        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(
                *conv_bn(3, 16, stride=2), *conv_bn(16, 32, stride=2), *conv_bn(32, 32, stride=2)
            )
            self.box, self.score = nn.Conv2d(32, 4, 1), nn.Conv2d(32, 1, 1)
            cells = DETECTOR_SIZE // DETECTOR_STRIDE
            ys, xs = torch.meshgrid(torch.arange(cells), torch.arange(cells), indexing="ij")
            centres = (torch.stack([xs, ys], -1).view(1, -1, 2).float() + 0.5) * DETECTOR_STRIDE
            self.register_buffer("centres", centres)  # [1, A, 2]

        def forward(self, x):
            f = self.backbone(x)
            d = self.box(f).flatten(2).transpose(1, 2)  # [1, A, 4]
            centres = self.centres + d[..., :2] * DETECTOR_STRIDE
            half = 1.5 * DETECTOR_STRIDE * torch.exp(d[..., 2:].clamp(max=2.0))
            boxes = torch.cat([centres - half, centres + half], -1)  # [1, A, 4]: x1 y1 x2 y2
            scores = torch.sigmoid(self.score(f).flatten(2))  # [1, 1, A]
            keep = torchvision.ops.nms(boxes[0], scores[0, 0], DETECTOR_IOU)
            return boxes[0][keep], scores[0, 0][keep]

    class Espcn(nn.Module):
        """ESPCN super-resolution: convs with tanh at low resolution, PixelShuffle (x3) to
        the output, sigmoid."""

        def __init__(self, scale=3):
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(1, 32, 5, padding=2),
                nn.Tanh(),
                nn.Conv2d(32, 16, 3, padding=1),
                nn.Tanh(),
                nn.Conv2d(16, scale * scale, 3, padding=1),
            )
            self.shuffle = nn.PixelShuffle(scale)

        def forward(self, x):
            return torch.sigmoid(self.shuffle(self.body(x)))

    spatial = {0: "batch", 2: "height", 3: "width"}
    if name == "gru_tagger":
        axes = {0: "batch", 1: "sequence"}
        return GruTagger(), ["ids"], ["tags"], {"ids": axes, "tags": axes}
    if name == "unet":
        return UNet(), ["x"], ["mask"], {"x": spatial, "mask": spatial}
    if name == "mobilenet_block":
        return MobileNetBlock(), ["x"], ["logits"], {"x": spatial, "logits": {0: "batch"}}
    if name == "gpt_kv":
        past, total = {3: "past"}, {3: "total"}
        axes = {"ids": {1: "sequence"}, "logits": {1: "sequence"}, "past_key": past}
        axes.update(past_value=past, present_key=total, present_value=total)
        inputs, outputs = (
            ["ids", "past_key", "past_value"],
            ["logits", "present_key", "present_value"],
        )
        return GptKv(), inputs, outputs, axes
    if name == "vit_tiny":
        return VitTiny(), ["x"], ["logits"], {"x": {0: "batch"}, "logits": {0: "batch"}}
    if name == "rnn_denoiser":
        axes = {0: "batch", 2: "samples"}
        return RnnDenoiser(), ["audio"], ["clean"], {"audio": axes, "clean": axes}
    if name == "tcn_classifier":
        axes = {"x": {0: "batch", 2: "time"}, "logits": {0: "batch"}}
        return TcnClassifier(), ["x"], ["logits"], axes
    if name == "espcn_sr":
        return Espcn(), ["x"], ["upscaled"], {"x": spatial, "upscaled": spatial}
    if name == "detector_nms":
        import torchvision  # noqa: F401 (registers torchvision::nms and its ONNX export)

        return (
            DetectorNms(),
            ["image"],
            ["boxes", "scores"],
            {"boxes": {0: "kept"}, "scores": {0: "kept"}},
        )
    return None
