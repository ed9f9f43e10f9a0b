# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The op table, attribute checks, broadcasting and dtype mapping."""

import numpy as np
import pytest

from graphkiln.errors import GraphError
from graphkiln.ir import DType, Graph, TensorType, all_schemas
from graphkiln.ir.infer import broadcast_dims


def test_every_schema_has_inference():
    missing = [name for name, s in all_schemas().items() if s.infer is None]
    assert not missing, f"ops without shape inference: {missing}"


def test_broadcast_of_static_and_symbolic_dims():
    assert broadcast_dims((2, 1, 4), (3, 1)) == (2, 3, 4)
    assert broadcast_dims(("N", 3), (1, 3)) == ("N", 3)
    assert broadcast_dims(("N", 1), (5,)) == ("N", 5)
    assert broadcast_dims((2, 3), None) is None
    with pytest.raises(GraphError, match="broadcast"):
        broadcast_dims((2, 3), (4, 3))


def test_add_node_infers_types_and_checks_attributes():
    g = Graph()
    x = g.add_input("x", TensorType(DType.f32, ("N", 3)))
    w = g.constant(np.ones((1, 3), np.float32))
    y = g.add("Add", x, w)
    assert y.type == TensorType(DType.f32, ("N", 3))
    with pytest.raises(GraphError, match="no attribute 'alpha'"):
        g.add("Relu", y, alpha=0.1)
    with pytest.raises(GraphError, match="takes 2..2 inputs"):
        g.add("Add", x)


@pytest.mark.parametrize("dtype", list(DType))
def test_dtype_maps_round_trip(dtype):
    assert DType.from_onnx(dtype.onnx) is dtype
    if dtype is not DType.str:
        assert DType.from_numpy(dtype.numpy) is dtype


def test_graph_verify_finds_use_before_definition():
    g = Graph()
    x = g.add_input("x", TensorType(DType.f32, (2,)))
    y = g.add("Relu", x)
    z = g.add("Relu", y)
    g.nodes.reverse()
    g.outputs = [z]
    with pytest.raises(GraphError, match="not defined before use"):
        g.verify()
