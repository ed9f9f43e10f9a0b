# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Run generated Pointwise kernels (targets/gpu/codegen.py) on the host: their source is
also host C++, so many of them compile with g++ into one shared library (one compiler call),
and JitEmulator runs a gpu plan on the numpy model of the kernels (plan_emulator.py) with
each Pointwise step that carries generated source calling that code instead."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess

from plan_emulator import Emulator


def compile_host_library(sources: list[str], folder: str) -> ctypes.CDLL:
    """One shared library holding every source (each defines its own uniquely named
    entries; the common prelude is guarded)."""
    text = "".join(sorted(set(sources)))
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = os.path.join(folder, f"jit_{digest}.so")
    if not os.path.exists(path):
        cpp = os.path.join(folder, f"jit_{digest}.cpp")
        with open(cpp, "w") as f:
            f.write(text)
        compiler = shutil.which("g++") or shutil.which("c++")
        if compiler is None:
            raise RuntimeError("no host C++ compiler (g++) to check the generated kernels")
        done = subprocess.run(
            [compiler, "-std=c++17", "-O1", "-shared", "-fPIC", "-w", "-o", path, cpp],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(
                "the generated kernels do not compile as host C++:\n" + done.stderr[-4000:]
            )
    return ctypes.CDLL(path)


def pointwise_sources(plan) -> list[str]:
    return [
        s.attrs["jit_source"]
        for s in plan.steps
        if s.kernel == "Pointwise" and "jit_source" in s.attrs
    ]


class JitEmulator(Emulator):
    """The plan's Pointwise steps with generated source run it (the scalar entry, or the
    four-a-thread one where the device would pick it: aligned pointers); `ran` counts them
    and `entries` records which entry each used."""

    def __init__(self, plan, library: ctypes.CDLL, vector: bool):
        super().__init__(plan)
        self.library = library
        self.vector = vector
        self.ran = 0
        self.entries: list[str] = []

    def _address(self, t) -> int:
        buf, offset = self._buffer(t)
        return buf.ctypes.data + offset

    def k_Pointwise(self, step, a):
        if "jit_source" not in a:
            return super().k_Pointwise(step, a)
        tensors = [*step["inputs"], step["outputs"][0]]
        pointers = [self._address(t) for t in tensors]
        entry = a["jit_entry"]
        if self.vector:
            checked = [(pointers[k], _itemsize(tensors[k])) for k in a["jit_aligned"]]
            checked.append((pointers[-1], _itemsize(tensors[-1])))
            if all(p % (4 * size) == 0 for p, size in checked):
                entry += "_v4"
        call_generated(getattr(self.library, entry), pointers, a["jit_maps"])
        self.ran += 1
        self.entries.append(entry)


def call_generated(entry, pointers: list[int], maps: list[int]) -> None:
    """Call a generated entry as pointwise.hip launches it: the pointers, then the size
    arguments of its index maps (codegen.size_arguments)."""
    from graphkiln.targets.gpu.codegen import size_arguments

    entry(
        *[ctypes.c_void_p(p) for p in pointers], *[ctypes.c_int64(v) for v in size_arguments(maps)]
    )


def input_modes(maps: list[int]) -> list[int]:
    """The index-map mode of each input, from attrs "jit_maps" (codegen.py's layout)."""
    modes, at = [], 3
    for _ in range(maps[2]):
        modes.append(maps[at + 1])
        at += 3 + 2 * maps[at + 2]
    return modes


def _itemsize(t) -> int:
    import numpy as np

    from plan_emulator import NUMPY

    return np.dtype(NUMPY[t["dtype"]]).itemsize
