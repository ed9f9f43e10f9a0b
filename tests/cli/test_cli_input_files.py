# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`--input`: .npy and .npz files read without pickle, our own messages for files that are
not numpy's, arrays that fix symbolic dims, clear dtype and shape errors."""

import pickle

import numpy as np
import pytest
from cli_models import save, symbolic_model

from graphkiln.cli.main import main

ACCEPTED = (
    "NAME=FILE.npy (an array saved by numpy.save), NAME=FILE.npz (the array named "
    "NAME in a numpy.savez file, or its only array) or FILE.npz (each array of it "
    "feeds the input of its name)"
)


@pytest.fixture
def model(tmp_path):
    return save(symbolic_model(), tmp_path, "sym.onnx")


def _run_exit(argv) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    return str(info.value.code)


def test_an_object_array_is_refused_without_numpy_advice(model, tmp_path):
    path = tmp_path / "obj.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    message = _run_exit(["run", model, "--input", f"x={path}"])
    assert message == (
        f"graphkiln: --input 'x={path}': {path} holds an array of Python "
        "objects, which only pickle can load; graphkiln does not load pickles "
        "(they can run code): save a numeric, bool or string array"
    )
    assert "allow_pickle" not in message


def test_a_pickle_or_other_file_is_refused_with_what_is_accepted(model, tmp_path):
    pickled = tmp_path / "data.npy"
    pickled.write_bytes(pickle.dumps([1.0, 2.0]))
    assert _run_exit(["run", model, "--input", f"x={pickled}"]) == (
        f"graphkiln: --input 'x={pickled}': {pickled} is not a numpy .npy or .npz file (it "
        f"looks like a pickle, which graphkiln does not load); accepted: {ACCEPTED}"
    )
    text = tmp_path / "x.txt"
    text.write_text("1 2 3\n")
    assert _run_exit(["run", model, "--input", f"x={text}"]) == (
        f"graphkiln: --input 'x={text}': {text} is not a numpy .npy or .npz file; "
        f"accepted: {ACCEPTED}"
    )


def test_an_array_fixes_the_symbolic_dims_of_its_input(model, tmp_path):
    x = np.arange(12, dtype=np.float32).reshape(4, 3) - 5
    b = np.array([1.0, 2.0, 3.0], np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "b.npy", b)
    out = tmp_path / "out.npz"
    assert (
        main(
            [
                "run",
                model,
                "--input",
                f"x={tmp_path / 'x.npy'}",
                "--input",
                f"b={tmp_path / 'b.npy'}",
                "--save",
                str(out),
            ]
        )
        == 0
    )
    np.testing.assert_array_equal(np.load(out)["z"], np.maximum(x, 0) + b)


def test_npz_by_name_only_array_and_whole_file(model, tmp_path, capsys):
    x = np.ones((2, 3), np.float32)
    b = np.full(3, 2.0, np.float32)
    both = tmp_path / "both.npz"
    np.savez(both, x=x, b=b)
    only = tmp_path / "only.npz"
    np.savez(only, whatever=-x)
    out = tmp_path / "out.npz"
    assert main(["run", model, "--input", str(both), "--save", str(out)]) == 0
    np.testing.assert_array_equal(np.load(out)["z"], np.full((2, 3), 3.0, np.float32))
    assert (
        main(["run", model, "--input", f"x={only}", "--input", f"b={both}", "--save", str(out)])
        == 0
    )
    np.testing.assert_array_equal(np.load(out)["z"], np.full((2, 3), 2.0, np.float32))
    capsys.readouterr()


def test_npz_without_the_name_lists_its_arrays(model, tmp_path):
    path = tmp_path / "two.npz"
    np.savez(path, a=np.ones(3, np.float32), c=np.ones(3, np.float32))
    assert _run_exit(["run", model, "--input", f"x={path}"]) == (
        f"graphkiln: --input 'x={path}': {path} holds the arrays a, c, none named 'x' "
        "(NAME=FILE.npz takes the array NAME, or the only one); FILE.npz alone feeds each "
        "array to the input of its name"
    )
    assert _run_exit(["run", model, "--input", str(path)]) == (
        f"graphkiln: --input names ['a', 'c'] ('{path}' (array 'a'), '{path}' (array 'c')), "
        "which are not inputs; inputs: ['x', 'b']"
    )


def test_dtype_and_shape_mismatches_name_the_input_and_file(model, tmp_path):
    f64 = tmp_path / "f64.npy"
    np.save(f64, np.ones((2, 3)))
    assert _run_exit(["run", model, "--input", f"x={f64}"]) == (
        f"graphkiln: --input 'x={f64}': the array is float64, input 'x' of the model is "
        "f32[2,3] (float32); save it as float32, e.g. numpy.save(FILE, "
        "array.astype(numpy.float32))"
    )
    wrong = tmp_path / "b.npy"
    np.save(wrong, np.ones(4, np.float32))
    assert _run_exit(["run", model, "--input", f"b={wrong}"]) == (
        f"graphkiln: --input 'b={wrong}': the array has shape [4], input 'b' of the model is "
        "f32[3]: its fixed dims (the model's, or --input-dim's) must match"
    )
    flat = tmp_path / "flat.npy"
    np.save(flat, np.ones(3, np.float32))
    assert _run_exit(["run", model, "--input", f"x={flat}"]) == (
        f"graphkiln: --input 'x={flat}': the array has shape [3] (rank 1), input 'x' of the "
        "model has rank 2 ([?,3], ? symbolic)"
    )


def test_input_help_says_what_is_accepted(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "FILE.npz (each array of it feeds the input of its name)" in text
    assert "never loaded through pickle" in text
