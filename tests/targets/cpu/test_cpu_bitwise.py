# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""BitwiseAnd / Or / Xor / Not and BitShift on cpu (kernels "Bitwise", "BitwiseNot"),
exact in every integer type, with broadcasting, against ref."""

import numpy as np
import pytest
from onnx import helper

from cpu_testing import check_cpu, node

TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def _model(nodes, inputs, outputs, opset=21):
    def info(name, spec):
        shape, dtype = spec
        return helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape
        )

    graph = helper.make_graph(
        nodes,
        "t",
        [info(k, v) for k, v in inputs.items()],
        [info(k, v) for k, v in outputs.items()],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)]
    ).SerializeToString()


def _ints(shape, dtype, seed):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize(
    "shapes", [((3, 4, 5), (3, 4, 5)), ((2, 3, 4, 5), (4, 5)), ((3, 1, 5), (1, 4, 1)), ((), (6,))]
)
def test_bitwise_binary(op, dtype, shapes):
    a_shape, b_shape = shapes
    out = np.broadcast_shapes(a_shape, b_shape)
    model = _model(
        [node(op, ["a", "b"], ["y"])],
        {"a": (a_shape, dtype), "b": (b_shape, dtype)},
        {"y": (out, dtype)},
    )
    check_cpu(model, {"a": _ints(a_shape, dtype, 1), "b": _ints(b_shape, dtype, 2)})


@pytest.mark.parametrize("dtype", TYPES)
def test_bitwise_not(dtype):
    model = _model(
        [node("BitwiseNot", ["a"], ["y"])], {"a": ((3, 7, 5), dtype)}, {"y": ((3, 7, 5), dtype)}
    )
    check_cpu(model, {"a": _ints((3, 7, 5), dtype, 3)})


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bitshift(dtype, direction):
    bits = np.dtype(dtype).itemsize * 8
    x = _ints((4, 70), dtype, 4)
    # amounts cover 0..bits+5 and, for signed types, negative ones
    low = -3 if np.issubdtype(dtype, np.signedinteger) else 0
    amounts = np.random.default_rng(5).integers(low, bits + 6, size=(70,)).astype(dtype)
    model = _model(
        [node("BitShift", ["x", "s"], ["y"], direction=direction)],
        {"x": ((4, 70), dtype), "s": ((70,), dtype)},
        {"y": ((4, 70), dtype)},
    )
    check_cpu(model, {"x": x, "s": amounts})


def test_bitshift_large_tensor_parallel():
    x = _ints((300, 257), np.uint32, 6)
    s = (np.arange(257) % 33).astype(np.uint32).reshape(1, 257)
    model = _model(
        [node("BitShift", ["x", "s"], ["y"], direction="LEFT")],
        {"x": ((300, 257), np.uint32), "s": ((1, 257), np.uint32)},
        {"y": ((300, 257), np.uint32)},
    )
    check_cpu(model, {"x": x, "s": s})
