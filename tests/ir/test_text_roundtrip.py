# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The printer's text parses back to the same graph."""

import numpy as np
import pytest

from graphkiln.errors import ParseError
from graphkiln.ir import DType, Graph, TensorType, parse_graph, print_graph

TEXT = """\
graph main(%x: f32[N,3], %"odd:name": i64[2]) {
  %w: f32[3] = Constant() {value = tensor<f32[3]> [0.5, -2.0, inf]}
  %s: f32[N,3] = Add(%x, %w)
  %y: f32[N,3] = Relu(%s) loc("relu node")
  return %y, %"odd:name"
}
"""


def test_text_parses_and_prints_back_identically():
    graph = parse_graph(TEXT)
    assert print_graph(graph) == TEXT
    assert graph.inputs[0].type == TensorType(DType.f32, ("N", 3))
    assert graph.nodes[2].name == "relu node"


def test_large_and_typed_constants_round_trip(rng):
    g = Graph()
    big = rng.standard_normal((4, 40)).astype(np.float16)
    small_int = rng.integers(-(2**40), 2**40, size=5).astype(np.int64)
    strings = np.array(["a", 'quote " and \\ back', "ü"], dtype=object)
    outs = [g.constant(a) for a in (big, small_int, strings, np.array(True))]
    g.outputs = outs
    back = parse_graph(print_graph(g))
    for node, original in zip(back.nodes, (big, small_int, strings, np.array(True))):
        value = node.attrs["value"]
        assert value.dtype == original.dtype and value.shape == original.shape
        assert np.array_equal(value, original)
    assert 'b64"' in print_graph(g)  # 160 elements > inline limit


def test_subgraph_attribute_round_trips():
    text = """\
graph main(%c: bool[], %x: f32[2]) {
  %y: f32[2] = If(%c) {
    then_branch = graph then() {
      %a: f32[2] = Relu(%x)
      return %a
    },
    else_branch = graph else() {
      %b: f32[2] = Identity(%x)
      return %b
    }
  }
  return %y
}
"""
    assert print_graph(parse_graph(text)) == text


@pytest.mark.parametrize(
    "text, message",
    [
        ("graph g(%x: f32[2]) {\n  %y = Relu(%z)\n  return %y\n}", "used before it is defined"),
        ("graph g(%x: f32[2]) {\n  %y = NoSuchOp(%x)\n  return %y\n}", "unknown op"),
        ("graph g(%x: q7[2]) {\n  return %x\n}", "unknown element type"),
        ("graph g(%x: f32[2]) {\n  %y = Relu(%x) {alpha = 1.0}\n  return %y\n}", "no attribute"),
        ("graph g(%x: f32[2]) {\n  %x = Relu(%x)\n  return %x\n}", "defined twice"),
    ],
)
def test_bad_text_raises_parse_error_with_position(text, message):
    with pytest.raises(ParseError, match=message) as info:
        parse_graph(text)
    assert "line" in str(info.value)
