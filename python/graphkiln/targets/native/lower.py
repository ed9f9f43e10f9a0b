# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Lowering: IR nodes (static shapes) -> a Plan of kernel calls. Each op's lowering is a
function `lower(node, ctx)` in a lower_<family>.py module, listed in table.py; it asks the
LoweringContext for its input and output slots and emits steps."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager

import numpy as np

from ...errors import CompileError
from ...ir import DType, Node, TensorType, Value
from ...ir.graph import node_reads
from .kernel_contracts import HOST_STEP_PREFIX, check_step
from .layout import channels_last_values
from .plan import (
    ARENA,
    CHANNELS_LAST,
    CONSTANT,
    INPUT,
    OUTPUT,
    PLAIN,
    Plan,
    Slot,
    Step,
    Storage,
    itemsize,
)


class LoweringError(CompileError, ValueError):
    """A node the cpu or gpu target cannot lower (unsupported op, attribute or dynamic
    shape). A CompileError (so a GraphkilnError), and a ValueError as it always was.

    Raised for missing kernels (see `missing`), it also says what is missing as data:
    `target` (the target's name), `ops` (the op names it cannot run, sorted), `node` (the
    first such node) and `fallback` (the target that runs them instead when asked, or None).
    `problem` is the message without the advice; the message adds the advice as Python
    spells it (`compile(..., fallback='ref')`), the command line its own (`--fallback ref`)."""

    def __init__(
        self,
        problem: str,
        *,
        target: str | None = None,
        ops=(),
        node: str | None = None,
        fallback: str | None = None,
    ):
        self.problem, self.target, self.ops = problem, target, tuple(ops)
        self.node, self.fallback = node, fallback
        message = problem
        if fallback:
            message += (
                f"; compile(..., fallback={fallback!r}) runs "
                f"{'it' if len(self.ops) == 1 else 'them'} on {fallback}"
            )
        super().__init__(message)

    @classmethod
    def missing(
        cls, target: str, nodes: Sequence[Node], detail: str = "", fallback: str | None = None
    ) -> LoweringError:
        """The error for `nodes` (not empty) that `target` cannot run: "the cpu target has no
        kernel for If, LSTM (first: node 'y')", `detail` after the node's name."""
        ops = sorted({n.op for n in nodes})
        first = node_label(nodes[0])
        verb = "cannot run" if detail else "has no kernel for"
        problem = (
            f"the {target} target {verb} {', '.join(ops)} (first: node {first!r}"
            f"{': ' + detail if detail else ''})"
        )
        return cls(problem, target=target, ops=ops, node=first, fallback=fallback)


def node_label(node: Node) -> str:
    """A node's name, else the name of its first output (ONNX nodes are often unnamed)."""
    if node.name:
        return node.name
    return next((v.name for v in node.outputs if v is not None), node.op)


def static_dims(value: Value) -> tuple[int, ...]:
    t = value.type
    if not isinstance(t, TensorType) or t.dims is None:
        raise LoweringError(f"value {value.name!r} is not a tensor of known rank")
    if not all(isinstance(d, int) for d in t.dims):
        raise LoweringError(
            f"value {value.name!r} has dynamic dims {t.dims}; the cpu target "
            "compiles a plan per input shape and needs every dim known"
        )
    return tuple(t.dims)


def plain_attrs(node: Node, skip: Sequence[str] = ()) -> dict:
    """The node's attributes as kernel attributes: ints, floats, strings and lists of them
    (dtypes as their short names); graphs and tensors are left out."""
    out = {}
    for name, value in node.attrs.items():
        if name in skip or value is None:
            continue
        converted = _plain(value)
        if converted is not None:
            out[name] = converted
    return out


def _plain(value):
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, DType):
        return value.value
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value]
        if any(i is None or isinstance(i, (list, tuple)) for i in items):
            return None
        if any(isinstance(i, float) for i in items) and all(
            isinstance(i, (int, float)) for i in items
        ):
            return [float(i) for i in items]
        return items
    return None


