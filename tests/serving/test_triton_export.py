# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`graphkiln export-triton`: Triton Inference Server is not run here (none is installed).
What can be checked is: config.pbtxt parses as Triton's ModelConfig message (the
model_config.proto descriptor tritonclient ships) with the fields and values expected,
and the generated model.py, run against FAKE_PB_UTILS (a minimal stand-in for Triton's
triton_python_backend_utils module, written by this test, not Triton's code), answers
as Program.run does, a bad request failing alone."""

import importlib.util
import json
import os
import sys
import types

import numpy as np
import pytest

from graphkiln.cli.main import main
from serving_testing import Reference, assert_outputs, bert_inputs, cnn_input, write_models


def triton_model_config():
    """Triton's ModelConfig protobuf class, from the descriptor in tritonclient's wheel
    (loaded by path: tritonclient.grpc's __init__ needs grpcio, which http clients lack)."""
    tritonclient = pytest.importorskip("tritonclient")
    path = os.path.join(os.path.dirname(tritonclient.__file__), "grpc", "model_config_pb2.py")
    spec = importlib.util.spec_from_file_location("triton_model_config_pb2", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_config_follows_tritons_schema(tmp_path):
    from google.protobuf import text_format

    pb2 = triton_model_config()
    paths = write_models(tmp_path)
    repo = tmp_path / "repo"
    assert (
        main(
            [
                "export-triton",
                str(paths["bert"]),
                "--repo",
                str(repo),
                "--max-batch",
                "16",
                "--max-delay-ms",
                "3",
                "--gpus",
                "0,1",
                "--instances",
                "2",
            ]
        )
        == 0
    )
    text = (repo / "bert" / "config.pbtxt").read_text()
    config = text_format.Parse(text, pb2.ModelConfig())  # unknown fields or enums raise
    assert config.name == "bert" and config.backend == "python"
    assert config.max_batch_size == 16
    assert [(i.name, pb2.DataType.Name(i.data_type), list(i.dims)) for i in config.input] == [
        ("input_ids", "TYPE_INT64", [16]),
        ("attention_mask", "TYPE_INT64", [16]),
    ]
    assert [(o.name, pb2.DataType.Name(o.data_type), list(o.dims)) for o in config.output] == [
        ("hidden_states", "TYPE_FP32", [16, 64])
    ]
    assert config.dynamic_batching.max_queue_delay_microseconds == 3000
    assert [
        (g.count, pb2.ModelInstanceGroup.Kind.Name(g.kind), list(g.gpus))
        for g in config.instance_group
    ] == [(2, "KIND_GPU", [0]), (2, "KIND_GPU", [1])]
    assert config.parameters["graphkiln_model"].string_value == "model.onnx"
    assert (repo / "bert" / "1" / "model.onnx").read_bytes() == paths["bert"].read_bytes()
    # a model without a batch dim: max_batch_size 0, full dims, no dynamic batching; CPU
    import onnx
    from onnx import TensorProto, helper

    fixed = helper.make_model(
        helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "W"])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "W"])],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    onnx.save(fixed, str(tmp_path / "fixed.onnx"))
    assert main(["export-triton", str(tmp_path / "fixed.onnx"), "--repo", str(repo)]) == 0
    config = text_format.Parse((repo / "fixed" / "config.pbtxt").read_text(), pb2.ModelConfig())
    assert config.max_batch_size == 0 and not config.HasField("dynamic_batching")
    assert list(config.input[0].dims) == [2, -1]
    assert [(g.count, pb2.ModelInstanceGroup.Kind.Name(g.kind)) for g in config.instance_group] == [
        (1, "KIND_CPU")
    ]
    with pytest.raises(SystemExit, match="exists; pass --overwrite"):
        main(["export-triton", str(tmp_path / "fixed.onnx"), "--repo", str(repo)])


FAKE_PB_UTILS = '''
"""FAKE triton_python_backend_utils: a minimal stand-in for Triton's module, written by
graphkiln's test_triton_export.py (only what model.py calls)."""
import numpy as np

class Tensor:
    def __init__(self, name, array):
        self._name, self._array = name, np.asarray(array)
    def name(self):
        return self._name
    def as_numpy(self):
        return self._array

class TritonError:
    def __init__(self, message):
        self._message = message
    def message(self):
        return self._message

class InferenceResponse:
    def __init__(self, output_tensors=(), error=None):
        self.output_tensors, self.error = list(output_tensors), error

class InferenceRequest:
    def __init__(self, tensors):
        self.tensors = {t.name(): t for t in tensors}

def get_input_tensor_by_name(request, name):
    return request.tensors.get(name)
'''


@pytest.fixture
def fake_pb_utils(monkeypatch):
    module = types.ModuleType("triton_python_backend_utils")
    exec(compile(FAKE_PB_UTILS, "fake_triton_python_backend_utils", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, "triton_python_backend_utils", module)
    return module


def _load_model_py(folder):
    spec = importlib.util.spec_from_file_location("exported_model", folder / "1" / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["cnn", "bert"])
def test_model_py_runs_requests_like_program_run(tmp_path, fake_pb_utils, name):
    paths = write_models(tmp_path)
    repo = tmp_path / "repo"
    assert main(["export-triton", str(paths[name]), "--repo", str(repo), "--max-batch", "4"]) == 0
    folder = repo / name
    model = _load_model_py(folder).TritonPythonModel()
    config = {
        "name": name,
        "max_batch_size": 4,
        "parameters": {
            "graphkiln_model": {"string_value": "model.onnx"},
            "graphkiln_cpu_target": {"string_value": "cpu"},
        },
    }
    model.initialize(
        {
            "model_config": json.dumps(config),
            "model_instance_kind": "CPU",
            "model_instance_device_id": "0",
            "model_repository": str(folder),
            "model_version": "1",
        }
    )
    ref = Reference(paths[name])
    feeds = (
        [{"x": cnn_input(60 + i, batch=1 + i % 3)} for i in range(6)]
        if name == "cnn"
        else [bert_inputs(60 + i, batch=1 + i % 2) for i in range(6)]
    )
    requests = [
        fake_pb_utils.InferenceRequest([fake_pb_utils.Tensor(k, v) for k, v in f.items()])
        for f in feeds
    ]
    first = next(iter(feeds[0]))  # a request with that input as float64 fails alone
    bad = {**feeds[0], first: feeds[0][first].astype(np.float64)}
    requests.insert(
        2, fake_pb_utils.InferenceRequest([fake_pb_utils.Tensor(k, v) for k, v in bad.items()])
    )
    responses = model.execute(requests)
    assert len(responses) == len(requests)
    assert responses[2].error is not None and "datatype FP64" in responses[2].error.message()
    del responses[2]
    for f, response in zip(feeds, responses):
        assert response.error is None
        assert_outputs([t.as_numpy() for t in response.output_tensors], ref.run(f))
    model.finalize()
