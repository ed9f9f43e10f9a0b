# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`input_shapes` of parse_onnx checked against the model's declared inputs before import:
an existing input name, a list of non-negative ints, the declared rank, and the declared
value of every fixed dim. Only symbolic dims (dim_param, no value, or -1) and dims declared 0
(which some exporters write for "unknown") may be chosen: a model exported with a fixed
dim may bake it into Reshape targets and the like, so changing it is refused here instead
of failing later in a target, or silently computing something else."""

from __future__ import annotations

import operator

import onnx

from ...ir import DType
from .symbolic_dims import declared_text, is_fixed


def check_input_shapes(gp: onnx.GraphProto, input_shapes: dict | None) -> dict[str, tuple]:
    """`input_shapes` as {name: tuple of ints}, or a ValueError / TypeError naming the input,
    its declared shape and what was given."""
    if not input_shapes:
        return {}
    if not isinstance(input_shapes, dict):
        raise TypeError(
            f"input_shapes must be a dict of input name -> list of ints, got "
            f"{type(input_shapes).__name__}"
        )
    initializers = {t.name for t in gp.initializer} | {s.values.name for s in gp.sparse_initializer}
    declared = {vi.name: vi for vi in gp.input if vi.name not in initializers}
    unknown = [name for name in input_shapes if name not in declared]
    if unknown:
        inputs = ", ".join(_declared(vi) for vi in declared.values()) or "none"
        raise ValueError(
            f"input_shapes names {sorted(map(str, unknown))}, which are not inputs "
            f"of the model (inputs: {inputs})"
        )
    return {name: _check_one(declared[name], dims) for name, dims in input_shapes.items()}


def _check_one(vi: onnx.ValueInfoProto, given) -> tuple:
    name = vi.name
    try:
        if isinstance(given, (str, bytes)):
            raise TypeError
        given = list(given)
    except TypeError:
        raise TypeError(
            f"input_shapes[{name!r}] = {given!r}: expected a list of ints "
            f"(the model declares {_declared(vi)})"
        ) from None
    dims = []
    for d in given:
        try:
            if isinstance(d, bool):
                raise TypeError
            dims.append(operator.index(d))
        except TypeError:
            raise TypeError(
                f"input_shapes[{name!r}] = {given!r}: dims must be ints, "
                f"got {d!r} (the model declares {_declared(vi)})"
            ) from None
    if any(d < 0 for d in dims):
        raise ValueError(
            f"input_shapes[{name!r}] = {dims}: dims must be >= 0 (the model "
            f"declares {_declared(vi)})"
        )
    which = vi.type.WhichOneof("value")
    if which != "tensor_type":
        raise ValueError(
            f"input_shapes[{name!r}]: input {name!r} is {which or 'untyped'}, "
            "not a tensor; input_shapes fixes tensor inputs only"
        )
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return tuple(dims)  # no declared shape: any rank
    declared = list(tt.shape.dim)
    if len(dims) != len(declared):
        raise ValueError(
            f"input_shapes[{name!r}] = {dims} has rank {len(dims)}, but the model "
            f"declares {_declared(vi)}, rank {len(declared)}"
        )
    for axis, (want, got) in enumerate(zip(declared, dims)):
        if is_fixed(want) and want.dim_value not in (got, 0):
            free = [
                f"{i} ({declared_text(d) if not is_fixed(d) else 'declared 0'})"
                for i, d in enumerate(declared)
                if not is_fixed(d) or d.dim_value == 0
            ]
            raise ValueError(
                f"input_shapes[{name!r}] = {dims}: dim {axis} is {got}, but the model declares "
                f"{_declared(vi)}, where dim {axis} is fixed at {want.dim_value}; "
                f"input_shapes may set symbolic dims only (here: "
                f"{', '.join(free) if free else 'none, every dim is fixed'})"
            )
    return tuple(dims)


def _declared(vi: onnx.ValueInfoProto) -> str:
    """The declared type as the IR prints it, symbolic dims by name: 'image: f32[N,3,H,W]'."""
    which = vi.type.WhichOneof("value")
    if which != "tensor_type":
        return f"{vi.name}: {which or 'untyped'}"
    tt = vi.type.tensor_type
    try:
        dtype = DType.from_onnx(tt.elem_type).value
    except ValueError:
        dtype = f"type{tt.elem_type}"
    if not tt.HasField("shape"):
        return f"{vi.name}: {dtype}[any shape]"
    dims = ",".join(declared_text(d) for d in tt.shape.dim)
    return f"{vi.name}: {dtype}[{dims}]"
