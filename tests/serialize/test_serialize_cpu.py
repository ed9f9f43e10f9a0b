# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Programs compiled for cpu survive save / load in both formats: the loaded program is on
cpu, skips the passes, and gives bit-identical outputs."""

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.cli.common import EXAMPLE_MODEL


@pytest.mark.parametrize("fmt", ["msgpack", "json"])
def test_cpu_program_round_trip_is_bit_identical(fmt):
    program = gk.parse_onnx(EXAMPLE_MODEL).compile("cpu")
    (name,) = program.get_parameter_names()
    x = np.random.default_rng(3).standard_normal(program.get_parameter_shapes()[name].dims)
    feeds = {name: x.astype(np.float32)}
    loaded = gk.load_buffer(gk.save_buffer(program, format=fmt))
    assert loaded.target.name == "cpu" and loaded.is_compiled
    assert [r.name for r in loaded.pass_records] == [r.name for r in program.pass_records]
    for want, got in zip(program.run(feeds), loaded.run(feeds)):
        assert want.dtype == got.dtype and want.shape == got.shape
        assert want.tobytes() == got.tobytes()


def test_cpu_program_with_fallback_keeps_its_option():
    program = gk.parse_onnx(EXAMPLE_MODEL).compile("cpu", fallback="ref")
    loaded = gk.load_buffer(gk.save_buffer(program))
    assert loaded.options == {"fallback": "ref"}


def test_exhaustive_tune_is_not_saved(tmp_path, monkeypatch):
    """Tuning measures once, at compile time; a loaded program only reads the database."""
    monkeypatch.setenv("GRAPHKILN_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    program = gk.parse_onnx(EXAMPLE_MODEL).compile("cpu", exhaustive_tune=True)
    loaded = gk.load_buffer(gk.save_buffer(program))
    assert "exhaustive_tune" not in loaded.options
