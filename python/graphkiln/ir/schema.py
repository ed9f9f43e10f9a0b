# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The one op schema table: inputs, outputs, typed attributes and type inference per op.

Schemas are declared in ir/ops/<family>.py with `define(...)`. Attribute kinds:
  int, float, str, ints, floats, strs, dtype, tensor, graph
An attribute whose default is REQUIRED must be given; default None means "absent".
Traits (TRAITS) say how the passes and targets may treat an op: pointwise (one output
element from the same-position input elements: the fusion passes chain them), view (only
reinterprets contiguous data), reduction (takes a pointwise prologue / epilogue), and the
gpu's half-precision policy: half_anchor (always runs in half), half_fp32 (always float32).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import GraphError
from .dtypes import DType
from .types import TensorType, ValueType

REQUIRED = object()
ATTR_KINDS = ("int", "float", "str", "ints", "floats", "strs", "dtype", "tensor", "graph")
TRAITS = ("pointwise", "view", "reduction", "half_anchor", "half_fp32")


@dataclass(frozen=True)
class Attr:
    name: str
    kind: str
    default: Any = None

    def __post_init__(self):
        if self.kind not in ATTR_KINDS:
            raise ValueError(f"attribute kind {self.kind!r} not in {ATTR_KINDS}")


@dataclass(frozen=True)
class OpSchema:
    """`inputs` / `outputs` are names; a trailing '?' marks optional, '*' variadic."""

    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: tuple[Attr, ...] = ()
    infer: Callable[[InferContext], list[ValueType]] | None = None
    doc: str = ""
    attr_map: dict[str, Attr] = field(default_factory=dict, compare=False, repr=False)
    traits: frozenset[str] = frozenset()

    # computed once per schema (type inference reads them for every node it infers)
    @cached_property
    def min_outputs(self) -> int:
        return sum(1 for o in self.outputs if not o.endswith(("?", "*")))

    @cached_property
    def min_inputs(self) -> int:
        return sum(1 for i in self.inputs if not i.endswith(("?", "*")))

    @cached_property
    def max_inputs(self) -> int | None:
        return None if any(i.endswith("*") for i in self.inputs) else len(self.inputs)


_SCHEMAS: dict[str, OpSchema] = {}


def define(
    name: str, inputs=(), outputs=("Y",), attrs=(), infer=None, doc: str = "", traits=()
) -> OpSchema:
    """Register one op. `attrs` items are Attr or (name, kind[, default]) tuples; `traits`
    names from TRAITS."""
    if name in _SCHEMAS:
        raise ValueError(f"op {name!r} defined twice")
    unknown = set(traits) - set(TRAITS)
    if unknown:
        raise ValueError(f"op {name!r}: unknown traits {sorted(unknown)} (accepted: {TRAITS})")
    attr_objs = tuple(a if isinstance(a, Attr) else Attr(*a) for a in attrs)
    schema = OpSchema(
        name,
        tuple(inputs),
        tuple(outputs),
        attr_objs,
        infer,
        doc,
        {a.name: a for a in attr_objs},
        frozenset(traits),
    )
    _SCHEMAS[name] = schema
    return schema


def get_schema(op: str) -> OpSchema:
    _load_ops()
    try:
        return _SCHEMAS[op]
    except KeyError:
        raise GraphError(f"unknown IR op {op!r}") from None


def all_schemas() -> dict[str, OpSchema]:
    _load_ops()
    return dict(_SCHEMAS)


def ops_with_trait(trait: str) -> frozenset[str]:
    """The names of the ops whose schema has `trait` (one of TRAITS)."""
    if trait not in TRAITS:
        raise ValueError(f"unknown trait {trait!r} (accepted: {TRAITS})")
    return frozenset(name for name, schema in all_schemas().items() if trait in schema.traits)


def require_ops(names, where: str):
    """`names` unchanged when each is a defined op; else ValueError naming `where` and the
    names no schema defines (a table of op names in a pass or target cannot drift from
    the schemas unnoticed)."""
    missing = sorted(set(names) - set(all_schemas()))
    if missing:
        raise ValueError(f"{where} names ops no schema defines: {', '.join(missing)}")
    return names


