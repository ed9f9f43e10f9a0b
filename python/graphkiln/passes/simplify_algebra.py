# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Remove operations that do nothing at inference: identities, x*1, x+0, Dropout, casts
to the same type, and broadcasts an elementwise consumer would do anyway; CastLike becomes
the Cast it stands for."""

from __future__ import annotations

from ..ir import Node, TensorType, Value
from ..ir.infer import broadcast_dims
from .rewrite import Rewriter, apply_rules
from .util import is_scalar_const


def _same_type(a: Value | None, b: Value | None) -> bool:
    return (
        a is not None
        and b is not None
        and isinstance(a.type, TensorType)
        and a.type == b.type
        and a.type.is_static
    )


# Identity(x) -> x
def identity(node: Node, rw: Rewriter):
    return [node.inputs[0]]


# Dropout(x) -> x   (inference; only when the mask output is unused). In training mode
# (training_mode given and not a constant false) it draws a mask and scales: it stays.
def dropout(node: Node, rw: Rewriter):
    if len(node.outputs) > 1 and node.outputs[1] is not None and rw.users_of(node.outputs[1]):
        return None
    training = node.inputs[2] if len(node.inputs) > 2 else None
    if training is not None and not is_scalar_const(training, 0):
        return None
    return [node.inputs[0], None]


def _neutral(value: float, positions: tuple[int, ...]):
    # Add(x, 0) -> x ; Mul(x, 1) -> x ; Sub(x, 0) -> x ; Div(x, 1) -> x ; Pow(x, 1) -> x
    def rule(node: Node, rw: Rewriter):
        for pos in positions:
            other = 1 - pos
            if is_scalar_const(node.inputs[pos], value) and _same_type(
                node.inputs[other], node.outputs[0]
            ):
                return [node.inputs[other]]
        return None

    return rule


# Cast(x, to=T) where x is already T -> x
def cast(node: Node, rw: Rewriter):
    x = node.input(0)
    if isinstance(x.type, TensorType) and x.type.dtype == node.attrs["to"]:
        return [x]
    return None


# CastLike(x, like) -> Cast(x, to=dtype of like)   (same saturate / round_mode attributes)
def cast_like(node: Node, rw: Rewriter):
    like = node.inputs[1]
    if like is None or not isinstance(like.type, TensorType):
        return None
    return rw.emit_node("Cast", [node.inputs[0]], {**node.attrs, "to": like.type.dtype}).outputs


# Add(Expand(x, s), y) -> Add(x, y)   when broadcasting x against y gives the same shape
def drop_expand(node: Node, rw: Rewriter):
    for pos, v in enumerate(node.inputs):
        if v is None or v.producer is None or v.producer.op != "Expand":
            continue
        source = v.producer.input(0)
        others = [w for i, w in enumerate(node.inputs) if i != pos and w is not None]
        types = [w.type for w in [*others, source] if isinstance(w.type, TensorType)]
        if len(types) != len(others) + 1:
            continue
        try:
            dims = broadcast_dims(types[-1].dims, *(t.dims for t in types[:-1]))
        except Exception:  # noqa: BLE001 - shapes that don't broadcast: leave the Expand
            continue
        out = node.output(0).type
        if dims is not None and isinstance(out, TensorType) and out.is_static and dims == out.dims:
            inputs = list(node.inputs)
            inputs[pos] = source
            return rw.emit_node(node.op, inputs, dict(node.attrs)).outputs
    return None


BROADCASTING_OPS = (
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Where",
    "Max",
    "Min",
    "And",
    "Or",
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "PRelu",
)

RULES = [
    ("Identity", identity),
    ("Dropout", dropout),
    ("Add", _neutral(0.0, (0, 1))),
    ("Sub", _neutral(0.0, (1,))),
    ("Mul", _neutral(1.0, (0, 1))),
    ("Div", _neutral(1.0, (1,))),
    ("Pow", _neutral(1.0, (1,))),
    ("Cast", cast),
    ("CastLike", cast_like),
] + [(op, drop_expand) for op in BROADCASTING_OPS]


def run(graph, ctx) -> None:
    apply_rules(graph, RULES, ctx)