class LoweringContext:
    def __init__(
        self,
        nodes: list[Node],
        inputs: list[Value],
        outputs: list[Value],
        lowerings: dict[str, Callable],
        channels_last: bool = True,
        target: str = "cpu",
    ):
        """`channels_last=False` keeps every tensor plain (the gpu target's kernels read
        NCHW); `target` names the target in errors."""
        self.plan = Plan()
        self.target = target
        self.lowerings = lowerings
        self._host_target: str | None = None  # host_steps(): the kernels' target
        self.nodes = nodes
        self.graph_outputs = list(outputs)
        self._slot: dict[Value, int] = {}
        self._plain_copy: dict[int, int] = {}
        self._channels_last_copy: dict[int, int] = {}
        self._output_index: dict[Value, int] = {}
        self._count_slots: list[int] = []  # run_count(): hidden outputs after the graph's
        for index, v in enumerate(outputs):
            self._output_index.setdefault(v, index)
        readers: dict[Value, list[Node]] = {}
        for node in nodes:
            for v in node_reads(node):  # an If's branches count as readers of what they read
                readers.setdefault(v, []).append(node)
        self.readers = readers
        self.channels_last = (
            channels_last_values(nodes, set(outputs), readers) if channels_last else set()
        )
        for index, v in enumerate(inputs):
            storage = self._storage(INPUT, _nbytes(v), index)
            self.plan.input_slots.append(self._new_slot(v, PLAIN, storage))

    # -- slots -------------------------------------------------------------------------
    def _storage(self, kind: int, nbytes: int, index: int = 0) -> int:
        self.plan.storages.append(Storage(kind, nbytes, index))
        return len(self.plan.storages) - 1

    def _new_slot(
        self,
        value: Value | None,
        layout: str,
        storage: int,
        dtype: DType | None = None,
        dims=None,
        byte_offset: int = 0,
    ) -> int:
        if value is not None:
            dtype, dims = value.type.dtype, static_dims(value)
        self.plan.slots.append(
            Slot(dtype, tuple(int(d) for d in dims), layout, storage, byte_offset)
        )
        slot = len(self.plan.slots) - 1
        if value is not None:
            self._slot[value] = slot
        return slot

    def layout_of(self, value: Value) -> str | None:
        """The layout of the slot holding `value`, None before it is computed."""
        slot = self._slot.get(value)
        return None if slot is None else self.plan.slots[slot].layout

    def slot_of(self, value: Value) -> int:
        """The slot already holding `value` (a constant gets one on first use)."""
        if value in self._slot:
            return self._slot[value]
        data = value.constant
        if data is None:
            raise LoweringError(f"value {value.name!r} is read before it is computed")
        return self.constant(np.asarray(data), value)

    def input(self, value: Value | None, layouts: Sequence[str] = (PLAIN,)) -> int | None:
        """The slot to read `value` from, in one of `layouts` (a reorder is inserted, once
        per value, when it lives in another layout)."""
        if value is None:
            return None
        slot = self.slot_of(value)
        if self.plan.slots[slot].layout in layouts:
            return slot
        return self._copy_in(value, slot, PLAIN, self._plain_copy, "to_plain")

    def input_channels_last(self, value: Value) -> int:
        """The slot to read 4-D `value` from channels-last (a Copy is inserted, once per
        value, when it lives plain)."""
        slot = self.slot_of(value)
        if self.plan.slots[slot].layout == CHANNELS_LAST:
            return slot
        return self._copy_in(
            value, slot, CHANNELS_LAST, self._channels_last_copy, "to_channels_last"
        )

    def _copy_in(
        self, value: Value, slot: int, layout: str, copies: dict[int, int], suffix: str
    ) -> int:
        """`slot`'s data copied into a new slot of `layout`, once per slot (`copies`)."""
        if slot not in copies:
            src = self.plan.slots[slot]
            copy = self.temp(src.dtype, src.dims, layout)
            self.emit("Copy", [slot], [copy], {}, f"{value.name}/{suffix}")
            copies[slot] = copy
        return copies[slot]

    def output_channels_last(self, value: Value) -> int:
        """A new channels-last slot for 4-D node output `value` (plain when it is a graph
        output: those are written straight into the caller's array)."""
        if value in self._output_index and value not in self._slot:
            return self.output(value)
        return self._new_slot(value, CHANNELS_LAST, self._storage(ARENA, _nbytes(value)))

    def output(self, value: Value, layouts: Sequence[str] = (PLAIN,)) -> int:
        """A new slot for a node output: a graph output is written straight into the
        caller's array (plain); channels-last where the layout analysis chose it and the
        kernel accepts it."""
        if value in self._output_index and value not in self._slot:
            storage = self._storage(OUTPUT, _nbytes(value), self._output_index[value])
            return self._new_slot(value, PLAIN, storage)
        layout = (
            CHANNELS_LAST if (CHANNELS_LAST in layouts and value in self.channels_last) else PLAIN
        )
        return self._new_slot(value, layout, self._storage(ARENA, _nbytes(value)))

    def bounded_output(self, value: Value, dims) -> int:
        """The slot of a node output whose dims the run decides (NonMaxSuppression's
        rows): `dims`, the kernel's bound, in the output array of the segment; the kernel
        fills the rows after its result with -1 and the cpu segment cuts the array at the
        first row starting with a negative value (native/bounded.py, bounded_rows),
        or, for a counted kernel, to the length it writes to its run_count() slot along
        the axis its step's `cut_axes` names (native/bounded.py, COUNTED_KERNELS).
        Only for segment outputs: the plan's other nodes never read such a value (its
        dims are not static, so no lowering takes it)."""
        if value not in self._output_index or value in self._slot:
            raise LoweringError(
                f"value {value.name!r} has dims decided at run time: only a segment output"
            )
        nbytes = int(np.prod(dims, dtype=np.int64)) * itemsize(value.type.dtype)
        storage = self._storage(OUTPUT, nbytes, self._output_index[value])
        slot = self._new_slot(None, PLAIN, storage, value.type.dtype, dims)
        self._slot[value] = slot
        return slot

    def run_count(self) -> int:
        """An i64[1] slot a counted kernel writes its result's length to (Unique, Compress,
        NonZero: their bounded outputs' length along a `cut_axes` axis): a hidden segment
        output after the graph's outputs, which the cpu segment reads to cut those outputs
        and then drops (native/bounded.py, COUNTED_KERNELS; the cpu segments and gpu plans cut)."""
        index = len(self.graph_outputs) + len(self._count_slots)
        slot = self._new_slot(None, PLAIN, self._storage(OUTPUT, 8, index), DType.i64, (1,))
        self._count_slots.append(slot)
        return slot

    def temp(self, dtype: DType, dims, layout: str = PLAIN) -> int:
        nbytes = int(np.prod(dims, dtype=np.int64)) * itemsize(dtype)
        return self._new_slot(None, layout, self._storage(ARENA, nbytes), dtype, dims)

    def constant(
        self, array: np.ndarray, value: Value | None = None, dtype: DType | None = None
    ) -> int:
        """A constant slot holding `array` (C-contiguous); bound to `value` when given."""
        array = np.asarray(array, order="C")
        self.plan.constants.append(array)
        storage = self._storage(CONSTANT, array.nbytes, len(self.plan.constants) - 1)
        if value is not None:
            return self._new_slot(value, PLAIN, storage)
        return self._new_slot(
            None, PLAIN, storage, dtype or DType.from_numpy(array.dtype), array.shape
        )

    def alias(
        self,
        value: Value | None,
        slot: int,
        dims=None,
        layout: str | None = None,
        byte_offset: int = 0,
    ) -> int:
        """A view of `slot`'s bytes: `value`'s dims (or `dims`), the same layout unless
        `layout` says how the view reads the bytes (e.g. NHWC plain data seen as NCHW
        channels-last), starting `byte_offset` bytes after the slot's start."""
        src = self.plan.slots[slot]
        layout = layout or src.layout
        offset = src.byte_offset + byte_offset
        if value is not None:
            return self._new_slot(value, layout, src.storage, byte_offset=offset)
        return self._new_slot(None, layout, src.storage, src.dtype, dims, offset)

    def bind(self, value: Value, slot: int) -> None:
        """Make `value` live in `slot` (e.g. a Fused node's output in its body's result)."""
        self._slot[value] = slot

    def is_graph_output(self, value: Value) -> bool:
        return value in self._output_index

    def slot(self, slot_id: int) -> Slot:
        return self.plan.slots[slot_id]

    def emit(
        self,
        kernel: str,
        inputs: list[int | None],
        outputs: list[int],
        attrs: dict | None = None,
        name: str = "",
    ) -> None:
        """Append a step, checked against its kernel's contract (kernel_contracts.py)."""
        attrs = dict(attrs or {})
        if self._host_target is not None:  # a host step: the host target's kernel, named so
            error = check_step(self._host_target, kernel, attrs, len(inputs), len(outputs))
            kernel = HOST_STEP_PREFIX + kernel
        else:
            error = check_step(self.target, kernel, attrs, len(inputs), len(outputs))
        if error:
            raise LoweringError(f"lowering node {name!r} for {self.target}: {error}")
        self.plan.steps.append(Step(kernel, list(inputs), list(outputs), attrs, name))

    @contextmanager
    def host_steps(self, host_target: str, lowerings: dict[str, Callable]):
        """Lower with another target's table whose kernels run on the host (the gpu's host
        steps: targets/gpu/host_steps.py): every step emitted inside is checked against
        `host_target`'s contracts and named `HOST_STEP_PREFIX + kernel` (the executor runs it
        between copies to and from the host: src/gpu/host_step.hip). Slots stay plain."""
        saved = self._host_target, self.lowerings
        self._host_target, self.lowerings = host_target, lowerings
        try:
            yield
        finally:
            self._host_target, self.lowerings = saved

    @contextmanager
    def branch_scope(self, nodes: list[Node]):
        """Lower a branch of an If (lower_control.py) inside this: its nodes count as
        readers while it lowers, and the layout copies it makes are dropped after it (they
        are written only when the branch runs)."""
        copies = dict(self._plain_copy), dict(self._channels_last_copy)
        added = []
        for node in nodes:
            for v in node_reads(node):
                self.readers.setdefault(v, []).append(node)
                added.append(v)
        try:
            yield
        finally:
            self._plain_copy, self._channels_last_copy = copies
            for v in added:
                self.readers[v].pop()

    # -- whole segment -----------------------------------------------------------------
    def lower_all(self) -> Plan:
        for node in self.nodes:
            if node.op == "Constant":
                continue
            lower = self.lowerings.get(node.op)
            if lower is None:
                raise LoweringError(
                    f"the {self.target} target has no kernel for {node.op} (node {node.name!r})"
                )
            lower(node, self)
        for index, value in enumerate(self.graph_outputs):
            slot = self.slot_of(value)
            storage = self.plan.storages[self.plan.slots[slot].storage]
            if storage.kind == OUTPUT and storage.index == index:
                continue
            target = self._new_slot(
                None,
                PLAIN,
                self._storage(OUTPUT, _nbytes(value), index),
                value.type.dtype,
                static_dims(value),
            )
            self.emit("Copy", [slot], [target], {}, f"{value.name}/output")
        self.plan.output_slots = [self._output_slot(i) for i in range(len(self.graph_outputs))]
        self.plan.output_slots += self._count_slots  # run_count(): after the graph's outputs
        self.plan.place_arena()
        return self.plan

    def _output_slot(self, index: int) -> int:
        for slot_id, slot in enumerate(self.plan.slots):
            storage = self.plan.storages[slot.storage]
            if storage.kind == OUTPUT and storage.index == index:
                return slot_id
        raise LoweringError(f"graph output {index} was never written")


def _nbytes(value: Value) -> int:
    return int(np.prod(static_dims(value), dtype=np.int64)) * itemsize(value.type.dtype)
