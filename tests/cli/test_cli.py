# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The graphkiln command line, called in-process and once as `python -m graphkiln`."""

import subprocess
import sys

import numpy as np
import onnx
import pytest

from graphkiln.cli.common import EXAMPLE_MODEL
from graphkiln.cli.main import main


@pytest.fixture
def model_file(tmp_path, add_relu_model):
    path = tmp_path / "m.onnx"
    onnx.save(add_relu_model, path)
    return str(path)


def test_run_without_model_uses_the_example(capsys):
    assert main(["run"]) == 0
    out = capsys.readouterr().out
    assert "probabilities: float32 [1, 10]" in out and "top classes" in out


def test_run_example_matches_an_independent_numpy_forward(capsys, tmp_path):
    """The example CNN on ref equals a forward pass written here with plain numpy."""
    path = tmp_path / "out.npz"
    x = np.random.default_rng(7).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", "--input", f"image={tmp_path / 'x.npy'}", "--save", str(path)]) == 0
    got = np.load(path)["probabilities"]
    np.testing.assert_allclose(got, _numpy_forward(EXAMPLE_MODEL, x), rtol=1e-4, atol=1e-6)


def _numpy_forward(model_path, x):
    model = onnx.load(model_path)
    weights = {
        t.name: onnx.numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer
    }
    env = {"image": x.astype(np.float64)}
    for node in model.graph.node:
        ins = [env.get(n, weights.get(n)) for n in node.input]
        a = {at.name: onnx.helper.get_attribute_value(at) for at in node.attribute}
        if node.op_type == "Conv":
            out = _conv(ins[0], ins[1], a["strides"][0], a["pads"][0])
        elif node.op_type == "BatchNormalization":
            scale, bias, mean, var = ins[1:]
            out = (ins[0] - mean[:, None, None]) / np.sqrt(
                var[:, None, None] + a["epsilon"]
            ) * scale[:, None, None] + bias[:, None, None]
        elif node.op_type == "Relu":
            out = np.maximum(ins[0], 0)
        elif node.op_type == "Add":
            out = ins[0] + ins[1]
        elif node.op_type == "MaxPool":
            p = np.pad(ins[0], ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
            h = (p.shape[2] - 3) // 2 + 1
            out = np.stack(
                [
                    np.stack(
                        [
                            p[:, :, 2 * i : 2 * i + 3, 2 * j : 2 * j + 3].max(axis=(2, 3))
                            for j in range(h)
                        ],
                        -1,
                    )
                    for i in range(h)
                ],
                -2,
            )
        elif node.op_type == "GlobalAveragePool":
            out = ins[0].mean(axis=(2, 3), keepdims=True)
        elif node.op_type == "Flatten":
            out = ins[0].reshape(ins[0].shape[0], -1)
        elif node.op_type == "Gemm":
            out = ins[0] @ ins[1].T + ins[2]
        elif node.op_type == "Softmax":
            e = np.exp(ins[0] - ins[0].max(axis=1, keepdims=True))
            out = e / e.sum(axis=1, keepdims=True)
        else:
            raise AssertionError(node.op_type)
        env[node.output[0]] = out
    return env["probabilities"]


def _conv(x, w, stride, pad):
    n, c, h, wd = x.shape
    k = w.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - k) // stride + 1
    ow = (wd + 2 * pad - k) // stride + 1
    out = np.zeros((n, w.shape[0], oh, ow))
    for i in range(k):
        for j in range(k):
            patch = xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out


def test_read_prints_ir_that_mentions_every_input(model_file, capsys):
    assert main(["read", model_file]) == 0
    out = capsys.readouterr().out
    assert out.startswith("graph main(%x: f32[N,3])") and "Relu" in out


def test_params_and_ops(model_file, capsys):
    assert main(["params", model_file, "--input-dim", "x=4,3"]) == 0
    assert "x: f32[4,3]" in capsys.readouterr().out
    assert main(["ops"]) == 0
    assert "Relu" in capsys.readouterr().out
    assert main(["ops", "--model", model_file]) == 0


def test_perf_reports_percentiles(model_file, capsys):
    assert main(["perf", model_file, "--runs", "5", "--warmup", "1"]) == 0
    out = capsys.readouterr().out
    assert "p50" in out and "p99" in out and "throughput" in out


def test_verify_ref_against_ref_passes(model_file, capsys):
    assert main(["verify", model_file]) == 0
    assert "PASS" in capsys.readouterr().out


def test_bad_input_dim_and_missing_model_give_clear_errors(model_file, capsys):
    with pytest.raises(SystemExit, match="expected NAME=D0"):
        main(["run", model_file, "--input-dim", "x"])
    assert main(["run", "/nonexistent/model.onnx"]) == 1
    assert "cannot read model" in capsys.readouterr().err


def test_doctor_and_module_entry_point():
    out = subprocess.run(
        [sys.executable, "-m", "graphkiln", "doctor"], capture_output=True, text=True, check=True
    ).stdout
    assert "graphkiln" in out and "targets: " in out
