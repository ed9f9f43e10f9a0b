# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The pointwise opcode table, read from the C++ core (`_core.pointwise_ops()`, which
src/core/pointwise_ops.def fills): the one definition of every pointwise opcode that the
cpu and gpu interpreters compile, the lowering numbers its instructions by (lower_pointwise
.py), the gpu code generator writes expressions from (targets/gpu/codegen.py) and the test
emulator checks against. Nothing here repeats an op's meaning."""

from __future__ import annotations

import functools
from dataclasses import dataclass

RESULT_KINDS = ("same", "exact", "bool")


@dataclass(frozen=True)
class PointwiseOpcode:
    """One line of pointwise_ops.def. `ir_op`: the IR op lowered to exactly this opcode (""
    when the lowering composes it); `attrs`: the IR attributes passed as p0 (and p1);
    `result`: "same" (rounded to the node's dtype), "exact" (integer in, integer out) or
    "bool" (0 or 1); `expression`: C++ over a, b, c, p0, p1 in type T with gk_* math."""

    name: str
    arity: int
    ir_op: str
    attrs: tuple[str, ...]
    result: str
    expression: str


def _none(field: str) -> str:
    return "" if field == "_" else field


@functools.lru_cache(maxsize=1)
def pointwise_table() -> tuple[PointwiseOpcode, ...]:
    """The opcodes in opcode order (ImportError when the C++ core is not available)."""
    from ..._native import load_core

    rows = []
    for name, arity, ir_op, p0, p1, result, expression in load_core().pointwise_ops():
        if result not in RESULT_KINDS or not 0 <= arity <= 3:
            raise RuntimeError(
                f"pointwise_ops.def: opcode {name}: result {result!r} / arity "
                f"{arity} (accepted: {RESULT_KINDS}, 0 to 3)"
            )
        attrs = tuple(a for a in (_none(p0), _none(p1)) if a)
        rows.append(PointwiseOpcode(name, int(arity), _none(ir_op), attrs, result, expression))
    return tuple(rows)
