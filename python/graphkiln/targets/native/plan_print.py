# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A Plan as text, and its verifier.

`format_plan(plan)` / `print_plan(plan)`: the header (steps, arena bytes, constants), the
plan's inputs and outputs, the constants with their sizes, then every step in order with
its kernel, node name, input and output slots (dtype, dims, layout, where they live: arena
offset, constant / input / output number) and attributes (long lists and strings elided).
`format_saved(saved)` prints a cpu plan loaded from a saved program the same way (its
steps are executor dicts: no slot numbers). `verify_plan(plan, target)` checks that every
slot a step names exists, that each storage and slot lies within its buffer (the arena,
a constant), and that the steps keep their kernels' contracts (kernel_contracts.py)."""

from __future__ import annotations

import sys

from ...errors import CompileError
from ...ir import DType
from .plan import ARENA, CHANNELS_LAST, CONSTANT, INPUT, OUTPUT, Plan

KIND = {ARENA: "arena", CONSTANT: "constant", INPUT: "input", OUTPUT: "output"}
MAX_ITEMS = 8  # list attributes longer than this show their first items only
MAX_CHARS = 48  # so do strings (generated kernel sources)


def print_plan(plan: Plan, file=None) -> None:
    print(format_plan(plan), file=file or sys.stdout)


def format_plan(plan: Plan) -> str:
    const_bytes = sum(int(c.nbytes) for c in plan.constants)
    lines = [
        f"plan: {len(plan.steps)} steps, arena {plan.arena_bytes} bytes (naive "
        f"{plan.naive_bytes}), {len(plan.constants)} constants ({const_bytes} bytes)"
    ]
    lines.append("inputs: " + (", ".join(_slot(plan, s) for s in plan.input_slots) or "none"))
    lines.append("outputs: " + (", ".join(_slot(plan, s) for s in plan.output_slots) or "none"))
    lines += _constants(plan.constants)
    for index, step in enumerate(plan.steps):
        lines.append(f"  {index:>3} {step.kernel}" + (f"  '{step.name}'" if step.name else ""))
        ins = ["-" if s is None else _slot(plan, s) for s in step.inputs]
        lines += _io(ins, [_slot(plan, s) for s in step.outputs], step.attrs)
    return "\n".join(lines)


def format_saved(saved) -> str:
    """A saved cpu plan segment (targets/cpu/saved_plan.py's SavedPlan)."""
    const_bytes = sum(int(c.nbytes) for c in saved.constants)
    lines = [
        f"plan (loaded from a saved program): {len(saved.steps)} steps, arena "
        f"{saved.arena_bytes} bytes, {len(saved.constants)} constants ({const_bytes} "
        "bytes)"
    ]
    lines += _constants(saved.constants)
    for index, step in enumerate(saved.steps):
        name = step.get("name")
        lines.append(f"  {index:>3} {step['kernel']}" + (f"  '{name}'" if name else ""))
        ins = ["-" if t is None else _arg(t) for t in step["inputs"]]
        lines += _io(ins, [_arg(t) for t in step["outputs"]], step["attrs"])
    return "\n".join(lines)


NO_PLAN = (
    "no plan is built yet: a plan is built per input shape signature on the first "
    "run with it (or while compiling, with compile(..., shapes=[...]))"
)


def format_plans(input_names: list[str], plans: list[tuple]) -> str:
    """An executable's plans: [(input shapes, keyed by values too, [segment texts])], least
    recently used first, as `Executable.print_plan` prints them."""
    if not plans:
        return NO_PLAN
    out = []
    for n, (shapes, by_values, texts) in enumerate(plans):
        names = (
            input_names
            if len(input_names) == len(shapes)
            else [f"#{i}" for i in range(len(shapes))]
        )
        sig = ", ".join(f"{name}={list(dims)}" for name, dims in zip(names, shapes))
        extra = " and the values of its parameter inputs" if by_values else ""
        out.append(f"== plan {n + 1} of {len(plans)}: inputs {sig or 'none'}{extra}")
        for i, text in enumerate(texts):
            out.append(text if len(texts) == 1 else f"-- segment {i + 1} of {len(texts)}: {text}")
    return "\n".join(out)


def _constants(constants) -> list[str]:
    if not constants:
        return []
    items = [
        f"c{i} {_dtype(c.dtype)}{list(c.shape)} {int(c.nbytes)} B" for i, c in enumerate(constants)
    ]
    shown = items[: MAX_ITEMS * 2]
    more = f", ... ({len(items)} constants)" if len(items) > len(shown) else ""
    return ["constants: " + ", ".join(shown) + more]


