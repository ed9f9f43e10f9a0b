# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln.parse_onnx takes a path (str / os.PathLike), the serialized model (bytes,
bytearray, memoryview) or an onnx.ModelProto; anything else is a TypeError naming those."""

import pathlib

import numpy as np
import onnx
import pytest

import graphkiln
from graphkiln.cli.common import EXAMPLE_MODEL
from graphkiln.ir import print_graph

ACCEPTED = (
    r"expected a path \(str or os.PathLike\), the serialized model \(bytes, bytearray "
    r"or memoryview\) or an onnx.ModelProto"
)


@pytest.fixture(scope="module")
def reference():
    """The IR text and ref outputs of the example model imported from its path."""
    prog = graphkiln.parse_onnx(EXAMPLE_MODEL).compile("ref")
    x = np.random.default_rng(2).standard_normal((1, 3, 32, 32)).astype(np.float32)
    return print_graph(prog.graph), x, prog.run({"image": x})[0]


@pytest.mark.parametrize(
    "kind", ["str", "pathlib", "bytes", "bytearray", "memoryview", "ModelProto"]
)
def test_every_accepted_source_imports_the_same_program(kind, reference):
    text, x, expected = reference
    data = pathlib.Path(EXAMPLE_MODEL).read_bytes()
    source = {
        "str": EXAMPLE_MODEL,
        "pathlib": pathlib.Path(EXAMPLE_MODEL),
        "bytes": data,
        "bytearray": bytearray(data),
        "memoryview": memoryview(data),
        "ModelProto": onnx.load_model_from_string(data),
    }[kind]
    prog = graphkiln.parse_onnx(source, input_shapes={"image": [1, 3, 32, 32]})
    assert print_graph(prog.graph) == text
    assert prog.compile("ref").run({"image": x})[0].tobytes() == expected.tobytes()


def test_a_model_proto_is_not_changed(add_relu_model):
    before = add_relu_model.SerializeToString()
    prog = graphkiln.parse_onnx(add_relu_model, default_dim=None)
    assert repr(prog.get_parameter_shapes()) == "{'x': f32[N,3]}"
    assert add_relu_model.SerializeToString() == before


@pytest.mark.parametrize(
    "source, name",
    [(3, "int"), (None, "NoneType"), (["m.onnx"], "list"), (np.zeros(4, np.uint8), "ndarray")],
)
def test_anything_else_is_a_type_error_naming_what_is_accepted(source, name):
    with pytest.raises(TypeError, match=rf"cannot read an ONNX model from {name}: {ACCEPTED}"):
        graphkiln.parse_onnx(source)


def test_bad_bytes_and_an_empty_model_proto_are_model_errors():
    with pytest.raises(graphkiln.ModelError, match=r"not an ONNX model \(protobuf decoding"):
        graphkiln.parse_onnx(b"\xff\xff\xff not a model")
    with pytest.raises(graphkiln.ModelError, match="the ModelProto has no graph"):
        graphkiln.parse_onnx(onnx.ModelProto())


def test_a_path_given_as_bytes_gets_a_hint():
    with pytest.raises(
        graphkiln.ModelError,
        match=r"bytes are read as a serialized model; pass "
        r"the path b'.*example_cnn.onnx' as str",
    ):
        graphkiln.parse_onnx(EXAMPLE_MODEL.encode())


def test_a_missing_file_is_still_a_model_error_naming_it(tmp_path):
    missing = tmp_path / "missing.onnx"
    with pytest.raises(
        graphkiln.ModelError, match=r"cannot read model '.*missing.onnx': No such file"
    ):
        graphkiln.parse_onnx(missing)


def test_a_model_proto_with_external_data_says_to_load_it_from_its_path(tmp_path):
    model = onnx.load(EXAMPLE_MODEL)
    onnx.save_model(
        model, tmp_path / "m.onnx", save_as_external_data=True, size_threshold=0, location="m.data"
    )
    unloaded = onnx.load(tmp_path / "m.onnx", load_external_data=False)
    with pytest.raises(
        graphkiln.ModelError,
        match="keeps its data in an external file, which is "
        "only read when the model is loaded from a path",
    ):
        graphkiln.parse_onnx(unloaded)
    assert graphkiln.parse_onnx(tmp_path / "m.onnx").get_output_names() == ["probabilities"]
