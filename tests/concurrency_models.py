# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Small models of the two classes servers run most, built with onnx.helper and seeded
random weights, for the concurrency tests of every target:

- resnet_like: a ResNet-18-style CNN (conv + batch norm + ReLU stem, max pool, basic blocks
  with identity and strided 1x1 shortcuts, global average pool, Gemm classifier);
- bert_like: a BERT-style encoder (token + position embeddings, layer norm, multi-head
  attention with a mask, GELU feed-forward, residual layer norms).

The batch dim may be symbolic ("N") so that one program serves several shapes."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class _Builder:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.count = 0

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"

    def const(self, stem: str, array: np.ndarray) -> str:
        name = self.name(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, stem: str, shape, scale: float) -> str:
        return self.const(stem, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def node(self, op: str, inputs: list[str], **attrs) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def model(self, inputs, outputs, opset: int = 17) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, "model", inputs, outputs, self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _conv_bn(b: _Builder, x: str, cin: int, cout: int, k: int, stride: int, relu: bool) -> str:
    w = b.weight("w", (cout, cin, k, k), (2.0 / (cin * k * k)) ** 0.5)
    y = b.node("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4)
    scale = b.const("scale", (1.0 + 0.1 * b.rng.standard_normal(cout)).astype(np.float32))
    bias = b.const("bias", (0.1 * b.rng.standard_normal(cout)).astype(np.float32))
    mean = b.const("mean", (0.1 * b.rng.standard_normal(cout)).astype(np.float32))
    var = b.const("var", (1.0 + 0.1 * b.rng.random(cout)).astype(np.float32))
    y = b.node("BatchNormalization", [y, scale, bias, mean, var], epsilon=1e-5)
    return b.node("Relu", [y]) if relu else y


def resnet_like(
    seed: int = 0, batch="N", size: int = 32, widths=(16, 32, 64), classes: int = 10
) -> onnx.ModelProto:
    """x: f32[batch, 3, size, size] -> logits: f32[batch, classes]."""
    b = _Builder(seed)
    x = _conv_bn(b, "x", 3, widths[0], 3, 1, relu=True)
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = widths[0]
    for stage, cout in enumerate(widths):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            y = _conv_bn(b, x, cin, cout, 3, stride, relu=True)
            y = _conv_bn(b, y, cout, cout, 3, 1, relu=False)
            shortcut = (
                x
                if stride == 1 and cin == cout
                else _conv_bn(b, x, cin, cout, 1, stride, relu=False)
            )
            x = b.node("Relu", [b.node("Add", [y, shortcut])])
            cin = cout
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)
    w = b.weight("fc_w", (classes, cin), cin**-0.5)
    fc_b = b.weight("fc_b", (classes,), 0.1)
    b.nodes.append(helper.make_node("Gemm", [x, w, fc_b], ["logits"], name="fc", transB=1))
    return b.model(
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, size, size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, classes])],
    )


def _layer_norm(b: _Builder, x: str, hidden: int) -> str:
    scale = b.const("ln_s", (1.0 + 0.1 * b.rng.standard_normal(hidden)).astype(np.float32))
    bias = b.const("ln_b", (0.1 * b.rng.standard_normal(hidden)).astype(np.float32))
    return b.node("LayerNormalization", [x, scale, bias], axis=-1, epsilon=1e-12)


def _linear(b: _Builder, x: str, cin: int, cout: int) -> str:
    w = b.weight("lin_w", (cin, cout), cin**-0.5)
    return b.node("Add", [b.node("MatMul", [x, w]), b.weight("lin_b", (cout,), 0.02)])


def _gelu(b: _Builder, x: str) -> str:
    # 0.5 * x * (1 + erf(x / sqrt(2))), as exporters write it
    inner = b.node("Erf", [b.node("Div", [x, b.const("sqrt2", np.float32(2**0.5))])])
    one = b.node("Add", [inner, b.const("one", np.float32(1.0))])
    return b.node("Mul", [b.node("Mul", [x, one]), b.const("half", np.float32(0.5))])


