# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`graphkiln quantize MODEL --int8 --calibrate DATA -o OUT.onnx`: DATA as one .npz with a
leading sample axis or as a folder of .npz files, the summary line, --help, and errors that
name the problem."""

import numpy as np
import onnx
import pytest
from int8_models import CNN_INPUT, cnn

import graphkiln as gk
from graphkiln.cli.main import main


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "cnn.onnx"
    onnx.save(cnn(), path)
    return str(path)


def _batch(count=10):
    rng = np.random.default_rng(5)
    return rng.standard_normal([count, *CNN_INPUT]).astype(np.float32)


def _check_written(path):
    quantized = onnx.load(path)
    onnx.checker.check_model(quantized)
    ops = [n.op_type for n in quantized.graph.node]
    # x, the Relu's output, the second Conv's output, the Gemm's input; DequantizeLinear of
    # those, of 3 weights and of 3 biases
    assert ops.count("QuantizeLinear") == 4 and ops.count("DequantizeLinear") == 10
    x = np.random.default_rng(6).standard_normal(CNN_INPUT).astype(np.float32)
    (y,) = gk.parse_onnx(str(path)).compile("ref").run({"x": x})
    assert y.shape == (CNN_INPUT[0], 10) and np.isfinite(y).all()


def test_one_npz_with_a_sample_axis(model, tmp_path, capsys):
    data, out = tmp_path / "calib.npz", tmp_path / "q.onnx"
    np.savez(data, x=_batch(), ignored=np.zeros(3))  # arrays of no input's name are ignored
    assert main(["quantize", model, "--int8", "--calibrate", str(data), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed == (
        "quantized 4 activation tensor(s), 3 weight(s) (int8, per output channel) and 3 "
        f"bias(es) (int32) calibrated on 10 sample(s); wrote {out} (opset 17)\n"
    )
    _check_written(out)


def test_a_folder_of_npz_samples_gives_the_same_model(model, tmp_path):
    batch = _batch(4)
    folder = tmp_path / "samples"
    folder.mkdir()
    for i, x in enumerate(batch):
        np.savez(folder / f"{i:03d}.npz", x=x)
    (folder / "notes.txt").write_text("not a sample")
    np.savez(tmp_path / "batch.npz", x=batch)
    one, many = tmp_path / "one.onnx", tmp_path / "many.onnx"
    assert main(["quantize", model, "--int8", "--calibrate", str(folder), "-o", str(many)]) == 0
    argv = ["quantize", model, "--int8", "--calibrate", str(tmp_path / "batch.npz")]
    assert main([*argv, "-o", str(one)]) == 0
    _check_written(many)
    assert one.read_bytes() == many.read_bytes()


def test_help_says_what_data_and_out_are(capsys):
    with pytest.raises(SystemExit) as info:
        main(["quantize", "--help"])
    assert info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--calibrate DATA" in text and "leading sample axis" in text
    assert "a folder of .npz files" in text and "OUT.onnx" in text and "--int8" in text


def test_int8_is_required(model, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["quantize", model, "--calibrate", str(tmp_path), "-o", str(tmp_path / "q.onnx")])
    assert info.value.code == 2 and "--int8" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("make_data", "words"),
    [
        (lambda d: d / "absent.npz", "absent.npz does not exist"),
        (lambda d: _saved(d / "c.npz", image=_batch()), "holds 'image', none named after an input"),
        (lambda d: _saved(d / "c.npz", x=_batch(0)), "holds 0 samples"),
        (lambda d: _folder(d / "empty"), "holds 0 samples"),
        (lambda d: _saved(d / "c.npz", x=_batch().astype(np.float64)), "'x' is float64"),
    ],
)
def test_bad_data_exits_non_zero_naming_the_problem(model, tmp_path, capsys, make_data, words):
    data = make_data(tmp_path)
    out = tmp_path / "q.onnx"
    assert main(["quantize", model, "--int8", "--calibrate", str(data), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("graphkiln quantize: ") and words in err
    assert not out.exists()


def test_a_missing_model_exits_non_zero(tmp_path, capsys):
    np.savez(tmp_path / "c.npz", x=_batch())
    argv = ["quantize", str(tmp_path / "nope.onnx"), "--int8", "--calibrate"]
    assert main([*argv, str(tmp_path / "c.npz"), "-o", str(tmp_path / "q.onnx")]) == 1
    assert "cannot read model" in capsys.readouterr().err


def _saved(path, **arrays):
    np.savez(path, **arrays)
    return path


def _folder(path):
    path.mkdir()
    return path
