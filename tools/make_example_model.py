#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Write the example model shipped inside the package: a small ResNet-style CNN
(conv-BN-ReLU stem, max pool, two residual blocks, one of them downsampling, global average
pool, fully connected layer, softmax) for 1x3x32x32 images, 10 classes, seeded weights.

    python tools/make_example_model.py [--out python/graphkiln/models/example_cnn.onnx]
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DEFAULT_OUT = os.path.join(
    os.path.dirname(__file__), "..", "python", "graphkiln", "models", "example_cnn.onnx"
)


class Builder:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.weights: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, base: str) -> str:
        self.count += 1
        return f"{base}{self.count}"

    def weight(self, base: str, array: np.ndarray) -> str:
        name = self.name(base)
        self.weights.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def conv_bn(self, x: str, cin: int, cout: int, k: int, stride: int, relu: bool) -> str:
        w = self.weight(
            "conv_w", self.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2 / (cin * k * k))
        )
        y = self.name("conv")
        pad = k // 2
        self.nodes.append(
            helper.make_node(
                "Conv",
                [x, w],
                [y],
                name=y,
                kernel_shape=[k, k],
                strides=[stride, stride],
                pads=[pad] * 4,
            )
        )
        bn = [
            self.weight("bn_scale", 1 + 0.1 * self.rng.standard_normal(cout)),
            self.weight("bn_bias", 0.1 * self.rng.standard_normal(cout)),
            self.weight("bn_mean", 0.1 * self.rng.standard_normal(cout)),
            self.weight("bn_var", 1 + 0.2 * self.rng.random(cout)),
        ]
        z = self.name("bn")
        self.nodes.append(
            helper.make_node("BatchNormalization", [y] + bn, [z], name=z, epsilon=1e-5)
        )
        return self.relu(z) if relu else z

    def relu(self, x: str) -> str:
        y = self.name("relu")
        self.nodes.append(helper.make_node("Relu", [x], [y], name=y))
        return y

    def residual(self, x: str, cin: int, cout: int, stride: int) -> str:
        h = self.conv_bn(x, cin, cout, 3, stride, relu=True)
        h = self.conv_bn(h, cout, cout, 3, 1, relu=False)
        shortcut = (
            x
            if (cin == cout and stride == 1)
            else self.conv_bn(x, cin, cout, 1, stride, relu=False)
        )
        s = self.name("add")
        self.nodes.append(helper.make_node("Add", [h, shortcut], [s], name=s))
        return self.relu(s)


def build(seed: int = 0) -> onnx.ModelProto:
    b = Builder(seed)
    x = b.conv_bn("image", 3, 16, 3, 1, relu=True)
    pooled = b.name("maxpool")
    b.nodes.append(
        helper.make_node(
            "MaxPool",
            [x],
            [pooled],
            name=pooled,
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
        )
    )
    x = b.residual(pooled, 16, 16, 1)
    x = b.residual(x, 16, 32, 2)
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap"))
    b.nodes.append(helper.make_node("Flatten", ["gap"], ["features"], name="flatten", axis=1))
    fc_w = b.weight("fc_w", b.rng.standard_normal((10, 32)) * np.sqrt(1 / 32))
    fc_b = b.weight("fc_b", 0.1 * b.rng.standard_normal(10))
    b.nodes.append(
        helper.make_node("Gemm", ["features", fc_w, fc_b], ["logits"], name="fc", transB=1)
    )
    b.nodes.append(
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=1)
    )
    graph = helper.make_graph(
        b.nodes,
        "example_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 10])],
        b.weights,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        producer_name="graphkiln tools/make_example_model.py",
    )
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    model = build(args.seed)
    onnx.save(model, args.out)
    print(
        f"wrote {os.path.normpath(args.out)}: {len(model.graph.node)} nodes, "
        f"{sum(np.prod(t.dims) for t in model.graph.initializer):.0f} weights"
    )


if __name__ == "__main__":
    main()
