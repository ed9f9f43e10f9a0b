# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The ref target's `shapes=[...]` (issue 20): accepted so that one compile call serves
every target, each entry checked against the inputs as on cpu and gpu; ref has no plans,
so nothing is built or saved, and runs at any shape match numpy. Also `graphkiln compile
--shapes` for --target ref."""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln as gk
from graphkiln.cli.main import main
from graphkiln.targets.ref.target import RefTarget


def add_relu() -> bytes:
    """y = Relu(a + b) @ w, a and b of [N, 4] (one symbol), w a static [4, 3] input."""
    g = helper.make_graph(
        [
            helper.make_node("Add", ["a", "b"], ["s"]),
            helper.make_node("Relu", ["s"], ["r"]),
            helper.make_node("MatMul", ["r", "w"], ["y"]),
        ],
        "m",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 4]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 4]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def program(**options):
    return gk.parse_onnx_buffer(add_relu()).compile("ref", **options)


def feeds(batch: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "a": rng.standard_normal((batch, 4)).astype(np.float32),
        "b": rng.standard_normal((batch, 4)).astype(np.float32),
        "w": rng.standard_normal((4, 3)).astype(np.float32),
    }


def expected(f: dict) -> np.ndarray:
    return np.maximum(f["a"] + f["b"], 0) @ f["w"]


def test_the_option_says_nothing_is_built():
    assert "nothing is built" in RefTarget.options["shapes"]


@pytest.mark.parametrize("optimize", [False, True])
def test_shapes_are_checked_and_runs_match_numpy(optimize):
    prog = program(
        optimize=optimize,
        shapes=[{"a": [2, 4], "b": [2, 4]}, {"a": [5, 4], "b": [5, 4], "w": [4, 3]}],
    )
    for batch, seed in ((2, 1), (5, 2), (3, 3)):  # a shape not listed runs too
        f = feeds(batch, seed)
        np.testing.assert_allclose(prog.run(f)[0], expected(f), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "shapes,words",
    [
        ([{"a": [2, 4, 1], "b": [2, 4]}], "shapes[0]: input 'a' has rank 2"),
        (
            [{"a": [2, 4], "b": [2, 4], "w": [4, 4]}],
            "shapes[0]: input 'w': dimension 1 is static 3",
        ),
        ([{"a": [2, 4], "b": [3, 4]}], "dimension 0 is N, which is 2 in input 'a', got 3"),
        ([{"a": [2, 4], "b": [2, 4]}, {"c": [1]}], "shapes[1]: unknown input(s) ['c']"),
        ([{"a": [2, 4]}], "shapes[0]: no shape for input 'b'"),
        (["a=2,4"], "shapes[0]='a=2,4': expected a dict"),
    ],
)
def test_a_bad_entry_raises_naming_it(shapes, words):
    with pytest.raises(ValueError) as info:
        program(shapes=shapes)
    assert words in str(info.value)


@pytest.mark.parametrize("fmt", ["msgpack", "json"])
def test_a_saved_ref_program_keeps_no_shapes(fmt):
    prog = program(shapes=[{"a": [2, 4], "b": [2, 4]}])
    saved = gk.save_buffer(prog, fmt)
    if fmt == "json":
        compiled = json.loads(saved)["compiled"]
        assert compiled["options"] == {} and "gpu_plans" not in compiled
    loaded = gk.load_buffer(saved)
    f = feeds(2, 4)
    np.testing.assert_allclose(loaded.run(f)[0], expected(f), rtol=1e-5, atol=1e-6)


def test_cli_compile_shapes_on_ref(tmp_path, capsys):
    model = tmp_path / "m.onnx"
    model.write_bytes(add_relu())
    out = tmp_path / "m.gkp"
    assert (
        main(
            [
                "compile",
                str(model),
                "--target",
                "ref",
                "--shapes",
                "a=2,4 b=2,4;a=3,4 b=3,4",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    f = feeds(3, 5)
    np.testing.assert_allclose(gk.load(out).run(f)[0], expected(f), rtol=1e-5, atol=1e-6)
    with pytest.raises(SystemExit) as info:
        main(["compile", str(model), "--target", "ref", "--shapes", "a=2,4 b=3,4"])
    assert "--shapes" in str(info.value) and "dimension 0 is N" in str(info.value)