def bert_like(
    seed: int = 0,
    batch="N",
    seq: int = 16,
    hidden: int = 64,
    heads: int = 4,
    layers: int = 2,
    vocab: int = 100,
) -> onnx.ModelProto:
    """input_ids: i64[batch, seq], attention_mask: i64[batch, seq] -> hidden states
    f32[batch, seq, hidden]."""
    b = _Builder(seed)
    head = hidden // heads
    words = b.weight("word_emb", (vocab, hidden), 0.5)
    positions = b.weight("pos_emb", (1, seq, hidden), 0.5)
    x = b.node("Add", [b.node("Gather", [words, "input_ids"]), positions])
    x = _layer_norm(b, x, hidden)
    # mask [batch, seq] -> additive [batch, 1, 1, seq]: 0 where attended, -10000 elsewhere
    mask = b.node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask = b.node("Unsqueeze", [mask, b.const("axes", np.array([1, 2], np.int64))])
    mask = b.node(
        "Mul",
        [
            b.node("Sub", [b.const("one", np.float32(1.0)), mask]),
            b.const("neg", np.float32(-10000.0)),
        ],
    )
    split = b.const("split_shape", np.array([0, 0, heads, head], np.int64))
    merge = b.const("merge_shape", np.array([0, 0, hidden], np.int64))
    for _ in range(layers):

        def heads_of(t):
            return b.node("Transpose", [b.node("Reshape", [t, split])], perm=[0, 2, 1, 3])

        q, k, v = (heads_of(_linear(b, x, hidden, hidden)) for _ in range(3))
        scores = b.node("MatMul", [q, b.node("Transpose", [k], perm=[0, 1, 3, 2])])
        scores = b.node("Div", [scores, b.const("scale", np.float32(head**0.5))])
        probs = b.node("Softmax", [b.node("Add", [scores, mask])], axis=-1)
        context = b.node("Transpose", [b.node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        attended = _linear(b, b.node("Reshape", [context, merge]), hidden, hidden)
        x = _layer_norm(b, b.node("Add", [attended, x]), hidden)
        ffn = _linear(b, _gelu(b, _linear(b, x, hidden, 4 * hidden)), 4 * hidden, hidden)
        x = _layer_norm(b, b.node("Add", [ffn, x]), hidden)
    b.nodes.append(helper.make_node("Identity", [x], ["hidden_states"], name="out"))
    return b.model(
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, seq]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [batch, seq]),
        ],
        [helper.make_tensor_value_info("hidden_states", TensorProto.FLOAT, [batch, seq, hidden])],
    )


def resnet_feeds(seed: int, batch: int = 1, size: int = 32) -> dict:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((batch, 3, size, size)).astype(np.float32)}


