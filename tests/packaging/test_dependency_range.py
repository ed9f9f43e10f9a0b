# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The dependency range CI tests: .ci/constraints-oldest.txt pins every lower bound of
pyproject.toml (dependencies and the test extra), and --skip-newer-opsets (tests/conftest.py)
skips exactly the tests whose model needs an opset the installed onnx does not know."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.version import Version

try:
    import tomllib
except ImportError:  # Python 3.10: pytest brings tomli
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
OLDEST_PYTHON = {"python_version": "3.10", "python_full_version": "3.10.0"}


def _lower_bounds() -> dict[str, Version]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    bounds = {}
    for line in project["dependencies"] + project["optional-dependencies"]["test"]:
        req = Requirement(line)
        for spec in req.specifier:
            if spec.operator == ">=":
                bounds[req.name.lower().replace("_", "-")] = Version(spec.version)
    return bounds


def _pins() -> list[tuple[str, Version, Marker | None]]:
    pins = []
    for line in (ROOT / ".ci" / "constraints-oldest.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"{line}: pin one version"
            pins.append((req.name.lower().replace("_", "-"), Version(spec.version), req.marker))
    return pins


def test_the_oldest_constraints_pin_each_lower_bound():
    bounds, pins = _lower_bounds(), _pins()
    assert {name for name, _, _ in pins} == set(bounds), "constraints and lower bounds differ"
    for name, bound in bounds.items():
        rows = [(v, m) for n, v, m in pins if n == name]
        oldest = [v for v, m in rows if m is None or m.evaluate(OLDEST_PYTHON)]
        # on the oldest Python we support, the bound itself (7 is pinned as 7.0.0; a bound
        # with no release of its own, as the oldest release it starts: 0.9 as 0.9.0.2)
        assert len(oldest) == 1 and oldest[0].release[: len(bound.release)] == bound.release, (
            f"{name}: pinned {oldest} for Python 3.10, lower bound {bound}"
        )
        assert all(v >= bound for v, _ in rows), f"{name}: a pin below {bound}"


NEWER_OPSET_TESTS = """
import graphkiln
import onnx
from onnx import TensorProto, helper

def _model(opset):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])

def test_needs_a_newer_onnx():
    graphkiln.parse_onnx_buffer(_model(onnx.defs.onnx_opset_version() + 1).SerializeToString())

def test_below_the_oldest_opset():
    graphkiln.parse_onnx_buffer(_model(1).SerializeToString())

def test_plain_failure():
    assert False
"""


@pytest.mark.parametrize("flag, outcome", [(True, "2 failed, 1 skipped"), (False, "3 failed")])
def test_skip_newer_opsets_skips_only_models_beyond_the_installed_onnx(tmp_path, flag, outcome):
    import graphkiln

    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "test_opsets.py").write_text(NEWER_OPSET_TESTS)
    package_dir = str(Path(graphkiln.__file__).resolve().parents[1])
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([package_dir, os.environ.get("PYTHONPATH", "")])
    )
    args = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)]
    done = subprocess.run(
        args + (["--skip-newer-opsets"] if flag else []),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert outcome in done.stdout, done.stdout + done.stderr
    if flag:
        assert "needs opset" in done.stdout and "knows up to" in done.stdout, done.stdout
