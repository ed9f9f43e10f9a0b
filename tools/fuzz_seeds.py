# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Seed models for tools/fuzz_import.py: the example CNN, small models built with onnx.helper
(subgraphs, sparse and string tensors, external-data references, shape-making ops) and a few
ONNX backend node cases (those with subgraphs first)."""

from __future__ import annotations

import os
import random
import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "python", "graphkiln", "models", "example_cnn.onnx")
F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits=(), opset=17, **kw) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "seed", inputs, outputs, list(inits), **kw)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, dims, dtype=F):
    return helper.make_tensor_value_info(name, dtype, dims)


def _add_relu():
    w = numpy_helper.from_array(np.float32([0.5, -2.0, 3.0]), "w")
    return _model(
        [helper.make_node("Add", ["x", "w"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
        [_vi("x", ["N", 3])],
        [_vi("y", ["N", 3])],
        [w],
    )


def _if_capturing_outer():
    then = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["t"])], "then", [], [_vi("t", [2])]
    )
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [_vi("e", [2])])
    return _model(
        [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
        [_vi("c", [], TensorProto.BOOL), _vi("x", [2])],
        [_vi("y", [2])],
    )


def _loop():
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
        ],
        "body",
        [_vi("i", [], TensorProto.INT64), _vi("cond_in", [], TensorProto.BOOL), _vi("acc_in", [2])],
        [_vi("cond_out", [], TensorProto.BOOL), _vi("acc_out", [2])],
    )
    n = numpy_helper.from_array(np.int64(3), "n")
    t = numpy_helper.from_array(np.bool_(True), "t")
    return _model(
        [helper.make_node("Loop", ["n", "t", "x"], ["y"], body=body)],
        [_vi("x", [2])],
        [_vi("y", [2])],
        [n, t],
    )


def _scan():
    body = helper.make_graph(
        [
            helper.make_node("Add", ["s_in", "e"], ["s_out"]),
            helper.make_node("Identity", ["s_out"], ["o"]),
        ],
        "body",
        [_vi("s_in", [2]), _vi("e", [2])],
        [_vi("s_out", [2]), _vi("o", [2])],
    )
    return _model(
        [helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1)],
        [_vi("s0", [2]), _vi("xs", [3, 2])],
        [_vi("s", [2]), _vi("ys", [3, 2])],
    )


def _shape_makers():
    consts = [
        numpy_helper.from_array(np.int64([2, 3]), "shape"),
        numpy_helper.from_array(np.int64([1, 2]), "reps"),
        numpy_helper.from_array(np.int64(0), "start"),
        numpy_helper.from_array(np.int64(5), "limit"),
        numpy_helper.from_array(np.int64(1), "delta"),
    ]
    nodes = [
        helper.make_node(
            "ConstantOfShape", ["shape"], ["z"], value=numpy_helper.from_array(np.float32([1.0]))
        ),
        helper.make_node("Expand", ["x", "shape"], ["e"]),
        helper.make_node("Tile", ["z", "reps"], ["t"]),
        helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
        helper.make_node("Add", ["z", "e"], ["y"]),
    ]
    return _model(
        nodes,
        [_vi("x", [1, 3])],
        [_vi("y", [2, 3]), _vi("t", [2, 6]), _vi("r", [5], TensorProto.INT64)],
        consts,
    )


def _tensor_kinds():
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.float32([1.0, 2.0]), "sp"),
        numpy_helper.from_array(np.int64([1, 4]), "sp_idx"),
        [2, 3],
    )
    words = helper.make_tensor("words", TensorProto.STRING, [2], [b"a", b"bc"])
    half = numpy_helper.from_array(np.float16([1.0, 2.0, 3.0]), "half")
    packed = helper.make_tensor("packed", TensorProto.INT4, [3], [1, -2, 3])
    model = _model(
        [
            helper.make_node("Add", ["x", "sp"], ["y"]),
            helper.make_node("Cast", ["half"], ["h"], to=F),
            helper.make_node("Cast", ["packed"], ["p"], to=F),
            helper.make_node("Identity", ["words"], ["w"]),
            helper.make_node("Constant", [], ["k"], value_floats=[1.0, 2.0]),
        ],
        [_vi("x", [2, 3])],
        [
            _vi("y", [2, 3]),
            _vi("h", [3]),
            _vi("p", [3]),
            _vi("w", [2], TensorProto.STRING),
            _vi("k", [2]),
        ],
        [words, half, packed],
        opset=21,
    )
    model.graph.sparse_initializer.append(sparse)
    return model


def _external_reference():
    w = helper.make_tensor("w", F, [3], [0.0, 0.0, 0.0])
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "w.bin"), ("offset", "0"), ("length", "12")):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    return _model(
        [helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x", [3])], [_vi("y", [3])], [w]
    )


BUILT = {
    "add_relu": _add_relu,
    "if_outer": _if_capturing_outer,
    "loop": _loop,
    "scan": _scan,
    "shape_makers": _shape_makers,
    "tensor_kinds": _tensor_kinds,
    "external_reference": _external_reference,
}


def _node_cases(count: int, seed: int) -> dict[str, bytes]:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()

    def has_subgraph(case):
        return any(
            a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
            for n in case.model.graph.node
            for a in n.attribute
        )

    with_sub = sorted((c for c in cases if has_subgraph(c)), key=lambda c: c.name)
    rest = sorted((c for c in cases if not has_subgraph(c)), key=lambda c: c.name)
    pick = random.Random(seed)
    chosen = pick.sample(with_sub, min(len(with_sub), count // 2))
    chosen += pick.sample(rest, min(len(rest), count - len(chosen)))
    return {f"node:{c.name}": c.model.SerializeToString() for c in chosen}


def seed_models(node_cases: int = 40, seed: int = 0) -> dict[str, bytes]:
    """name -> serialized model."""
    seeds = {"example_cnn": open(EXAMPLE, "rb").read()}
    seeds.update({name: make().SerializeToString() for name, make in BUILT.items()})
    if node_cases:
        seeds.update(_node_cases(node_cases, seed))
    return seeds
