# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Bugs tools/fuzz_import.py found, each now a ModelError that says what is wrong."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import graphkiln
from conftest import make_model

F = TensorProto.FLOAT


def test_enormous_opset_version_of_another_domain_is_a_model_error():
    # was: TypeError from onnx.defs.get_schema while looking for a function body
    model = make_model(
        [helper.make_node("FlexAttention", ["x"], ["y"], domain="ai.onnx.preview")],
        [helper.make_tensor_value_info("x", F, [2])],
        [helper.make_tensor_value_info("y", F, [2])],
    )
    model.opset_import.append(helper.make_opsetid("ai.onnx.preview", 2**62))
    with pytest.raises(
        graphkiln.ModelError, match="'ai.onnx.preview' has version 4611686018427387904"
    ):
        graphkiln.parse_onnx_buffer(model.SerializeToString())


def _scan_model(**attrs):
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "e"], ["t"])],
        "body",
        [helper.make_tensor_value_info("s_in", F, [2]), helper.make_tensor_value_info("e", F, [2])],
        [helper.make_tensor_value_info("t", F, [2])],
    )
    node = helper.make_node("Scan", ["s0", "xs"], ["s"], body=body, **attrs)
    model = make_model(
        [node],
        [
            helper.make_tensor_value_info("s0", F, [2]),
            helper.make_tensor_value_info("xs", F, [3, 2]),
        ],
        [helper.make_tensor_value_info("s", F, [2])],
    )
    return model, node


def test_attribute_of_the_wrong_kind_is_a_model_error():
    # was: TypeError while typing the Scan body's inputs (num_scan_inputs given as ints)
    model, _ = _scan_model(num_scan_inputs=1)
    num = next(a for a in model.graph.node[0].attribute if a.name == "num_scan_inputs")
    num.type = onnx.AttributeProto.INTS
    num.ints.extend([1, 1])
    with pytest.raises(
        graphkiln.ModelError, match="attribute 'num_scan_inputs' is INTS, ONNX defines it as INT"
    ):
        graphkiln.parse_onnx_buffer(model.SerializeToString())


def test_scan_with_more_scan_inputs_than_inputs_is_refused_before_allocating():
    # was: a tuple of num_scan_inputs zeros (MemoryError, or gigabytes for 2**30)
    model, _ = _scan_model(num_scan_inputs=2**40)
    with pytest.raises(
        graphkiln.ModelError, match="num_scan_inputs=1099511627776, but the node has 2"
    ):
        graphkiln.parse_onnx_buffer(model.SerializeToString())


def test_range_with_zero_delta_is_a_model_error():
    # was: ZeroDivisionError in shape inference, wrapped without saying what was wrong
    consts = [numpy_helper.from_array(np.int64(v), n) for n, v in (("a", 0), ("b", 5), ("c", 0))]
    model = make_model(
        [helper.make_node("Range", ["a", "b", "c"], ["y"])],
        [],
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)],
        consts,
    )
    with pytest.raises(graphkiln.ModelError, match="non-zero delta"):
        graphkiln.parse_onnx_buffer(model.SerializeToString())
