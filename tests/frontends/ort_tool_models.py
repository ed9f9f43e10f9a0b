# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Float models and seeded feeds for onnxruntime's own tools: the small CNN that
tools/record_quantized_models.py and test_onnxruntime_tools.py quantize (a strided stem,
residual blocks with 1x1 and depthwise 3x3 convolutions, max pooling, global average pooling,
a Gemm head), its images, and token feeds for the project's transformer exports (bert_tiny,
gpt2_tiny: tests/models/dynamic; t5_tiny, llama_tiny: data/, tools/export_ort_tool_sources.py).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INPUT_SHAPE = (1, 3, 32, 32)
CLASSES = 10
# token ids each export's embedding takes (bert_tiny / gpt2_tiny: tools/more_dynamic_models_2.py)
VOCAB = {"bert_tiny": 60, "gpt2_tiny": 60, "t5_tiny": 256, "llama_tiny": 256}


class _Builder:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []

    def weight(self, name, shape, fan_in):
        data = self.rng.normal(0, np.sqrt(2.0 / fan_in), size=shape).astype(np.float32)
        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def conv(self, x, name, cin, cout, k, stride=1, group=1, relu=True):
        w = self.weight(f"{name}.w", (cout, cin // group, k, k), cin // group * k * k)
        b = self.weight(f"{name}.b", (cout,), 50)
        y = f"{name}.y"
        pad = k // 2
        self.nodes.append(
            helper.make_node(
                "Conv", [x, w, b], [y], strides=[stride] * 2, pads=[pad] * 4, group=group
            )
        )
        if relu:
            self.nodes.append(helper.make_node("Relu", [y], [f"{name}.r"]))
            return f"{name}.r"
        return y

    def block(self, x, name, channels):
        a = self.conv(x, f"{name}.a", channels, channels * 2, 1)
        d = self.conv(a, f"{name}.dw", channels * 2, channels * 2, 3, group=channels * 2)
        c = self.conv(d, f"{name}.c", channels * 2, channels, 1, relu=False)
        s = f"{name}.sum"
        self.nodes.append(helper.make_node("Add", [x, c], [s]))
        self.nodes.append(helper.make_node("Relu", [s], [f"{name}.out"]))
        return f"{name}.out"


def float_cnn(seed: int = 0) -> onnx.ModelProto:
    b = _Builder(seed)
    x = b.conv("input", "stem", 3, 16, 3, stride=2)
    b.nodes.append(
        helper.make_node(
            "MaxPool", [x], ["pool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4
        )
    )
    x = b.block("pool", "block1", 16)
    x = b.conv(x, "down", 16, 32, 3, stride=2)
    x = b.block(x, "block2", 32)
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
    b.nodes.append(helper.make_node("Flatten", ["gap"], ["flat"]))
    w = b.weight("head.w", (CLASSES, 32), 32)
    bias = b.weight("head.b", (CLASSES,), 50)
    b.nodes.append(helper.make_node("Gemm", ["flat", w, bias], ["logits"], transB=1))
    graph = helper.make_graph(
        b.nodes,
        "small_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(INPUT_SHAPE))],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, CLASSES])],
        b.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def images(seed: int, count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(INPUT_SHAPE).astype(np.float32) for _ in range(count)]


def token_feeds(name: str, batch: int, sequence: int, seed: int) -> dict[str, np.ndarray]:
    """Seeded feeds of one of the transformer exports: ids in its vocabulary and, where it
    takes them, an attention mask with padding at the end of some rows (one row full) and
    BERT's sentence-B token types."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, VOCAB[name], size=(batch, sequence)).astype(np.int64)
    if name == "gpt2_tiny":
        return {"ids": ids}
    if name == "llama_tiny":
        return {"input_ids": ids}
    lengths = rng.integers(max(1, sequence // 2), sequence + 1, size=batch)
    lengths[0] = sequence
    mask = (np.arange(sequence)[None, :] < lengths[:, None]).astype(np.int64)
    if name == "t5_tiny":
        return {"input_ids": ids, "attention_mask": mask}
    split = rng.integers(1, sequence + 1, size=batch)  # sentence B from `split` on
    types = (np.arange(sequence)[None, :] >= split[:, None]).astype(np.int64)
    return {"input_ids": ids * mask, "token_type_ids": types * mask, "attention_mask": mask}