def bert_feeds(seed: int, batch: int = 1, seq: int = 16, vocab: int = 100) -> dict:
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int64)
    mask[:, seq - 1 - seed % (seq // 2) :] = 0  # a different padded tail per seed
    return {
        "input_ids": rng.integers(0, vocab, (batch, seq), dtype=np.int64),
        "attention_mask": mask,
    }


def bert_dynamic_seq(
    seed: int = 0,
    batch="N",
    seq="S",
    hidden: int = 64,
    heads: int = 4,
    layers: int = 2,
    vocab: int = 100,
    max_positions: int = 512,
) -> onnx.ModelProto:
    """bert_like with a symbolic sequence dim, the position embedding written as exporters
    write it (torch's `self.position_ids[:, :seq_length]`): a [1, max_positions] table of
    position ids sliced to Shape(input_ids)[1] (Shape -> Gather -> Unsqueeze -> Slice), then
    gathered from the position embedding. input_ids, attention_mask: i64[batch, seq] ->
    hidden_states f32[batch, seq, hidden]."""
    b = _Builder(seed)
    head = hidden // heads
    words = b.weight("word_emb", (vocab, hidden), 0.5)
    table = b.weight("pos_emb", (max_positions, hidden), 0.5)
    position_ids = b.const("position_ids", np.arange(max_positions, dtype=np.int64)[None])
    length = b.node(
        "Gather", [b.node("Shape", ["input_ids"]), b.const("one_i", np.array(1, np.int64))], axis=0
    )
    length = b.node("Unsqueeze", [length, b.const("axes0", np.array([0], np.int64))])
    ids = b.node(
        "Slice",
        [
            position_ids,
            b.const("start", np.array([0], np.int64)),
            length,
            b.const("axis1", np.array([1], np.int64)),
            b.const("step", np.array([1], np.int64)),
        ],
    )
    positions = b.node("Gather", [table, ids])  # [1, seq, hidden]
    x = b.node("Add", [b.node("Gather", [words, "input_ids"]), positions])
    x = _layer_norm(b, x, hidden)
    mask = b.node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask = b.node("Unsqueeze", [mask, b.const("axes", np.array([1, 2], np.int64))])
    mask = b.node(
        "Mul",
        [
            b.node("Sub", [b.const("one", np.float32(1.0)), mask]),
            b.const("neg", np.float32(-10000.0)),
        ],
    )
    split = b.const("split_shape", np.array([0, 0, heads, head], np.int64))
    merge = b.const("merge_shape", np.array([0, 0, hidden], np.int64))
    for _ in range(layers):

        def heads_of(t):
            return b.node("Transpose", [b.node("Reshape", [t, split])], perm=[0, 2, 1, 3])

        q, k, v = (heads_of(_linear(b, x, hidden, hidden)) for _ in range(3))
        scores = b.node("MatMul", [q, b.node("Transpose", [k], perm=[0, 1, 3, 2])])
        scores = b.node("Div", [scores, b.const("scale", np.float32(head**0.5))])
        probs = b.node("Softmax", [b.node("Add", [scores, mask])], axis=-1)
        context = b.node("Transpose", [b.node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        attended = _linear(b, b.node("Reshape", [context, merge]), hidden, hidden)
        x = _layer_norm(b, b.node("Add", [attended, x]), hidden)
        ffn = _linear(b, _gelu(b, _linear(b, x, hidden, 4 * hidden)), 4 * hidden, hidden)
        x = _layer_norm(b, b.node("Add", [ffn, x]), hidden)
    b.nodes.append(helper.make_node("Identity", [x], ["hidden_states"], name="out"))
    return _ir8(
        b.model(
            [
                helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, seq]),
                helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [batch, seq]),
            ],
            [
                helper.make_tensor_value_info(
                    "hidden_states", TensorProto.FLOAT, [batch, seq, hidden]
                )
            ],
        )
    )


def _ir8(model: onnx.ModelProto) -> onnx.ModelProto:
    """IR version 8 (that of opset 17), so that older onnxruntime releases load the model."""
    model.ir_version = 8
    return model


def ocr_recognizer(
    seed: int = 0, batch="N", width="W", height: int = 48, widths=(32, 64, 128), classes: int = 97
) -> onnx.ModelProto:
    """A CRNN-style text recognizer without the LSTM: x f32[batch, 3, height, width] -> conv
    + batch norm + ReLU stages (2x2 max pools, then 2x1 ones that halve the height only), the
    height averaged away (ReduceMean), columns as a sequence [batch, width/4, C], a two-layer
    per-column classifier (MatMul + Add, ReLU, MatMul + Add), Softmax over the classes:
    probs f32[batch, width/4, classes]."""
    b = _Builder(seed)
    x, cin = "x", 3
    for stage, cout in enumerate(widths):
        x = _conv_bn(b, x, cin, cout, 3, 1, relu=True)
        if stage > 0:
            x = _conv_bn(b, x, cout, cout, 3, 1, relu=True)
        pool = [2, 2] if stage < 2 else [2, 1]
        x = b.node("MaxPool", [x], kernel_shape=pool, strides=pool)
        cin = cout
    x = b.node("ReduceMean", [x], axes=[2], keepdims=0)  # [batch, C, width/4]
    x = b.node("Transpose", [x], perm=[0, 2, 1])  # [batch, width/4, C]
    x = b.node("Relu", [_linear(b, x, cin, 2 * cin)])
    x = _linear(b, x, 2 * cin, classes)
    b.nodes.append(helper.make_node("Softmax", [x], ["probs"], name="probs", axis=-1))
    cols = "T" if isinstance(width, str) else width // 4  # T = width / 4 columns
    return _ir8(
        b.model(
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, height, width])],
            [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [batch, cols, classes])],
        )
    )