_ops_loaded = False


def _load_ops() -> None:
    global _ops_loaded
    if not _ops_loaded:  # get_schema runs per node of every inference: import once
        from . import ops  # noqa: F401  (registers every family once)

        _ops_loaded = True


# -- attributes ------------------------------------------------------------------------


def fill_attrs(schema: OpSchema, attrs: dict, where: str = "") -> dict:
    """Check attribute names and kinds, coerce values, and add defaults."""
    from .graph import Graph

    out = {}
    for key, value in attrs.items():
        spec = schema.attr_map.get(key)
        if spec is None:
            known = ", ".join(schema.attr_map) or "none"
            raise GraphError(f"{where}: op {schema.name} has no attribute {key!r} (known: {known})")
        out[key] = None if value is None else coerce_attr(spec, value, Graph, where)
    for spec in schema.attrs:
        if spec.name not in out:
            if spec.default is REQUIRED:
                raise GraphError(f"{where}: op {schema.name} needs attribute {spec.name!r}")
            out[spec.name] = spec.default
    return out


def coerce_attr(spec: Attr, value, graph_cls, where: str):
    kind = spec.kind
    try:
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        if kind == "str":
            return value.decode() if isinstance(value, bytes) else str(value)
        if kind == "ints":
            return tuple(int(v) for v in value)
        if kind == "floats":
            return tuple(float(v) for v in value)
        if kind == "strs":
            return tuple(v.decode() if isinstance(v, bytes) else str(v) for v in value)
        if kind == "dtype":
            return value if isinstance(value, DType) else DType.parse(str(value))
        if kind == "tensor":
            return value if isinstance(value, np.ndarray) else np.asarray(value)
        if kind == "graph":
            if not isinstance(value, graph_cls):
                raise TypeError("not a graph")
            return value
    except (TypeError, ValueError) as exc:
        raise GraphError(f"{where}: attribute {spec.name!r} must be {kind}: {exc}") from None
    raise AssertionError(kind)


# -- inference -------------------------------------------------------------------------


class InferContext:
    """What an op's `infer` sees: input types, attributes and constant inputs."""

    def __init__(self, node, schema: OpSchema):
        self.node = node
        self.schema = schema
        self.attrs = node.attrs
        self.num_outputs = len(node.outputs)

    def type(self, i: int) -> ValueType | None:
        if i >= len(self.node.inputs) or self.node.inputs[i] is None:
            return None
        return self.node.inputs[i].type

    def tensor(self, i: int) -> TensorType:
        t = self.type(i)
        if not isinstance(t, TensorType):
            raise GraphError(f"{self.where}: input {i} must be a tensor, got {t}")
        return t

    def has(self, i: int) -> bool:
        return i < len(self.node.inputs) and self.node.inputs[i] is not None

    def const(self, i: int) -> np.ndarray | None:
        return self.node.inputs[i].constant if self.has(i) else None

    @property
    def num_inputs(self) -> int:
        return len(self.node.inputs)

    @property
    def where(self) -> str:
        return f"{self.node.op} node {self.node.name!r}" if self.node.name else self.node.op


def infer_outputs(schema: OpSchema, node) -> list[ValueType | None]:
    n_in = len(node.inputs)
    if n_in < schema.min_inputs or (schema.max_inputs is not None and n_in > schema.max_inputs):
        hi = "any" if schema.max_inputs is None else schema.max_inputs
        raise GraphError(f"op {schema.name} takes {schema.min_inputs}..{hi} inputs, got {n_in}")
    for i in range(min(schema.min_inputs, n_in)):
        if node.inputs[i] is None:
            raise GraphError(f"op {schema.name}: input {i} ({schema.inputs[i]}) is required")
    if schema.infer is None:
        return [None] * len(node.outputs)
    types: list[ValueType | None] = list(schema.infer(InferContext(node, schema)))
    if len(types) < len(node.outputs):
        types += [None] * (len(node.outputs) - len(types))
    return types[: len(node.outputs)]
