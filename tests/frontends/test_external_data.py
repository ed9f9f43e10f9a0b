# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""External tensor data: read from the model's folder, refused anywhere else."""

import os

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model


def _model_with_external(location: str, offset: int = 0, length: int = 12):
    w = helper.make_tensor("w", TensorProto.FLOAT, [3], [0.0, 0.0, 0.0])
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    return make_model(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        [w],
    )


def _write(folder, name, model):
    path = os.path.join(folder, name)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


def test_external_data_in_model_folder_is_read(tmp_path, rng):
    weights = rng.standard_normal(3).astype(np.float32)
    (tmp_path / "weights.bin").write_bytes(b"PAD!" + weights.tobytes())
    path = _write(tmp_path, "m.onnx", _model_with_external("weights.bin", offset=4))
    x = rng.standard_normal(3).astype(np.float32)
    (y,) = graphkiln.parse_onnx(path).compile("ref").run({"x": x})
    np.testing.assert_array_equal(y, x + weights)


def test_parent_directory_location_is_refused(tmp_path):
    (tmp_path / "secret.bin").write_bytes(b"\0" * 12)
    sub = tmp_path / "model"
    sub.mkdir()
    path = _write(sub, "m.onnx", _model_with_external("../secret.bin"))
    with pytest.raises(graphkiln.ModelError, match="outside the model's folder"):
        graphkiln.parse_onnx(path)


def test_absolute_location_is_refused(tmp_path):
    (tmp_path / "w.bin").write_bytes(b"\0" * 12)
    path = _write(tmp_path, "m.onnx", _model_with_external(str(tmp_path / "w.bin")))
    with pytest.raises(graphkiln.ModelError, match="absolute"):
        graphkiln.parse_onnx(path)


def test_symlink_escaping_the_folder_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "w.bin").write_bytes(b"\0" * 12)
    sub = tmp_path / "model"
    sub.mkdir()
    os.symlink(outside / "w.bin", sub / "w.bin")
    path = _write(sub, "m.onnx", _model_with_external("w.bin"))
    with pytest.raises(graphkiln.ModelError, match="outside the model's folder"):
        graphkiln.parse_onnx(path)


def test_range_past_end_of_file_is_refused(tmp_path):
    (tmp_path / "w.bin").write_bytes(b"\0" * 8)
    path = _write(tmp_path, "m.onnx", _model_with_external("w.bin"))
    with pytest.raises(graphkiln.ModelError, match="outside 'w.bin'"):
        graphkiln.parse_onnx(path)


def test_external_data_from_a_buffer_is_refused():
    data = _model_with_external("w.bin").SerializeToString()
    with pytest.raises(graphkiln.ModelError, match="external file"):
        graphkiln.parse_onnx_buffer(data)


def test_symlinked_parent_folder_escaping_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "w.bin").write_bytes(b"\0" * 12)
    sub = tmp_path / "model"
    sub.mkdir()
    os.symlink(outside, sub / "data")  # a folder link: data/w.bin is really outside/w.bin
    path = _write(sub, "m.onnx", _model_with_external("data/w.bin"))
    with pytest.raises(graphkiln.ModelError, match="outside the model's folder"):
        graphkiln.parse_onnx(path)


def test_model_folder_reached_through_a_symlink_still_reads_its_data(tmp_path, rng):
    real = tmp_path / "real"
    real.mkdir()
    weights = rng.standard_normal(3).astype(np.float32)
    (real / "w.bin").write_bytes(weights.tobytes())
    _write(real, "m.onnx", _model_with_external("w.bin"))
    os.symlink(real, tmp_path / "link")
    x = rng.standard_normal(3).astype(np.float32)
    (y,) = graphkiln.parse_onnx(tmp_path / "link" / "m.onnx").compile("ref").run({"x": x})
    np.testing.assert_array_equal(y, x + weights)


def test_location_with_nul_byte_is_refused(tmp_path):
    (tmp_path / "w.bin").write_bytes(b"\0" * 12)
    path = _write(tmp_path, "m.onnx", _model_with_external("w.bin\0.txt"))
    with pytest.raises(graphkiln.ModelError, match="contains a NUL byte"):
        graphkiln.parse_onnx(path)


def test_location_naming_a_folder_is_refused(tmp_path):
    (tmp_path / "weights").mkdir()
    path = _write(tmp_path, "m.onnx", _model_with_external("weights"))
    with pytest.raises(graphkiln.ModelError, match="'weights' is a folder"):
        graphkiln.parse_onnx(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_location_naming_a_pipe_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "w.bin")
    path = _write(tmp_path, "m.onnx", _model_with_external("w.bin"))
    with pytest.raises(graphkiln.ModelError, match="not a regular file"):
        graphkiln.parse_onnx(path)


def test_external_data_longer_than_the_limit_is_refused(tmp_path):
    (tmp_path / "w.bin").write_bytes(b"\0" * 12)
    path = _write(tmp_path, "m.onnx", _model_with_external("w.bin"))
    with pytest.raises(graphkiln.ModelError, match="12 bytes in 'w.bin' is over the limit of 8"):
        graphkiln.parse_onnx(path, max_tensor_bytes=8)
