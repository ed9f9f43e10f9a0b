# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Nodes' decompositions (ir/decomposition.py) are saved (format version 5) and loaded,
checked like any graph; a loaded program uses them when it compiles or plans a shape."""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln as gk
from graphkiln import FormatError
from graphkiln.ir.equality import structural_diff


def _loss_model(batch="N"):
    info = helper.make_tensor_value_info
    graph = helper.make_graph(
        [helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], ignore_index=1)],
        "loss",
        [info("x", TensorProto.FLOAT, [batch, 5, 2]), info("t", TensorProto.INT64, [batch, 2])],
        [info("y", TensorProto.FLOAT, [])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])


def _feeds(batch=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, 5, 2)).astype(np.float32)
    return {"x": x, "t": rng.integers(0, 5, (batch, 2))}


def _loss_node(graph):
    (found,) = [n for n in graph.nodes if n.op == "NegativeLogLikelihoodLoss"]
    return found


@pytest.mark.parametrize("fmt", ["msgpack", "json"])
def test_round_trip_keeps_the_body(fmt):
    program = gk.parse_onnx(_loss_model())
    data = gk.save_buffer(program, fmt)
    body = _loss_node(program.graph).decomposition.body()  # saving built it
    loaded = gk.load_buffer(data)
    again = _loss_node(loaded.graph).decomposition
    assert again.built and structural_diff(again.body(), body) is None
    reference = gk.parse_onnx(_loss_model()).compile("ref")
    loaded.compile("cpu")  # no kernel for the loss: it runs as the loaded body
    for batch in (3, 1):
        feeds = _feeds(batch)
        np.testing.assert_allclose(loaded.run(feeds)[0], reference.run(feeds)[0], rtol=1e-6)


def test_format_version_5_only_with_decompositions():
    with_body = json.loads(gk.save_buffer(gk.parse_onnx(_loss_model()), "json"))
    assert with_body["format_version"] == 5
    relu = helper.make_model(
        helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"])],
            "relu",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        ),
        opset_imports=[helper.make_opsetid("", 22)],
    )
    assert json.loads(gk.save_buffer(gk.parse_onnx(relu), "json"))["format_version"] == 1


def test_compiled_dynamic_program_plans_new_shapes_after_load():
    """Attention with symbolic dims stays one node in the compiled graph (the kernel's
    predicate needs static dims); the loaded program decomposes it per plan."""
    info = helper.make_tensor_value_info
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("Attention", ["q", "k", "v"], ["y", "", "", "qk"])],
        "attention",
        [info(n, f, ["B", 2, s, 8]) for n, s in (("q", 4), ("k", 6), ("v", 6))],
        [info("y", f, None), info("qk", f, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    program = gk.parse_onnx(model).compile("cpu")
    assert any(n.op == "Attention" for n in program.compiled_graph.nodes)
    loaded = gk.load_buffer(gk.save_buffer(program))
    reference = gk.parse_onnx(model).compile("ref")
    rng = np.random.default_rng(1)
    for batch in (2, 5):
        feeds = {
            n: rng.standard_normal((batch, 2, s, 8)).astype(np.float32)
            for n, s in (("q", 4), ("k", 6), ("v", 6))
        }
        for got, want in zip(loaded.run(feeds), reference.run(feeds)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _edit(data: bytes, change) -> bytes:
    doc = json.loads(data)
    change(doc)
    return json.dumps(doc).encode()


def _loss_doc_node(doc):
    (found,) = [n for n in doc["graph"]["nodes"] if n["op"] == "NegativeLogLikelihoodLoss"]
    return found


def test_damaged_decomposition_is_a_format_error():
    data = gk.save_buffer(gk.parse_onnx(_loss_model()), "json")

    def one_output_too_many(doc):
        body = _loss_doc_node(doc)["decomposition"]
        body["outputs"].append(body["outputs"][0])

    with pytest.raises(FormatError, match="makes 2 outputs"):
        gk.load_buffer(_edit(data, one_output_too_many))

    def reads_an_outer_value(doc):  # a body has value ids of its own: 0 is its first input
        body = _loss_doc_node(doc)["decomposition"]
        body["outputs"] = [10_000]

    with pytest.raises(FormatError, match="not defined"):
        gk.load_buffer(_edit(data, reads_an_outer_value))