def _dtype(dtype) -> str:
    try:
        return DType.from_numpy(dtype).value
    except (KeyError, ValueError, TypeError):
        return str(dtype)


def _io(ins: list[str], outs: list[str], attrs: dict) -> list[str]:
    lines = [f"        in:  {t}" if i == 0 else f"             {t}" for i, t in enumerate(ins)]
    lines += [f"        out: {t}" if i == 0 else f"             {t}" for i, t in enumerate(outs)]
    if attrs:
        lines.append(
            "        attrs: " + " ".join(f"{k}={format_value(v)}" for k, v in sorted(attrs.items()))
        )
    return lines


def _slot(plan: Plan, slot_id: int) -> str:
    slot = plan.slots[slot_id]
    storage = plan.storages[slot.storage]
    where = _where(
        storage.kind,
        storage.index,
        storage.offset + slot.byte_offset if storage.kind == ARENA else slot.byte_offset,
    )
    layout = " nhwc" if slot.layout == CHANNELS_LAST else ""
    return f"s{slot_id} {slot.dtype.value}{list(slot.dims)}{layout} {where}"


def _arg(t: dict) -> str:
    kind, index, offset = t["ref"]
    where = _where(kind, index, offset)
    return f"{t['dtype']}{list(t['dims'])} strides {list(t['strides'])} {where}"


def _where(kind: int, index: int, offset: int) -> str:
    if kind == ARENA:
        return f"arena@{offset}"
    return f"{KIND[kind]} {index}" + (f" +{offset}" if offset else "")


def format_value(value) -> str:
    if isinstance(value, str):
        if len(value) > MAX_CHARS:
            return repr(value[:MAX_CHARS]) + f"...({len(value)} chars)"
        return repr(value)
    if isinstance(value, (list, tuple)):
        items = [format_value(v) for v in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            items.append(f"... {len(value)} items")
        return "[" + ", ".join(items) + "]"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


class PlanError(CompileError, ValueError):
    """A plan that breaks an invariant: a slot that does not exist, a buffer outside its
    storage, a step outside its kernel's contract."""


def verify_plan(plan: Plan, target: str | None = None) -> None:
    """Raise PlanError listing every problem found (None: the plan is sound). `target`
    ("cpu" / "gpu") also checks each step against its kernel's contract."""
    from .kernel_contracts import check_step

    problems: list[str] = []
    n_slots, n_storages = len(plan.slots), len(plan.storages)
    for i, storage in enumerate(plan.storages):
        if storage.kind == ARENA and storage.offset + storage.nbytes > plan.arena_bytes:
            if _used(plan, i):
                problems.append(
                    f"storage {i}: arena bytes [{storage.offset}, "
                    f"{storage.offset + storage.nbytes}) past the arena's "
                    f"{plan.arena_bytes}"
                )
        if storage.kind == CONSTANT and (
            storage.index >= len(plan.constants)
            or plan.constants[storage.index].nbytes != storage.nbytes
        ):
            problems.append(f"storage {i}: constant {storage.index} missing or of another size")
    for i, slot in enumerate(plan.slots):
        if not 0 <= slot.storage < n_storages:
            problems.append(f"slot {i}: storage {slot.storage} does not exist")
        elif slot.byte_offset + slot.nbytes > plan.storages[slot.storage].nbytes:
            end = slot.byte_offset + slot.nbytes
            problems.append(
                f"slot {i}: bytes [{slot.byte_offset}, {end}) past its storage's "
                f"{plan.storages[slot.storage].nbytes}"
            )
    for index, step in enumerate(plan.steps):
        bad = [s for s in [*step.inputs, *step.outputs] if s is not None and not 0 <= s < n_slots]
        if bad:
            problems.append(f"step {index} ({step.kernel} '{step.name}'): slots {bad} do not exist")
        if target is not None:
            error = check_step(target, step.kernel, step.attrs, len(step.inputs), len(step.outputs))
            if error:
                problems.append(f"step {index} '{step.name}': {error}")
    for name, slots, kind in (
        ("input", plan.input_slots, INPUT),
        ("output", plan.output_slots, OUTPUT),
    ):
        for i, s in enumerate(slots):
            if not 0 <= s < n_slots or plan.storages[plan.slots[s].storage].kind != kind:
                problems.append(f"{name} {i}: slot {s} is not an {name} buffer")
    if problems:
        raise PlanError("the plan is not sound:\n  " + "\n  ".join(problems))


def _used(plan: Plan, storage: int) -> bool:
    """Whether a step touches the storage (place_arena leaves unused ones unplaced)."""
    return any(
        s is not None and plan.slots[s].storage == storage
        for step in plan.steps
        for s in [*step.inputs, *step.outputs]
    )
