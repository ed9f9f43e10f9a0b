# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Packed constants shared between the plans of one program (its specializations).

A oneDNN kernel packs (reorders) a constant weight into the layout its primitive picked
when it is built. Plans of one program made for other input shapes (another batch, another
spatial size or sequence length) mostly pack the same weights to the same layouts: this
cache gives each new plan's steps the packings earlier plans made, as the executor's saved
packings ("packed" step entries, as a loaded program's are). The C++ core takes a saved
packing only where its layout key and size equal what the kernel would make, else the
kernel packs again (a legitimately new layout), so an offer is never wrong, only useless.
Aligned bytes are taken as they are (the kernel points at them: no copy); the cache keeps
the arrays, and so the executor owning them, alive.

A packing is found by the step's kernel, the attributes it reads to pack (PACKING_ATTRS)
and, per constant input, the constant's content (a digest, computed once per array
object), dtype, dims, strides and offset: everything the kernel reads to make it besides
the target layout. Only steps of kernels that pack are keyed (those of PACKING_ATTRS and any
other seen packing): the rest (pointwise kernels reading constants, gathers, ...) never
pack, and their keys (digests of constants a plan may make anew per shape) would be work
per plan for nothing. Safe from
several threads at once (plans of several shapes are built concurrently)."""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict

import numpy as np

CONSTANT = 1  # plan.CONSTANT, the storage kind of a plan constant
# The attributes a kernel reads to pack its constant (with the constant's tensor argument),
# for the kernels that pack one (src/cpu conv.cpp, deconv.cpp, matmul.cpp): the others (the
# other operands' views, windows, epilogues, tuning) only decide the target layout, which
# the core compares itself. A kernel not listed here is keyed by all its attributes.
PACKING_ATTRS = {"Conv": ("group",), "ConvTranspose": ("group",), "MatMul": ("b_dims", "b_strides")}


def _frozen(value):
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, np.generic):
        return value.item()
    return value


class PackingCache:
    def __init__(self):
        self._lock = threading.Lock()
        # step key -> per packing position: layout -> packed bytes (most recently used last)
        self._entries: dict[tuple, list[OrderedDict]] = {}
        self._digests: dict[int, tuple] = {}  # id(array) -> (weakref to it, digest)
        # kernels whose steps are keyed: the known packers, and any other seen packing
        self._packing_kernels: set[str] = set(PACKING_ATTRS)
        # remember() calls put off until the next offer (remember_later)
        self._later: list[tuple] = []

    def _digest(self, array) -> bytes:
        array = np.asarray(array)
        known = self._digests.get(id(array))
        if known is not None and known[0]() is array:
            return known[1]
        data = np.ascontiguousarray(array)
        digest = hashlib.blake2b(
            memoryview(data.view(np.uint8).reshape(-1)), digest_size=16
        ).digest()
        try:
            key = id(array)
            ref = weakref.ref(array, lambda _: self._digests.pop(key, None))
        except TypeError:
            return digest
        self._digests[id(array)] = (ref, digest)
        return digest

    def _step_key(self, step: dict, constants: list) -> tuple | None:
        """None for a step that reads no constant (it packs nothing worth sharing)."""
        parts, found = [], False
        for arg in step["inputs"]:
            if arg is None:
                parts.append(None)
                continue
            storage, index, offset = arg["ref"]
            if storage != CONSTANT:
                parts.append(("t", arg["dtype"], len(arg["dims"])))
                continue
            found = True
            array = constants[index]
            parts.append(
                (
                    self._digest(array),
                    np.asarray(array).dtype.str,
                    arg["dtype"],
                    tuple(arg["dims"]),
                    tuple(arg["strides"]),
                    offset,
                )
            )
        if not found:
            return None
        kernel, attrs = step["kernel"], step["attrs"]
        names = PACKING_ATTRS.get(kernel)
        if names is not None:
            attrs = {k: attrs[k] for k in names if k in attrs}
        return (kernel, _frozen(attrs), tuple(parts))

    def offer(self, steps: list[dict], constants: list) -> tuple[list[dict], list]:
        """`steps` with "packed" entries where earlier plans packed the same constants
        (their most recently used layout per packing), and the step keys for remember()."""
        self._remember_put_off()
        packing_kernels = self._packing_kernels
        keys = [
            None
            if "packed" in step or step["kernel"] not in packing_kernels
            else self._step_key(step, constants)
            for step in steps
        ]  # digests outside the lock: hashing takes a while
        out = []
        with self._lock:
            for step, key in zip(steps, keys):
                entries = self._entries.get(key) if key is not None else None
                if entries:
                    packed = []
                    for layouts in entries:
                        layout = next(reversed(layouts))
                        packed.append((layout, layouts[layout]))
                    step = dict(step, packed=packed)
                out.append(step)
        return out, keys

    def remember(
        self, keys: list, executor, steps: list | None = None, constants: list | None = None
    ) -> None:
        """Keep what `executor`'s kernels packed (views of its bytes, or of the bytes they
        were given) for later plans. `steps` / `constants` (those given to offer()): a step
        that packed without a key (a kernel not known to pack, not keyed by offer) is keyed
        here, and its kernel's steps are keyed from now on."""
        packed = list(executor.packed_constants())
        late = {}
        if steps is not None:  # digests outside the lock
            for index, _ in packed:
                if (
                    index < len(keys)
                    and keys[index] is None
                    and index < len(steps)
                    and "packed" not in steps[index]
                ):
                    late[index] = self._step_key(steps[index], constants)
        with self._lock:
            for index in late:
                self._packing_kernels.add(steps[index]["kernel"])
            for index, items in packed:
                key = late.get(index, keys[index] if index < len(keys) else None)
                if key is None:
                    continue
                entries = self._entries.setdefault(key, [])
                for position, (layout, array) in enumerate(items):
                    while len(entries) <= position:
                        entries.append(OrderedDict())
                    if layout in entries[position]:
                        entries[position].move_to_end(layout)
                    else:
                        entries[position][layout] = array

    def remember_later(
        self, keys: list, executor, steps: list | None = None, constants: list | None = None
    ) -> None:
        """remember(), put off until the next offer() or packed_bytes(): an executor building
        its kernels behind its first run (core_executor.build_executor's build_behind) knows
        what they packed only once they are built, and asking at once would wait for them."""
        with self._lock:
            self._later.append((keys, executor, steps, constants))

    def _remember_put_off(self) -> None:
        with self._lock:
            later, self._later = self._later, []
        for args in later:
            self.remember(*args)

    def remember_steps(self, steps: list[dict], constants: list, executor) -> None:
        """remember() for an executor built without offer() (e.g. from a saved plan)."""
        self.remember([self._step_key(s, constants) for s in steps], executor)

    def packed_bytes(self) -> int:
        """Bytes of the distinct packed constants held."""
        self._remember_put_off()
        with self._lock:
            return sum(
                a.nbytes
                for entries in self._entries.values()
                for layouts in entries
                for a in layouts.values()
            )
