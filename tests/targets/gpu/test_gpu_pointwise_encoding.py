# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The GPU Pointwise kernel interprets the cpu target's register program: its opcode
numbers must stay those of targets/native/lower_pointwise.py (and src/cpu/pointwise_program.hpp)."""

import pathlib
import re

from graphkiln.targets.native.lower_pointwise import OPCODES

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _enum(path: pathlib.Path) -> list[str]:
    text = path.read_text()
    body = re.search(r"enum PwOp : int(?:32_t)? \{(.*?)kNumOps", text, re.S).group(1)
    return [name[1:] for name in re.findall(r"\bk[A-Z]\w*", body)]


def test_gpu_opcodes_match_the_cpu_encoding():
    assert _enum(ROOT / "src/gpu/pointwise.hip") == list(OPCODES)


def test_gpu_opcodes_match_the_cpu_kernel():
    assert _enum(ROOT / "src/gpu/pointwise.hip") == _enum(ROOT / "src/cpu/pointwise_program.hpp")
