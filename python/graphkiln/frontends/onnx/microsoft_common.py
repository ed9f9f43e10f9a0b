# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Helpers shared by the importers of onnxruntime's com.microsoft ops (microsoft_*.py): each
such op is written as a composition of IR ops, built with these."""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedOperatorError
from ...ir import DType, Value
from .context import ImportContext

DOMAIN = "com.microsoft"


def refuse(ctx: ImportContext, detail: str) -> UnsupportedOperatorError:
    """The error for a form of a com.microsoft op graphkiln does not import (raise it)."""
    return UnsupportedOperatorError(ctx.op_type, ctx.name, DOMAIN, ctx.opset, detail)


def node(ctx: ImportContext, op: str, inputs: list, attrs: dict | None = None, names=None):
    """Add one IR node; `names` (ONNX output names, None for an absent output) name its
    outputs, else one output named after the ONNX node. Returns the outputs."""
    if names is None:
        names = [f"{ctx.name or ctx.op_type.lower()}_{op.lower()}"]
    added = ctx.graph.add_node(op, inputs, attrs or {}, output_names=names, name=ctx.name)
    return added.outputs


def named(ctx: ImportContext, op: str, inputs: list, index: int, attrs: dict | None = None):
    """A single-output node named after ONNX output `index` (when the node has it)."""
    name = ctx.output_names[index] if index < len(ctx.output_names) else None
    return node(ctx, op, inputs, attrs, [name] if name else None)[0]


def ints(ctx: ImportContext, values) -> Value:
    return ctx.constant(np.asarray(values, dtype=np.int64))


def scalar_like(ctx: ImportContext, like: Value, value: float) -> Value:
    """A scalar constant of `like`'s element type (float32 when unknown)."""
    dtype = like.type.dtype.numpy if like.type is not None else np.float32
    return ctx.constant(np.asarray(value, dtype=dtype))


def rank(value: Value | None) -> int | None:
    t = None if value is None else value.type
    dims = getattr(t, "dims", None)
    return None if dims is None else len(dims)


def dims(value: Value | None) -> tuple | None:
    t = None if value is None else value.type
    return getattr(t, "dims", None)


def cast(ctx: ImportContext, value: Value, dtype: DType) -> Value:
    if value.type is not None and value.type.dtype == dtype:
        return value
    return ctx.add("Cast", value, to=dtype)


def output_wanted(ctx: ImportContext, index: int) -> bool:
    return index < len(ctx.output_names) and bool(ctx.output_names[index])
