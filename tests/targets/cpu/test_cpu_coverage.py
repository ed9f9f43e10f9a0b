# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The 43 op types of common CNN and transformer exports (../shared/REFERENCE.md) run
natively on cpu: each in a one-node model over graph inputs (weights as initializers where
a kernel packs them), compiled WITHOUT fallback and checked against ref. Ops the passes
fold or rewrite (Constant, Shape, ConstantOfShape, BatchNormalization, Dropout) are also
checked on the IR: lowered directly, or shown to be gone from the compiled graph."""

import numpy as np
import pytest
from onnx import numpy_helper

import graphkiln as gk
from graphkiln.ir import DType, Graph, TensorType
from graphkiln.targets.native.lower_support import node_supported
from graphkiln.targets.cpu.table import SUPPORT
from graphkiln.targets.cpu.target import CpuExecutable

from cpu_testing import check_cpu, node, onnx_model, rand

F = np.float32
X = rand((2, 3, 4, 5), seed=1)
Y = rand((2, 3, 4, 5), seed=2)
I64 = np.int64


def _nan(x):
    x = x.copy()
    x.reshape(-1)[::3] = np.nan
    return x


# op -> (nodes, inputs {name: array}, output names, initializers, tolerance)
CASES = {
    "Add": ([node("Add", ["x", "y"], ["z"])], {"x": X, "y": Y}),
    "And": (
        [node("And", ["x", "y"], ["z"])],
        {"x": rand((3, 7), 1, np.bool_), "y": rand((3, 7), 2, np.bool_)},
    ),
    "AveragePool": (
        [node("AveragePool", ["x"], ["z"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])],
        {"x": rand((1, 4, 9, 9), 3)},
    ),
    "BatchNormalization": (
        [node("BatchNormalization", ["x", "s", "b", "m", "v"], ["z"])],
        {"x": X},
        {"s": rand((3,), 4), "b": rand((3,), 5), "m": rand((3,), 6), "v": rand((3,), 7, low=0.5)},
    ),
    "Cast": (
        [node("Cast", ["x"], ["z"], to=6)],
        {"x": rand((3, 7), 8, low=-50, high=50)},
        None,
        {"z": np.int32},
    ),
    "Concat": ([node("Concat", ["x", "y"], ["z"], axis=1)], {"x": X, "y": Y}),
    "Constant": (
        [
            node("Constant", [], ["c"], value=numpy_helper.from_array(rand((5,), 29))),
            node("Add", ["x", "c"], ["z"]),
        ],
        {"x": X},
    ),
    # folded by the passes in a model (so the Add runs); lowered from IR below
    "ConstantOfShape": (
        [
            node(
                "ConstantOfShape", ["s"], ["c"], value=numpy_helper.from_array(np.array([1.5], F))
            ),
            node("Add", ["x", "c"], ["z"]),
        ],
        {"x": X},
        {"s": np.array([4, 5], I64)},
    ),
    "Conv": (
        [node("Conv", ["x", "w", "b"], ["z"], pads=[1, 1, 1, 1])],
        {"x": rand((1, 3, 8, 8), 9)},
        {"w": rand((4, 3, 3, 3), 10), "b": rand((4,), 11)},
    ),
    "Div": ([node("Div", ["x", "y"], ["z"])], {"x": X, "y": Y + 2}),
    "Dropout": ([node("Dropout", ["x"], ["z"])], {"x": X}),
    "Equal": (
        [node("Equal", ["x", "y"], ["z"])],
        {"x": rand((3, 7), 12, I64, 0, 3), "y": rand((3, 7), 13, I64, 0, 3)},
    ),
    "Erf": ([node("Erf", ["x"], ["z"])], {"x": X * 3}),
    "Expand": (
        [node("Expand", ["x", "s"], ["z"])],
        {"x": rand((3, 1), 14)},
        {"s": np.array([2, 3, 4], I64)},
    ),
    "Flatten": ([node("Flatten", ["x"], ["z"], axis=2)], {"x": X}),
    "Gather": (
        [node("Gather", ["x", "i"], ["z"], axis=1)],
        {"x": X, "i": np.array([[2, -1], [0, 1]], I64)},
    ),
    "GatherElements": (
        [node("GatherElements", ["x", "i"], ["z"], axis=-1)],
        {"x": X, "i": rand((2, 3, 4, 6), 15, I64, -5, 5)},
    ),
    "Gemm": (
        [node("Gemm", ["x", "w", "b"], ["z"], transB=1)],
        {"x": rand((4, 16), 16)},
        {"w": rand((8, 16), 17), "b": rand((8,), 18)},
    ),
    "GlobalAveragePool": ([node("GlobalAveragePool", ["x"], ["z"])], {"x": X}),
    "GreaterOrEqual": ([node("GreaterOrEqual", ["x", "y"], ["z"])], {"x": X, "y": Y}),
    "HardSigmoid": ([node("HardSigmoid", ["x"], ["z"])], {"x": X * 4}),
    "HardSwish": ([node("HardSwish", ["x"], ["z"])], {"x": X * 4}),
    "Identity": ([node("Identity", ["x"], ["z"])], {"x": X}),
    "IsNaN": ([node("IsNaN", ["x"], ["z"])], {"x": _nan(X)}),
    "LayerNormalization": (
        [node("LayerNormalization", ["x", "s", "b"], ["z"], axis=-1)],
        {"x": rand((2, 5, 16), 19)},
        {"s": rand((16,), 20), "b": rand((16,), 21)},
    ),
    "MatMul": (
        [node("MatMul", ["x", "y"], ["z"])],
        {"x": rand((2, 3, 4), 22), "y": rand((2, 4, 5), 23)},
    ),
    "MaxPool": (
        [node("MaxPool", ["x"], ["z"], kernel_shape=[2, 2], strides=[2, 2])],
        {"x": rand((1, 4, 8, 8), 24)},
    ),
    "Mod": (
        [node("Mod", ["x", "y"], ["z"])],
        {"x": rand((3, 7), 25, I64, -50, 50), "y": rand((3, 7), 26, I64, 1, 9)},
    ),
    "Mul": ([node("Mul", ["x", "y"], ["z"])], {"x": X, "y": Y}),
    "Pow": ([node("Pow", ["x", "y"], ["z"])], {"x": X + 2, "y": Y * 2}),
    "Relu": ([node("Relu", ["x"], ["z"])], {"x": X}),
    "Reshape": ([node("Reshape", ["x", "s"], ["z"])], {"x": X}, {"s": np.array([6, -1], I64)}),
    "Shape": (
        [node("Shape", ["x"], ["s"], start=1), node("Reshape", ["y", "s"], ["z"])],
        {"x": X, "y": rand((60,), 32)},
    ),
    "Sigmoid": ([node("Sigmoid", ["x"], ["z"])], {"x": X * 4}),
    "Slice": (
        [node("Slice", ["x", "a", "b", "c", "d"], ["z"])],
        {"x": X},
        {
            "a": np.array([1, -1], I64),
            "b": np.array([3, -100], I64),
            "c": np.array([2, 3], I64),
            "d": np.array([1, -2], I64),
        },
    ),
    "Softmax": ([node("Softmax", ["x"], ["z"], axis=-1)], {"x": X * 3}),
    "Split": ([node("Split", ["x"], ["z", "w"], axis=2, num_outputs=2)], {"x": X}),
    "Sqrt": ([node("Sqrt", ["x"], ["z"])], {"x": X + 1.5}),
    "Squeeze": (
        [node("Squeeze", ["x", "a"], ["z"])],
        {"x": rand((2, 1, 5), 27)},
        {"a": np.array([1], I64)},
    ),
    "Tanh": ([node("Tanh", ["x"], ["z"])], {"x": X * 3}),
    "Transpose": ([node("Transpose", ["x"], ["z"], perm=[0, 2, 3, 1])], {"x": X}),
    "Unsqueeze": ([node("Unsqueeze", ["x", "a"], ["z"])], {"x": X}, {"a": np.array([0, -1], I64)}),
    "Where": (
        [node("Where", ["c", "x", "y"], ["z"])],
        {"c": rand((2, 3, 4, 5), 28, np.bool_), "x": X, "y": Y},
    ),
}


def _model(op):
    case = CASES[op]
    nodes, feeds = case[0], case[1]
    inits = case[2] if len(case) > 2 and case[2] else {}
    dtypes = {k: v.dtype for k, v in feeds.items()}
    dtypes.update(case[3] if len(case) > 3 else {})
    outs = [o for n in nodes for o in n.output if o in ("z", "w")]
    return onnx_model(
        nodes, {k: v.shape for k, v in feeds.items()}, {o: None for o in outs}, inits, dtypes=dtypes
    ), feeds


def test_43_op_types():
    assert len(CASES) == 43


@pytest.mark.parametrize("op", sorted(CASES))
def test_op_runs_natively(op):
    model, feeds = _model(op)
    program = gk.parse_onnx_buffer(model).compile("cpu")  # no fallback: every node lowers
    assert program._executable.plan_summary().get("ref_nodes", 0) == 0
    check_cpu(model, feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["BatchNormalization", "Dropout"])
def test_passes_rewrite(op):
    model, _ = _model(op)
    program = gk.parse_onnx_buffer(model).compile("cpu")
    assert all(n.op != op for n in program.compiled_graph.nodes)


# -- the ops the passes fold, lowered straight from IR -------------------------------------
def _ir(op, inputs: dict, consts: dict, attrs: dict):
    from graphkiln.targets.ref.target import evaluate

    g = Graph()
    args = [
        g.add_input(k, TensorType(DType.from_numpy(a.dtype), a.shape)) for k, a in inputs.items()
    ]
    args += [g.constant(a, k) for k, a in consts.items()]
    n = g.add_node(op, args, attrs)
    assert node_supported(n, SUPPORT), op
    g.outputs = list(n.outputs)
    cpu = CpuExecutable(g, False).run(list(inputs.values()))
    ref = evaluate(n, [*inputs.values(), *consts.values()])
    for c, r in zip(cpu, ref):
        r = np.asarray(r)
        assert c.dtype == r.dtype and c.shape == r.shape
        np.testing.assert_array_equal(c, r)


def test_shape_lowers():
    _ir("Shape", {"x": X}, {}, {"start": -3, "end": None})


def test_constant_of_shape_lowers():
    _ir("ConstantOfShape", {}, {"s": np.array([2, 3], I64)}, {"value": np.array([4], np.int32)})


def test_constant_is_a_plan_constant():
    g = Graph()
    g.add_input("x", TensorType(DType.f32, (5,)))
    c = g.constant(rand((5,), 30), "c")
    n = g.add_node("Identity", [c], {})
    g.outputs = [n.outputs[0]]
    (out,) = CpuExecutable(g, False).run([rand((5,), 31)])
    np.testing.assert_array_equal(out, c.constant)
