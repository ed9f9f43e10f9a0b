# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""One `Pointwise` step of the gpu target from a run of pointwise IR nodes: the shared
emit_pointwise (targets/native/lower_pointwise.py) writes its register program, and the step
also carries the program as generated CUDA/HIP source (codegen.py), which the device
compiles at plan build. Used by lower_pointwise.py and by the lowerings that wrap a kernel
in pointwise steps (lower_norm.py, lower_linalg.py's integer MaxPool); it imports none of
them."""

from __future__ import annotations

import os

from ...ir import Node, Value
from ..native.lower import LoweringContext
from ..native.lower_pointwise import emit_pointwise
from .codegen import CodegenError, pointwise_source


def emit_program(
    nodes: list[Node], result: Value, ctx: LoweringContext, name: str, out_slot: int | None = None
) -> int:
    """One Pointwise step computing `result` from the nodes it needs among `nodes`."""
    produced = {v: n for n in nodes for v in n.outputs if v is not None}
    needed: set[Node] = set()
    stack = [result]
    while stack:
        node = produced.get(stack.pop())
        if node is not None and node not in needed:
            needed.add(node)
            stack.extend(v for v in node.inputs if v is not None)
    members = [n for n in nodes if n in needed]
    bindings = {}
    for n in members:
        for v in n.inputs:
            if v is not None and v not in produced and v.constant is None:
                bindings[v] = ctx.input(v)
    out = ctx.output(result) if out_slot is None else out_slot
    emit_pointwise(ctx, members, bindings, result, out, name)
    attach_source(ctx, ctx.plan.steps[-1])
    return out


def attach_source(ctx: LoweringContext, step) -> None:
    """Add the generated kernel of a Pointwise step to its attrs (the interpreter's stay)."""
    inputs = [(ctx.slot(s).dtype, ctx.slot(s).dims, ctx.slot(s).strides) for s in step.inputs]
    out = ctx.slot(step.outputs[0])
    try:
        source = pointwise_source(step.attrs, inputs, (out.dtype, out.dims))
    except CodegenError:
        return  # the interpreter runs it (e.g. an empty output)
    step.attrs.update(
        jit_source=source.text,
        jit_entry=source.entry,
        jit_maps=source.maps,
        jit_aligned=source.aligned,
    )
    dump_source(source.text, source.entry)
    # the plan's first generated kernel lists the later ones: the device compiles them all
    # in parallel when it builds that one (attrs "jit_prefetch", "jit_prefetch_entries")
    first = next(s for s in ctx.plan.steps if "jit_source" in s.attrs)
    if first is not step:
        entries = first.attrs.setdefault("jit_prefetch_entries", [])
        if source.entry != first.attrs["jit_entry"] and source.entry not in entries:
            entries.append(source.entry)
            first.attrs.setdefault("jit_prefetch", []).append(source.text)


def dump_source(text: str, entry: str) -> None:
    """GRAPHKILN_GPU_DUMP_SRC=folder: write the source as <folder>/<entry>.cu (the entry name
    is a hash of the source)."""
    from ... import env

    folder = env.get("GRAPHKILN_GPU_DUMP_SRC")
    if not folder:
        return
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{entry}.cu")
    if not os.path.exists(path):
        temp = f"{path}.{os.getpid()}.tmp"
        with open(temp, "w") as f:
            f.write(text)
        os.replace(temp, path)
