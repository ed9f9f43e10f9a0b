# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A plan (cpu and gpu): storages (arena buffers, constants, the caller's inputs and
outputs), slots (a tensor: dtype, dims, layout, where it lives) and steps (kernel calls).
lower.py writes it and places its arena (`Plan.place_arena`: the arena the executors
allocate, which `stats()` reports); _core.Executor / _core.GpuExecutor build and run it.
plan_print.py prints and verifies one."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...ir import DType

ARENA, CONSTANT, INPUT, OUTPUT = 0, 1, 2, 3  # _core's Storage enum
PLAIN, CHANNELS_LAST = "plain", "channels_last"
# one-byte types the C++ core has no name for: kernels see their bytes as u8
ALIGN = 64  # arena buffers start at multiples of this
BYTE_DTYPES = frozenset(
    {
        DType.f8e4m3fn,
        DType.f8e4m3fnuz,
        DType.f8e5m2,
        DType.f8e5m2fnuz,
        DType.f8e8m0,
        DType.f4e2m1,
        DType.i4,
        DType.u4,
        DType.i2,
        DType.u2,
    }
)


@dataclass
class Storage:
    kind: int
    nbytes: int
    index: int = 0  # constant / input / output number
    offset: int = 0  # arena offset, once placed


@dataclass
class Slot:
    dtype: DType
    dims: tuple[int, ...]
    layout: str
    storage: int
    byte_offset: int = 0

    @property
    def strides(self) -> tuple[int, ...]:
        return layout_strides(self.dims, self.layout)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.dims, dtype=np.int64)) * itemsize(self.dtype)


@dataclass
class Step:
    kernel: str
    inputs: list[int | None]
    outputs: list[int]
    attrs: dict
    name: str


@dataclass
class Plan:
    storages: list[Storage] = field(default_factory=list)
    slots: list[Slot] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    constants: list[np.ndarray] = field(default_factory=list)
    input_slots: list[int] = field(default_factory=list)
    output_slots: list[int] = field(default_factory=list)
    arena_bytes: int = 0
    naive_bytes: int = 0  # the arena buffers' bytes if none shared space (place_arena)

    def place_arena(self) -> None:
        """Give every arena storage an offset: live from the first step touching it to the
        last, placed greedily largest first."""
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for index, step in enumerate(self.steps):
            for s in [*step.inputs, *step.outputs]:
                if s is None:
                    continue
                storage = self.slots[s].storage
                if self.storages[storage].kind == ARENA:
                    first.setdefault(storage, index)
                    last[storage] = index
        order = sorted(first, key=lambda k: (-self.storages[k].nbytes, first[k]))
        offsets, self.arena_bytes = place_buffers(
            [(k, self.storages[k].nbytes, first[k], last[k]) for k in order]
        )
        self.naive_bytes = sum(aligned(max(self.storages[k].nbytes, 1)) for k in order)
        for k, offset in offsets.items():
            self.storages[k].offset = offset

    def tensor_arg(self, slot_id: int) -> dict:
        slot = self.slots[slot_id]
        storage = self.storages[slot.storage]
        offset = slot.byte_offset + (storage.offset if storage.kind == ARENA else 0)
        dtype = "u8" if slot.dtype in BYTE_DTYPES else slot.dtype.value
        return {
            "dtype": dtype,
            "dims": list(slot.dims),
            "strides": list(slot.strides),
            "ref": (storage.kind, storage.index, offset),
        }

    def executor_steps(self) -> list[dict]:
        return [
            {
                "kernel": step.kernel,
                "name": step.name,
                "attrs": step.attrs,
                "inputs": [None if s is None else self.tensor_arg(s) for s in step.inputs],
                "outputs": [self.tensor_arg(s) for s in step.outputs],
            }
            for step in self.steps
        ]


def aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def place_buffers(buffers) -> tuple[dict, int]:
    """Greedy placement of (key, bytes, first step, last step) in the given order (largest
    first works best): each at the lowest aligned offset overlapping no buffer live at the
    same time. Returns ({key: offset}, arena bytes)."""
    placed: list[tuple[int, int, int, int]] = []  # (offset, size, first, last)
    offsets: dict = {}
    total = 0
    for key, nbytes, first, last in buffers:
        size = aligned(max(nbytes, 1))
        offset = 0
        for o, s, _, _ in sorted(p for p in placed if not (p[3] < first or last < p[2])):
            if offset + size <= o:
                break
            offset = max(offset, o + s)
        placed.append((offset, size, first, last))
        offsets[key] = offset
        total = max(total, offset + size)
    return offsets, total


def itemsize(dtype: DType) -> int:
    return np.dtype(dtype.numpy).itemsize


def layout_strides(dims: tuple[int, ...], layout: str) -> tuple[int, ...]:
    """Strides in elements: row-major for plain; N, spatial..., C order for channels-last."""
    rank = len(dims)
    order = list(range(rank))
    if layout == CHANNELS_LAST:
        order = [0, *range(2, rank), 1]
    strides = [0] * rank
    step = 1
    for axis in reversed(order):
        strides[axis] = step
        step *= dims[axis]
    return tuple(strides)
