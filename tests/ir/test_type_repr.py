# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Value types read as the IR text form wherever Python shows them (repr in dicts and lists),
and that text parses back to the same type."""

import pytest

import graphkiln
from graphkiln.cli.common import EXAMPLE_MODEL
from graphkiln.ir import DType, OptionalType, SequenceType, TensorType, parse_graph, print_graph

f32, i64 = TensorType(DType.f32, (1, 3, 224, 224)), TensorType(DType.i64, ("N", 2))


@pytest.mark.parametrize(
    "value_type, text",
    [
        (f32, "f32[1,3,224,224]"),
        (i64, "i64[N,2]"),
        (TensorType(DType.f32, None), "f32[*]"),
        (TensorType(DType.bool, ()), "bool[]"),
        (TensorType(DType.f16, ("batch", 0)), "f16[batch,0]"),
        (SequenceType(i64), "seq<i64[N,2]>"),
        (OptionalType(SequenceType(f32)), "opt<seq<f32[1,3,224,224]>>"),
    ],
)
def test_repr_is_the_ir_text_and_parses_back(value_type, text):
    assert repr(value_type) == text
    assert str(value_type) == text
    assert repr({"x": value_type}) == f"{{'x': {text}}}"
    graph = parse_graph(f"graph g(%x: {value_type!r}) {{\n  return %x\n}}\n")
    assert graph.inputs[0].type == value_type
    assert f"%x: {text}" in print_graph(graph)


def test_program_shapes_print_as_the_ir():
    prog = graphkiln.parse_onnx(EXAMPLE_MODEL)
    assert repr(prog.get_parameter_shapes()) == "{'image': f32[1,3,32,32]}"
    assert repr(prog.get_output_shapes()) == "[f32[1,10]]"
    assert str(prog.get_output_shapes()) == "[f32[1,10]]"


def test_symbolic_dims_print_by_name(add_relu_model):
    prog = graphkiln.parse_onnx_buffer(add_relu_model.SerializeToString(), default_dim=None)
    assert repr(prog.get_parameter_shapes()) == "{'x': f32[N,3]}"
    assert repr(prog.get_output_shapes()) == "[f32[N,3]]"
