# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Tiny one-node models of onnxruntime's com.microsoft MatMulNBits (weight-only int4 /
int8 MatMul) with seeded feeds: part of microsoft_models.py's CASES (nbits_cases), so
test_microsoft_ops.py and tools/record_microsoft_ops.py use them as the other cases.
Any bytes are a valid packed weight: B and the packed zero points are random uint8, the
scales random positive floats, all initializers; A is the feed."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"
SEED = 20251204  # its own generator, so that other families' draws do not move these


def _model(name, rng, a_shape, n, bits, block_size, zero, with_bias):
    k = a_shape[-1]
    k_blocks = -(-k // block_size)
    a = rng.uniform(-1.0, 1.0, size=a_shape).astype(np.float32)
    consts = {
        "B": rng.integers(0, 256, size=(n, k_blocks, block_size * bits // 8), dtype=np.uint8),
        "scales": rng.uniform(0.01, 0.1, size=n * k_blocks).astype(np.float32),
    }
    inputs = ["a", "B", "scales", "", "", ""]
    if zero == "packed":
        consts["zp"] = rng.integers(0, 256, size=n * -(-k_blocks * bits // 8), dtype=np.uint8)
    elif zero == "float":
        top = (1 << bits) - 1
        consts["zp"] = rng.uniform(0, top, size=n * k_blocks).astype(np.float32)
    if zero != "none":
        inputs[3] = "zp"
    if with_bias:
        consts["bias"] = rng.uniform(-1.0, 1.0, size=n).astype(np.float32)
        inputs[5] = "bias"
    while inputs[-1] == "":
        inputs.pop()
    attrs = {"K": k, "N": n, "bits": bits, "block_size": block_size, "accuracy_level": 0}
    node = helper.make_node("MatMulNBits", inputs, ["y"], domain=MS, **attrs)
    graph = helper.make_graph(
        [node],
        name,
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, a_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, key) for key, v in consts.items()],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8), {"a": a}


# name -> (A shape, N, bits, block_size, zero points: none / packed / float, bias)
FORMS = {
    "matmul_nbits_4bit": ((3, 32), 5, 4, 16, "none", False),
    "matmul_nbits_4bit_zp_bias": ((2, 3, 45), 7, 4, 32, "packed", True),
    "matmul_nbits_4bit_float_zp": ((4, 70), 6, 4, 64, "float", False),
    "matmul_nbits_4bit_odd_blocks": ((3, 80), 9, 4, 16, "packed", False),
    "matmul_nbits_8bit": ((2, 2, 64), 5, 8, 32, "none", True),
    "matmul_nbits_8bit_zp": ((5, 130), 3, 8, 128, "packed", False),
}


def nbits_cases() -> dict[str, tuple[onnx.ModelProto, dict]]:
    rng = np.random.default_rng(SEED)
    return {name: _model(name, rng, *form) for name, form in FORMS.items()}
