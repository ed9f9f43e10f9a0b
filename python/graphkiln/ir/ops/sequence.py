# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of sequence and optional values: Sequence*, SplitToSequence, ConcatFromSequence,
Optional*."""

from __future__ import annotations

from ...errors import GraphError
from ..dtypes import DType
from ..schema import REQUIRED, define
from .. import infer
from ..types import OptionalType, SequenceType, TensorType, fresh_dim
from .control import forget_symbols, merge_types


def _elem(ctx, i: int = 0):
    """The element type of sequence input i (None when unknown)."""
    t = ctx.type(i)
    if t is None:
        return None
    if not isinstance(t, SequenceType):
        raise GraphError(f"{ctx.where}: input {i} must be a sequence, got {t}")
    return t.elem


def _sequence_construct(ctx):
    elem = None
    for i in range(ctx.num_inputs):
        elem = ctx.type(i) if i == 0 else merge_types(elem, ctx.type(i))
    return [SequenceType(elem)]


def _sequence_insert(ctx):
    elem = _elem(ctx)
    return [SequenceType(ctx.type(1) if elem is None else merge_types(elem, ctx.type(1)))]


def _split_to_sequence(ctx):
    x = ctx.tensor(0)
    if x.dims is None:
        return [SequenceType(TensorType(x.dtype, None))]
    axis = infer.normalize_axis(ctx.attrs["axis"], len(x.dims), ctx.where)
    dims = list(x.dims)
    if not ctx.has(1) and not ctx.attrs["keepdims"]:
        del dims[axis]
    else:
        dims[axis] = 1 if not ctx.has(1) else fresh_dim()
    return [SequenceType(TensorType(x.dtype, tuple(dims)))]


def _concat_from_sequence(ctx):
    elem = _elem(ctx)
    if not isinstance(elem, TensorType):
        return [None]
    if elem.dims is None:
        return [TensorType(elem.dtype, None)]
    new_axis = bool(ctx.attrs["new_axis"])
    rank = len(elem.dims) + new_axis
    axis = infer.normalize_axis(ctx.attrs["axis"], rank, ctx.where)
    dims = list(elem.dims)
    if new_axis:
        dims.insert(axis, fresh_dim("n"))
    else:
        dims[axis] = fresh_dim()
    return [TensorType(elem.dtype, tuple(dims))]


def _sequence_map(ctx):
    # each output is a sequence of what the body gives for one element
    return [SequenceType(forget_symbols(v.type)) for v in ctx.attrs["body"].outputs]


def parse_type(text: str):
    """The value type written `text` in the IR's text form (as `str(type)` prints it)."""
    from ..parser import _Tokens, _type

    return _type(_Tokens(text))


def _optional(ctx):
    if ctx.has(0):
        return [OptionalType(ctx.type(0))]
    if ctx.attrs["type"] is None:
        raise GraphError(f"{ctx.where}: an empty Optional needs its `type` attribute")
    return [OptionalType(parse_type(ctx.attrs["type"]))]


def _optional_get_element(ctx):
    t = ctx.type(0)
    return [t.elem if isinstance(t, OptionalType) else t]


define("SequenceConstruct", ("inputs*",), ("output_sequence",), (), _sequence_construct)
define(
    "SequenceEmpty",
    (),
    ("output",),
    [("dtype", "dtype", DType.f32)],
    lambda ctx: [SequenceType(TensorType(ctx.attrs["dtype"], None))],
)
define("SequenceAt", ("input_sequence", "position"), ("tensor",), (), lambda ctx: [_elem(ctx)])
define(
    "SequenceInsert",
    ("input_sequence", "tensor", "position?"),
    ("output_sequence",),
    (),
    _sequence_insert,
)
define("SequenceErase", ("input_sequence", "position?"), ("output_sequence",), (), infer.same_as(0))
define(
    "SequenceLength", ("input_sequence",), ("length",), (), lambda ctx: [TensorType(DType.i64, ())]
)
define(
    "SplitToSequence",
    ("input", "split?"),
    ("output_sequence",),
    [("axis", "int", 0), ("keepdims", "int", 1)],
    _split_to_sequence,
)
define(
    "ConcatFromSequence",
    ("input_sequence",),
    ("concat_result",),
    [("axis", "int", REQUIRED), ("new_axis", "int", 0)],
    _concat_from_sequence,
)
# body: (element, additional inputs (an element of each sequence, tensors whole)...) -> outputs
define(
    "SequenceMap",
    ("input_sequence", "additional_inputs*"),
    ("out_sequence*",),
    [("body", "graph", REQUIRED)],
    _sequence_map,
)
# `type` is the element type of an empty optional, in the IR's text form (e.g. "seq<f32[5]>")
define("Optional", ("input?",), ("output",), [("type", "str", None)], _optional)
define("OptionalHasElement", ("input?",), ("output",), (), lambda ctx: [TensorType(DType.bool, ())])
define("OptionalGetElement", ("input",), ("output",), (), _optional_get_element)
