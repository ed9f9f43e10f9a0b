# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The command line on a model with symbolic input dims: `params` shows the symbols;
run / perf / verify pick sizes for the random inputs (1, or --default-dim / --input-dim /
an --input array) and say so in one line."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from graphkiln.cli.main import main

NOTE = (
    "graphkiln: symbolic input dims set for the random inputs: {where}; choose them with "
    "--input-dim NAME=D0,D1,..., --default-dim N or --input NAME=FILE.npy\n"
)


@pytest.fixture
def model_file(tmp_path):
    """y = x + b, x: f32[batch,?,4], b: f32[batch,1,4] (the `?` is unknown: x_dim1)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "?", 4])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, ["batch", 1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Add", ["x", "b"], ["y"])], "g", [x, b], [y])
    path = tmp_path / "sym.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def test_params_shows_the_symbols(model_file, capsys):
    assert main(["params", model_file]) == 0
    out = capsys.readouterr().out
    assert "  x: f32[batch,x_dim1,4]\n  b: f32[batch,1,4]\n" in out


def test_run_sets_symbolic_dims_to_1_and_says_so(model_file, capsys, tmp_path):
    out_file = tmp_path / "y.npz"
    assert main(["run", model_file, "--target", "ref", "--save", str(out_file)]) == 0
    captured = capsys.readouterr()
    assert captured.err == NOTE.format(where="batch=1 (x[0] b[0]), x_dim1=1 (x[1])")
    assert "y: float32 [1, 1, 4]" in captured.out
    # the random inputs are those of seed 0, in input order, at the sizes chosen
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 1, 4)).astype(np.float32)
    b = rng.standard_normal((1, 1, 4)).astype(np.float32)
    np.testing.assert_array_equal(np.load(out_file)["y"], x + b)


def test_an_input_array_sets_its_symbols_for_the_others(model_file, capsys, tmp_path):
    x = np.random.default_rng(3).standard_normal((3, 5, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", model_file, "--target", "ref", "--input", f"x={tmp_path / 'x.npy'}"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # x fixes batch and x_dim1 at import: nothing left to choose
    assert "y: float32 [3, 5, 4]" in captured.out


def test_default_dim_fixes_them_at_import(model_file, capsys):
    assert main(["run", model_file, "--target", "ref", "--default-dim", "2"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "y: float32 [2, 2, 4]" in captured.out
    assert main(["params", model_file, "--default-dim", "2"]) == 0
    assert "  x: f32[2,2,4]\n" in capsys.readouterr().out


def test_verify_and_perf_on_cpu(model_file, capsys):
    pytest.importorskip("graphkiln._core", reason="the cpu target needs the C++ core")
    assert main(["verify", model_file, "--target", "cpu"]) == 0
    captured = capsys.readouterr()
    assert captured.err == NOTE.format(where="batch=1 (x[0] b[0]), x_dim1=1 (x[1])")
    assert "cpu vs ref: PASS" in captured.out
    assert (
        main(
            [
                "perf",
                model_file,
                "--target",
                "cpu",
                "--runs",
                "3",
                "--warmup",
                "1",
                "--input-dim",
                "x=2,3,4",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()  # x=2,3,4 sets batch on b too: nothing left to choose
    assert "symbolic input dims" not in captured.err and "3 runs after 1 warm-up" in captured.out


def test_verify_passes_fixes_symbolic_dims_and_says_so(model_file, capsys):
    assert main(["compile", model_file, "--target", "ref", "--verify-passes"]) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        "graphkiln: --verify-passes runs on static shapes: symbolic input "
        "dims x[0] (batch), x[1] (x_dim1), b[0] (batch) set to 1; choose "
        "them with --input-dim NAME=D0,D1,... or --default-dim N\n"
    )
    assert "verify-passes: all" in captured.out
