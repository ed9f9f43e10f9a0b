# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Deeply nested subgraphs, very long node chains and cycles: refused cleanly or handled,
never a RecursionError or a stack overflow."""

import onnx
import pytest
from onnx import TensorProto, helper

import graphkiln
from graphkiln.frontends.onnx import importer
from conftest import make_model

F = TensorProto.FLOAT


def _nested_ifs(depth: int) -> onnx.ModelProto:
    """If inside If ... `depth` levels, built in place (onnx.helper copies would reparse)."""
    model = make_model(
        [],
        [
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", F, [2]),
        ],
        [],
    )
    out = helper.make_tensor_value_info("y", F, [2])
    leaf = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "leaf", [], [out])
    graph = model.graph
    for level in range(depth):
        graph.output.add().CopyFrom(out)
        node = graph.node.add(op_type="If", input=["c"], output=["y"])
        node.attribute.add(name="else_branch", type=onnx.AttributeProto.GRAPH).g.CopyFrom(leaf)
        graph = node.attribute.add(name="then_branch", type=onnx.AttributeProto.GRAPH).g
        graph.name = f"level{level}"
    graph.CopyFrom(leaf)
    return model


def test_moderately_nested_ifs_import():
    prog = graphkiln.parse_onnx_buffer(_nested_ifs(20).SerializeToString())
    assert prog.get_output_names() == ["y"]


def test_thousand_nested_ifs_from_bytes_are_a_model_error():
    with pytest.raises(
        graphkiln.ModelError, match="nests messages .* deeper than protobuf decodes"
    ):
        graphkiln.parse_onnx_buffer(_nested_ifs(1000).SerializeToString())


def test_thousand_nested_ifs_hit_the_subgraph_depth_limit():
    with pytest.raises(graphkiln.ModelError, match="nested more than 64 levels deep"):
        importer.import_model(_nested_ifs(1000))


def test_recursion_error_is_turned_into_a_model_error(monkeypatch):
    monkeypatch.setattr(importer, "MAX_SUBGRAPH_DEPTH", 10**6)  # the limit gone: last resort
    with pytest.raises(graphkiln.ModelError, match="nests too deeply to import"):
        importer.import_model(_nested_ifs(1000))


def test_hundred_thousand_node_chain_in_reverse_order_imports():
    n = 100_000
    graph = onnx.GraphProto(name="chain")
    graph.input.append(helper.make_tensor_value_info("v0", F, [2]))
    graph.output.append(helper.make_tensor_value_info(f"v{n}", F, [2]))
    for i in reversed(range(n)):  # consumers first: ordering walks the whole chain
        graph.node.add(op_type="Relu", input=[f"v{i}"], output=[f"v{i + 1}"])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    assert len(prog.graph.nodes) == n and prog.graph.nodes[0].inputs[0].name == "v0"


def test_self_loop_is_a_cycle():
    model = make_model(
        [helper.make_node("Add", ["x", "y"], ["y"], name="loopy")],
        [helper.make_tensor_value_info("x", F, [2])],
        [helper.make_tensor_value_info("y", F, [2])],
    )
    with pytest.raises(graphkiln.ModelError, match="cycle through node 'loopy'"):
        graphkiln.parse_onnx_buffer(model.SerializeToString())
