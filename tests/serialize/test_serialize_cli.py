# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`graphkiln compile -o`, then run / perf / read / params / verify on the saved program."""

import json

import numpy as np
import pytest

import graphkiln
from graphkiln.cli.common import EXAMPLE_MODEL
from graphkiln.cli.main import main


@pytest.mark.parametrize(
    "target, options, rerun",
    [
        ("ref", {"optimize": True}, ["--target", "ref", "--optimize"]),
        ("cpu", {}, ["--target", "cpu"]),
    ],
)
def test_compile_save_run_read(tmp_path, capsys, target, options, rerun):
    saved = tmp_path / "model.gkp"
    assert main(["compile", EXAMPLE_MODEL, "--target", target, "-o", str(saved)]) == 0
    assert "saved the compiled program" in capsys.readouterr().out
    assert saved.read_bytes().startswith(b"GKILNM")
    loaded = graphkiln.load(saved)
    assert loaded.is_compiled and loaded.options == options and loaded.target.name == target

    x = np.random.default_rng(5).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out_saved, out_onnx = tmp_path / "saved.npz", tmp_path / "onnx.npz"
    assert (
        main(
            ["run", str(saved), "--input", f"image={tmp_path / 'x.npy'}", "--save", str(out_saved)]
        )
        == 0
    )
    assert "saved program" in capsys.readouterr().out
    assert (
        main(
            [
                "run",
                EXAMPLE_MODEL,
                *rerun,
                "--input",
                f"image={tmp_path / 'x.npy'}",
                "--save",
                str(out_onnx),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert (
        np.load(out_saved)["probabilities"].tobytes()
        == np.load(out_onnx)["probabilities"].tobytes()
    )

    assert main(["read", str(saved), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["magic"] == "graphkiln" and doc["compiled"]["target"] == target
    assert main(["read", str(saved)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"# saved program compiled for {target}") and "Fused(" in text
    assert main(["perf", str(saved), "--runs", "2", "--warmup", "0"]) == 0
    assert "latency ms" in capsys.readouterr().out
    assert main(["params", str(saved)]) == 0
    assert "image: f32[1,3,32,32]" in capsys.readouterr().out
    assert main(["verify", str(saved)]) == 0


def test_json_format_and_detection_by_magic(tmp_path, capsys):
    saved = tmp_path / "model.onnx"  # a misleading name: the content decides
    assert (
        main(["compile", EXAMPLE_MODEL, "--target", "ref", "-o", str(saved), "--format", "json"])
        == 0
    )
    assert saved.read_text().startswith('{\n "magic": "graphkiln"')
    capsys.readouterr()
    assert main(["run", str(saved)]) == 0
    assert "saved program" in capsys.readouterr().out
    assert main(["run", str(saved), "--no-optimize"]) == 0  # recompiles from the imported graph
    assert "saved program" not in capsys.readouterr().out


def test_damaged_saved_program_is_reported(tmp_path, capsys):
    saved = tmp_path / "model.gkp"
    assert main(["compile", EXAMPLE_MODEL, "-o", str(saved)]) == 0
    saved.write_bytes(saved.read_bytes()[:500])
    assert main(["run", str(saved)]) == 1
    assert "FormatError: damaged file" in capsys.readouterr().err
