# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The third batch of tools/export_dynamic_models.py's models (resnet_tiny, densenet_tiny,
convnext_tiny_block, bert_tiny, gpt2_tiny, conformer_block, pointnet, yolo_head,
efficientnet_block, seq2seq_gru): torch modules, their export signatures and the inputs of
the ones fed integers. Described in export_dynamic_models.py's docstring; imported by its
`build` and `make_inputs` (torch only at export time)."""

from __future__ import annotations

import numpy as np

VOCAB_2 = 60  # token ids of bert_tiny, gpt2_tiny and seq2seq_gru
SEQ2SEQ_STEPS = 6  # decoder steps of seq2seq_gru (teacher-forced target ids [N, 6])
YOLO_STRIDES = (8, 16)  # yolo_head's two output scales
YOLO_ANCHORS = ((10.0, 13.0, 16.0, 30.0), (30.0, 61.0, 62.0, 45.0))  # (w, h) pairs per scale
# image models fed standard normal pixels with a contrast and a brightness per image (pooled
# i.i.d. noise would give every image of a batch nearly the same logits)
IMAGES_2 = ("resnet_tiny", "densenet_tiny", "convnext_tiny_block", "yolo_head")
IMAGES_2 += ("efficientnet_block",)


def make_inputs_2(name: str, shapes: dict, rng: np.random.Generator) -> dict | None:
    """Feeds of this batch's token, image and point models (None for the others)."""
    if name in IMAGES_2 or name == "pointnet":
        (shape,) = shapes.values()
        n = shape[0]
        if name == "pointnet":  # clouds stretched differently along x, y, z
            x = rng.standard_normal(shape) * rng.uniform(0.3, 2.0, size=(n, 3, 1))
        else:
            x = rng.standard_normal(shape) * rng.uniform(0.5, 2.0, size=(n, 1, 1, 1))
            x += rng.uniform(-1.0, 1.0, size=(n, 1, 1, 1))
        return {next(iter(shapes)): x.astype(np.float32)}
    if name == "bert_tiny":
        n, s = shapes["input_ids"]
        ids = rng.integers(1, VOCAB_2, size=(n, s)).astype(np.int64)
        lengths = rng.integers(max(1, s // 2), s + 1, size=n)  # padding at the end
        mask = (np.arange(s)[None, :] < lengths[:, None]).astype(np.int64)
        mask[0] = 1  # one full row
        if n > 1:
            mask[-1, -max(1, s // 3) :] = 0  # and one surely padded
        split = rng.integers(1, s + 1, size=n)  # sentence B from `split` on
        types = (np.arange(s)[None, :] >= split[:, None]).astype(np.int64)
        return {"input_ids": ids * mask, "token_type_ids": types * mask, "attention_mask": mask}
    if name in ("gpt2_tiny", "seq2seq_gru"):
        return {k: rng.integers(0, VOCAB_2, size=s).astype(np.int64) for k, s in shapes.items()}
    return None


def build_more_2(name: str):
    """(module, input names, output names, dynamic_axes) for one of this batch's models."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    def conv_bn(cin, cout, k=3, stride=1, groups=1, act=nn.ReLU):
        return [
            nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
        ] + ([act()] if act else [])

    def kaiming(model):
        """He-normal conv weights (as torchvision's CNNs initialize them): the signal keeps
        its scale through the stack instead of fading under the BatchNorm offsets."""
        for m in model.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
        return model

    class Bottleneck(nn.Module):
        """ResNet bottleneck: 1x1 reduce, 3x3 (strided), 1x1 expand; a 1x1 strided conv
        shortcut where the shape changes."""

        def __init__(self, cin, mid, cout, stride):
            super().__init__()
            self.body = nn.Sequential(
                *conv_bn(cin, mid, 1),
                *conv_bn(mid, mid, 3, stride),
                *conv_bn(mid, cout, 1, act=None),
            )
            self.shortcut = nn.Identity()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(*conv_bn(cin, cout, 1, stride, act=None))

        def forward(self, x):
            return F.relu(self.body(x) + self.shortcut(x))

    class ResnetTiny(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            self.stem = nn.Sequential(*conv_bn(3, 16), nn.MaxPool2d(3, 2, 1))
            self.stages = nn.Sequential(
                Bottleneck(16, 8, 32, 1),
                Bottleneck(32, 8, 32, 1),
                Bottleneck(32, 16, 64, 2),
                Bottleneck(64, 16, 64, 1),
            )
            self.fc = nn.Linear(64, classes)

        def forward(self, x):
            x = self.stages(self.stem(x))
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    class DenseLayer(nn.Module):
        """BN-ReLU-Conv1x1 (bottleneck), BN-ReLU-Conv3x3; its output concatenated to its input."""

        def __init__(self, cin, growth):
            super().__init__()
            self.body = nn.Sequential(
                nn.BatchNorm2d(cin),
                nn.ReLU(),
                nn.Conv2d(cin, 4 * growth, 1, bias=False),
                nn.BatchNorm2d(4 * growth),
                nn.ReLU(),
                nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False),
            )

        def forward(self, x):
            return torch.cat([x, self.body(x)], 1)

    class DensenetTiny(nn.Module):
        def __init__(self, growth=8, classes=10):
            super().__init__()
            layers = [nn.Conv2d(3, 16, 3, padding=1, bias=False)]
            channels = 16
            for block in range(2):
                for _ in range(3):
                    layers.append(DenseLayer(channels, growth))
                    channels += growth
                if block == 0:  # transition: BN-ReLU-Conv1x1 halving the channels, avg pool
                    layers += [nn.BatchNorm2d(channels), nn.ReLU()]
                    layers += [nn.Conv2d(channels, channels // 2, 1, bias=False), nn.AvgPool2d(2)]
                    channels //= 2
            self.features = nn.Sequential(*layers, nn.BatchNorm2d(channels), nn.ReLU())
            self.fc = nn.Linear(channels, classes)

        def forward(self, x):
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))

    class ChannelsFirstNorm(nn.Module):
        """LayerNorm over the channels of [N, C, H, W] (permute, LayerNorm, permute back)."""

        def __init__(self, channels):
            super().__init__()
            self.norm = nn.LayerNorm(channels, eps=1e-6)

        def forward(self, x):
            return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    class ConvNextBlock(nn.Module):
        """Depthwise 7x7, LayerNorm over channels (channels last), pointwise MLP with GELU,
        layer scale, residual."""

        def __init__(self, dim):
            super().__init__()
            self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
            self.norm = nn.LayerNorm(dim, eps=1e-6)
            self.pw1, self.pw2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
            self.gamma = nn.Parameter(0.5 + 0.2 * torch.randn(dim))  # layer scale, non-trivial

        def forward(self, x):
            y = self.dwconv(x).permute(0, 2, 3, 1)  # [N, H, W, C]
            y = self.gamma * self.pw2(F.gelu(self.pw1(self.norm(y))))
            return x + y.permute(0, 3, 1, 2)

    class ConvNextTiny(nn.Module):
        def __init__(self, dims=(24, 48), classes=10):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, dims[0], 4, stride=4), ChannelsFirstNorm(dims[0])
            )
            self.stage1 = ConvNextBlock(dims[0])
            self.down = nn.Sequential(
                ChannelsFirstNorm(dims[0]), nn.Conv2d(dims[0], dims[1], 2, stride=2)
            )
            self.stage2 = nn.Sequential(ConvNextBlock(dims[1]), ConvNextBlock(dims[1]))
            self.norm = nn.LayerNorm(dims[1], eps=1e-6)
            self.head = nn.Linear(dims[1], classes)

        def forward(self, x):
            x = self.stage2(self.down(self.stage1(self.stem(x))))
            return self.head(self.norm(x.mean([-2, -1])))

    class BertLayer(nn.Module):
        """Post-norm: self-attention (+ the extended mask) add & norm, GELU FFN add & norm."""

        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
            self.out, self.norm1 = nn.Linear(dim, dim), nn.LayerNorm(dim, eps=1e-12)
            self.ffn = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
            self.norm2 = nn.LayerNorm(dim, eps=1e-12)

        def split(self, t):
            b, s, c = t.shape
            return t.view(b, s, self.heads, c // self.heads).transpose(1, 2)

        def forward(self, x, extended_mask):
            b, s, c = x.shape
            q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
            scores = q @ k.transpose(-1, -2) / (c // self.heads) ** 0.5 + extended_mask
            ctx = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, c)
            x = self.norm1(x + self.out(ctx))
            return self.norm2(x + self.ffn(x))

    class BertTiny(nn.Module):
        def __init__(self, dim=32, heads=4, layers=2, max_len=64):
            super().__init__()
            self.words = nn.Embedding(VOCAB_2, dim)
            self.positions = nn.Embedding(max_len, dim)
            self.types = nn.Embedding(2, dim)
            self.norm = nn.LayerNorm(dim, eps=1e-12)
            self.layers = nn.ModuleList(BertLayer(dim, heads) for _ in range(layers))
            self.pooler = nn.Linear(dim, dim)

        def forward(self, input_ids, token_type_ids, attention_mask):
            positions = torch.arange(input_ids.shape[1], device=input_ids.device)[None]
            x = self.words(input_ids) + self.positions(positions) + self.types(token_type_ids)
            x = self.norm(x)
            extended = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
            for layer in self.layers:
                x = layer(x, extended)
            return x, torch.tanh(self.pooler(x[:, 0]))

    class Gpt2Block(nn.Module):
        """Pre-norm; the causal mask a slice of a tril buffer; GELU (tanh approximation)."""

        def __init__(self, dim, heads, max_len):
            super().__init__()
            self.heads = heads
            self.ln_1, self.ln_2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.c_attn, self.c_proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.c_fc, self.c_out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
            tril = torch.tril(torch.ones(max_len, max_len, dtype=torch.bool))
            self.register_buffer("bias", tril.view(1, 1, max_len, max_len))

        def forward(self, x):
            b, s, c = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
            q, k, v = (t.view(b, s, self.heads, c // self.heads).transpose(1, 2) for t in (q, k, v))
            scores = q @ k.transpose(-1, -2) / float(c // self.heads) ** 0.5
            causal = self.bias[:, :, :s, :s]
            scores = torch.where(causal, scores, torch.tensor(-1e4, dtype=scores.dtype))
            y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, c)
            x = x + self.c_proj(y)
            return x + self.c_out(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class Gpt2Tiny(nn.Module):
        def __init__(self, dim=32, heads=2, layers=2, max_len=64):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(VOCAB_2, dim), nn.Embedding(max_len, dim)
            self.blocks = nn.Sequential(*(Gpt2Block(dim, heads, max_len) for _ in range(layers)))
            self.ln_f = nn.LayerNorm(dim)
            self.lm_head = nn.Linear(dim, VOCAB_2, bias=False)
            self.lm_head.weight = self.wte.weight  # tied

        def forward(self, ids):
            positions = torch.arange(ids.shape[1], dtype=torch.long)[None]
            x = self.blocks(self.wte(ids) + self.wpe(positions))
            return self.lm_head(self.ln_f(x))

    class ConformerBlock(nn.Module):
        """Half feed-forward, multi-head self-attention, conv module (pointwise, GLU,
        depthwise Conv1d, BatchNorm, SiLU, pointwise), half feed-forward, LayerNorm."""

        def __init__(self, dim=32, heads=4, kernel=15):
            super().__init__()
            self.heads = heads

            def feed_forward():
                return nn.Sequential(
                    nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.SiLU(), nn.Linear(4 * dim, dim)
                )

            self.ff1, self.ff2 = feed_forward(), feed_forward()
            self.attn_norm = nn.LayerNorm(dim)
            self.qkv, self.attn_out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.conv_norm = nn.LayerNorm(dim)
            self.conv = nn.Sequential(
                nn.Conv1d(dim, 2 * dim, 1),
                nn.GLU(dim=1),
                nn.Conv1d(dim, dim, kernel, padding=kernel // 2, groups=dim),
                nn.BatchNorm1d(dim),
                nn.SiLU(),
                nn.Conv1d(dim, dim, 1),
            )
            self.norm = nn.LayerNorm(dim)

        def attention(self, x):
            b, t, c = x.shape
            qkv = self.qkv(self.attn_norm(x)).view(b, t, 3, self.heads, c // self.heads)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)
            attn = (q @ k.transpose(-1, -2) * (c // self.heads) ** -0.5).softmax(-1)
            return self.attn_out((attn @ v).transpose(1, 2).reshape(b, t, c))

        def forward(self, features):  # [N, T, C]
            x = features + 0.5 * self.ff1(features)
            x = x + self.attention(x)
            x = x + self.conv(self.conv_norm(x).transpose(1, 2)).transpose(1, 2)
            return self.norm(x + 0.5 * self.ff2(x))

    class PointNet(nn.Module):
        """A 3x3 input transform predicted by a small T-Net, a shared Conv1d MLP over the
        points, max over points, an MLP classifier."""

        def __init__(self, classes=10):
            super().__init__()

            def shared(cin, cout):
                return [nn.Conv1d(cin, cout, 1), nn.BatchNorm1d(cout), nn.ReLU()]

            self.tnet = nn.Sequential(*shared(3, 16), *shared(16, 32))
            self.tnet_fc = nn.Linear(32, 9)
            self.mlp = nn.Sequential(*shared(3, 32), *shared(32, 64), *shared(64, 128))
            self.classifier = nn.Sequential(
                nn.Linear(128, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, classes)
            )

        def forward(self, points):  # [N, 3, P]
            t = self.tnet_fc(torch.max(self.tnet(points), 2)[0]).view(-1, 3, 3)
            t = t + torch.eye(3, dtype=t.dtype)
            x = torch.bmm(points.transpose(1, 2), t).transpose(1, 2)
            return self.classifier(torch.max(self.mlp(x), 2)[0])

    class YoloHead(nn.Module):
        """Conv backbone to strides 8 and 16, a neck (nearest upsampling x2 of stride 16,
        concatenated with stride 8), a 1x1 head per scale decoded on its grid (YOLOv5:
        sigmoid, xy = (2 s - 0.5 + grid) * stride, wh = (2 s)^2 * anchor) to [N, A, 5 + C]."""

        def __init__(self, classes=3):
            super().__init__()
            silu = nn.SiLU
            self.c3 = nn.Sequential(
                *conv_bn(3, 16, stride=2, act=silu),
                *conv_bn(16, 32, stride=2, act=silu),
                *conv_bn(32, 48, stride=2, act=silu),  # stride 8
            )
            self.c4 = nn.Sequential(*conv_bn(48, 64, stride=2, act=silu))  # stride 16
            self.neck = nn.Sequential(*conv_bn(64 + 48, 48, act=silu))
            self.outputs = 5 + classes
            anchors = len(YOLO_ANCHORS[0]) // 2
            self.head3 = nn.Conv2d(48, anchors * self.outputs, 1)
            self.head4 = nn.Conv2d(64, anchors * self.outputs, 1)
            for i, a in enumerate(YOLO_ANCHORS):
                self.register_buffer(f"anchors{i}", torch.tensor(a).view(1, -1, 1, 1, 2))

        def decode(self, p, stride, anchors):
            n, _, h, w = p.shape
            a = anchors.shape[1]
            p = p.view(n, a, self.outputs, h, w).permute(0, 1, 3, 4, 2).sigmoid()
            ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
            grid = torch.stack((xs, ys), 2).view(1, 1, h, w, 2).float()
            xy = (p[..., :2] * 2 - 0.5 + grid) * stride
            wh = (p[..., 2:4] * 2) ** 2 * anchors
            return torch.cat([xy, wh, p[..., 4:]], -1).view(n, -1, self.outputs)

        def forward(self, x):
            f3 = self.c3(x)
            f4 = self.c4(f3)
            f3 = self.neck(torch.cat([F.interpolate(f4, scale_factor=2.0, mode="nearest"), f3], 1))
            d3 = self.decode(self.head3(f3), YOLO_STRIDES[0], self.anchors0)
            d4 = self.decode(self.head4(f4), YOLO_STRIDES[1], self.anchors1)
            return torch.cat([d3, d4], 1)

    class SqueezeExcite(nn.Module):
        def __init__(self, channels, reduced):
            super().__init__()
            self.reduce, self.expand = (
                nn.Conv2d(channels, reduced, 1),
                nn.Conv2d(reduced, channels, 1),
            )

        def forward(self, x):
            s = F.silu(self.reduce(F.adaptive_avg_pool2d(x, 1)))
            return x * torch.sigmoid(self.expand(s))

    class MBConv(nn.Module):
        """EfficientNet: 1x1 expand, depthwise k x k, squeeze-excite, 1x1 project (+ x)."""

        def __init__(self, cin, cout, k, stride, expand=4):
            super().__init__()
            mid = cin * expand
            self.residual = stride == 1 and cin == cout
            self.body = nn.Sequential(
                *conv_bn(cin, mid, 1, act=nn.SiLU),
                *conv_bn(mid, mid, k, stride, groups=mid, act=nn.SiLU),
                SqueezeExcite(mid, max(4, cin // 4)),
                *conv_bn(mid, cout, 1, act=None),
            )

        def forward(self, x):
            y = self.body(x)
            return x + y if self.residual else y

    class FusedMBConv(nn.Module):
        """EfficientNetV2: a full 3x3 expand conv (strided), 1x1 project (+ x)."""

        def __init__(self, cin, cout, stride, expand=4):
            super().__init__()
            self.residual = stride == 1 and cin == cout
            self.body = nn.Sequential(
                *conv_bn(cin, cin * expand, 3, stride, act=nn.SiLU),
                *conv_bn(cin * expand, cout, 1, act=None),
            )

        def forward(self, x):
            y = self.body(x)
            return x + y if self.residual else y

    class EfficientNetBlock(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            self.features = nn.Sequential(
                *conv_bn(3, 16, stride=2, act=nn.SiLU),
                FusedMBConv(16, 16, 1),
                FusedMBConv(16, 24, 2),
                MBConv(24, 40, 5, 2),
                MBConv(40, 40, 3, 1),
                *conv_bn(40, 96, 1, act=nn.SiLU),
            )
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(96, classes))

        def forward(self, x):
            return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))

    class Seq2SeqGru(nn.Module):
        """A GRU encoder over the source; a GRU decoder run for SEQ2SEQ_STEPS steps on the
        teacher-forced target ids, each step attending (dot product) over the encoder's
        outputs, a linear to the vocabulary."""

        def __init__(self, dim=24, hidden=32):
            super().__init__()
            self.src_embed, self.tgt_embed = nn.Embedding(VOCAB_2, dim), nn.Embedding(VOCAB_2, dim)
            self.encoder = nn.GRU(dim, hidden, batch_first=True)
            self.decoder = nn.GRU(dim + hidden, hidden, batch_first=True)
            self.out = nn.Linear(2 * hidden, VOCAB_2)

        def forward(self, src, tgt):
            memory, h = self.encoder(self.src_embed(src))  # [N, S, H], [1, N, H]
            context = memory.mean(1, keepdim=True)  # [N, 1, H]
            steps = []
            for t in range(SEQ2SEQ_STEPS):
                step_in = torch.cat([self.tgt_embed(tgt[:, t : t + 1]), context], -1)
                y, h = self.decoder(step_in, h)  # [N, 1, H]
                weights = (y @ memory.transpose(1, 2)).softmax(-1)  # [N, 1, S]
                context = weights @ memory
                steps.append(self.out(torch.cat([y, context], -1)))
            return torch.cat(steps, 1)  # [N, steps, vocab]

    spatial = {0: "batch", 2: "height", 3: "width"}
    classify = {"x": spatial, "logits": {0: "batch"}}
    if name == "resnet_tiny":
        return kaiming(ResnetTiny()), ["x"], ["logits"], classify
    if name == "densenet_tiny":
        return kaiming(DensenetTiny()), ["x"], ["logits"], classify
    if name == "convnext_tiny_block":
        return ConvNextTiny(), ["x"], ["logits"], classify
    if name == "efficientnet_block":
        return kaiming(EfficientNetBlock()), ["x"], ["logits"], classify
    if name == "bert_tiny":
        seq = {0: "batch", 1: "sequence"}
        inputs = ["input_ids", "token_type_ids", "attention_mask"]
        axes = {k: seq for k in inputs + ["hidden"]} | {"pooled": {0: "batch"}}
        return BertTiny(), inputs, ["hidden", "pooled"], axes
    if name == "gpt2_tiny":
        seq = {0: "batch", 1: "sequence"}
        return Gpt2Tiny(), ["ids"], ["logits"], {"ids": seq, "logits": seq}
    if name == "conformer_block":
        seq = {0: "batch", 1: "time"}
        return ConformerBlock(), ["features"], ["encoded"], {"features": seq, "encoded": seq}
    if name == "pointnet":
        axes = {"points": {0: "batch", 2: "points"}, "logits": {0: "batch"}}
        return PointNet(), ["points"], ["logits"], axes
    if name == "yolo_head":
        axes = {"x": spatial, "detections": {0: "batch", 1: "anchors"}}
        return kaiming(YoloHead()), ["x"], ["detections"], axes
    if name == "seq2seq_gru":
        axes = {"src": {0: "batch", 1: "source"}, "tgt": {0: "batch"}, "logits": {0: "batch"}}
        return Seq2SeqGru(), ["src", "tgt"], ["logits"], axes
    return None
