# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Programs the serialization tests save and load, and how their outputs are compared."""

from __future__ import annotations

import os
import sys

import ml_dtypes
import numpy as np

import graphkiln
from graphkiln.ir import DType, Graph, OptionalType, SequenceType, TensorType

CONFORMANCE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conformance"
)


def node_cases():
    """tests/conformance/node_cases.py (all_cases, to_value)."""
    if CONFORMANCE not in sys.path:
        sys.path.insert(0, CONFORMANCE)
    import node_cases as module

    return module


def array_of(dtype: DType, rng: np.random.Generator) -> np.ndarray:
    """A small array of every element type, with the awkward values each can hold."""
    if dtype is DType.str:
        return np.array([["plain", "ünïcode"], ["\udcff surrogate", ""]], dtype=object)
    if dtype is DType.bool:
        return np.array([True, False, True])
    if dtype in (DType.c64, DType.c128):
        return (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(dtype.numpy)
    if dtype in (DType.i4, DType.u4, DType.i2, DType.u2):
        info = ml_dtypes.iinfo(dtype.numpy)
        return np.arange(int(info.min), int(info.max) + 1).astype(dtype.numpy)
    if dtype.is_int:
        info = np.iinfo(dtype.numpy)
        return np.array([info.min, 0, 1, info.max], dtype=dtype.numpy).reshape(2, 2)
    values = rng.standard_normal((2, 3)).astype(np.float32)
    if dtype is DType.f8e8m0:  # powers of two only, no sign, no zero
        return (np.abs(values) + 0.5).astype(dtype.numpy)
    values[0, 0] = -0.0
    if dtype in (DType.f32, DType.f64, DType.f16, DType.bf16, DType.f8e5m2):
        values[0, 1] = np.inf
    if dtype is DType.f32:  # a NaN with a payload must come back bit for bit
        values.reshape(-1)[2:3].view(np.uint32)[0] = 0x7FC0_1234
    return values.astype(dtype.numpy)


def every_kind_program(compile_it: bool = True) -> tuple[graphkiln.Program, dict]:
    """A graph with every attribute kind, every dtype as a constant, symbolic dims, node
    names, omitted optional inputs and outputs, sequence and optional values, an untyped
    value and an If whose branches capture outer values. Returns it and feeds for it."""
    rng = np.random.default_rng(3)
    g = Graph("main")
    x = g.add_input("x", TensorType(DType.f32, ("N", 4)))
    k = g.add_input("k", TensorType(DType.i64, (1,)))
    cond = g.add_input("cond", TensorType(DType.bool, ()))
    outputs = [g.constant(array_of(d, rng), f"c_{d.value}") for d in DType]
    outputs.append(g.constant(np.array([b"raw \x00\xff bytes", "text"], dtype=object), "bytes"))
    outputs.append(g.constant(np.zeros((0, 3), np.float32), "empty"))
    outputs.append(g.constant(np.float64(2.5), "scalar"))
    leaky = g.add_node("LeakyRelu", [x], {"alpha": 0.125}, name="leaky").outputs[0]
    cast = g.add_node("Cast", [leaky], {"to": DType.f16, "saturate": 1}, name="to_half").outputs[0]
    perm = g.add_node("Transpose", [leaky], {"perm": (1, 0)}).outputs[0]
    values, _ = g.add_node(
        "TopK",
        [leaky, k],
        {"axis": -1, "largest": 1},
        num_outputs=2,
        output_names=["top", None],
        name="topk",
    ).outputs
    dropped = g.add_node("Dropout", [leaky, None, None], output_names=["dropped", None]).outputs[0]
    seq = g.add("SequenceConstruct", leaky, x)
    optional = g.add("Optional", k)
    untyped = g.add_node("Identity", [x], output_names=["untyped"], infer=False).outputs[0]
    then_branch, else_branch = Graph("then_branch", g), Graph("else_branch", g)
    then_branch.outputs = [then_branch.add("Add", x, leaky)]
    else_branch.outputs = [else_branch.add("Mul", x, g.constant(np.float32(3.0), "three"))]
    chosen = g.add_node(
        "If",
        [cond],
        {"then_branch": then_branch, "else_branch": else_branch},
        output_names=["chosen"],
        name="branch",
    ).outputs[0]
    lstm_x = g.constant(rng.standard_normal((2, 1, 3)).astype(np.float32), "lstm_x")
    lstm_w = g.constant(rng.standard_normal((1, 8, 3)).astype(np.float32), "lstm_w")
    lstm_r = g.constant(rng.standard_normal((1, 8, 2)).astype(np.float32), "lstm_r")
    lstm = g.add_node(
        "LSTM",
        [lstm_x, lstm_w, lstm_r],
        {
            "hidden_size": 2,
            "activations": ("Sigmoid", "Tanh", "Tanh"),
            "activation_alpha": (1.0, 0.5, 0.25),
            "activation_beta": (0.0, 0.0, 0.0),
        },
        output_names=["lstm_y", None, None],
    ).outputs[0]
    g.outputs = outputs + [cast, perm, values, dropped, seq, optional, untyped, chosen, lstm]
    program = graphkiln.Program(g)
    if compile_it:
        program.compile("ref")
    feeds = {
        "x": rng.standard_normal((3, 4)).astype(np.float32),
        "k": np.array([2]),
        "cond": np.array(True),
    }
    return program, feeds


def types_program() -> graphkiln.Program:
    """Inputs of nested sequence / optional / unknown-rank types (not run)."""
    g = Graph("types")
    g.add_input("s", SequenceType(TensorType(DType.f32, None)))
    g.add_input("o", OptionalType(SequenceType(TensorType(DType.i64, ("B", 2)))))
    g.add_input("q", TensorType(DType.f8e5m2, (0, "_d1", 7)))
    g.outputs = list(g.inputs)
    return graphkiln.Program(g)


def identical(a, b) -> bool:
    """Same structure, dtypes, shapes and bytes (NaN payloads included)."""
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(identical, a, b))
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == object:
        return a.tolist() == b.tolist() and [type(v) for v in a.flat] == [type(v) for v in b.flat]
    return a.tobytes() == b.tobytes()
