# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Print a Graph as text that ir.parser reads back.

    graph main(%x: f32[1,4], %k: i64[1]) {
      %w: f32[2] = Constant() {value = tensor<f32[2]> [0.5, 1.0]}
      %y: f32[1,4] = Relu(%x)
      %v: f32[1,_d3], %i: i64[1,_d4] = TopK(%y, %k) {axis = -1, largest = 1, sorted = 1}
      return %y, %v
    }

Omitted optional inputs and outputs print as `_`. Tensors with more than
`inline_limit` elements print as base64 of their bytes (`b64"..."`).
"""

from __future__ import annotations

import base64
import json

import numpy as np

from .dtypes import DType
from .graph import Graph, Node, Value, ref
from .types import OptionalType, SequenceType, TensorType

INLINE_LIMIT = 64


def print_graph(graph: Graph, inline_limit: int = INLINE_LIMIT, elide: bool = False) -> str:
    """The graph as text. `elide=True` prints large constants as `...` (readable, not parseable)."""
    lines: list[str] = []
    _graph(graph, lines, "", inline_limit, elide)
    return "\n".join(lines) + "\n"


def format_type(t) -> str:
    if t is None:
        return "?"
    if isinstance(t, (TensorType, SequenceType, OptionalType)):
        return str(t)
    raise TypeError(f"not a value type: {t!r}")


def _value_decl(v: Value | None) -> str:
    if v is None:
        return "_"
    return ref(v.name) if v.type is None else f"{ref(v.name)}: {format_type(v.type)}"


def _graph(graph: Graph, lines: list[str], indent: str, limit: int, elide: bool) -> None:
    params = ", ".join(_value_decl(v) for v in graph.inputs)
    lines.append(f"{indent}graph {graph.name}({params}) {{")
    for node in graph.nodes:
        _node(node, lines, indent + "  ", limit, elide)
    outs = ", ".join(ref(v.name) for v in graph.outputs)
    lines.append(f"{indent}  return {outs}")
    lines.append(f"{indent}}}")


def _node(node: Node, lines: list[str], indent: str, limit: int, elide: bool) -> None:
    outs = ", ".join(_value_decl(v) for v in node.outputs)
    ins = ", ".join("_" if v is None else ref(v.name) for v in node.inputs)
    head = f"{indent}{outs} = {node.op}({ins})"
    attrs = [(k, v) for k, v in node.attrs.items() if v is not None]
    graphs = [(k, v) for k, v in attrs if isinstance(v, Graph)]
    plain = [(k, v) for k, v in attrs if not isinstance(v, Graph)]
    loc = f" loc({json.dumps(node.name)})" if node.name else ""
    if not graphs:
        body = ", ".join(f"{k} = {format_attr(v, limit, elide)}" for k, v in plain)
        lines.append(head + (f" {{{body}}}" if body else "") + loc)
        return
    lines.append(head + " {")
    for k, v in plain:
        lines.append(f"{indent}  {k} = {format_attr(v, limit, elide)},")
    for i, (k, g) in enumerate(graphs):
        sub: list[str] = []
        _graph(g, sub, indent + "  ", limit, elide)
        sub[0] = f"{indent}  {k} = " + sub[0].lstrip()
        if i < len(graphs) - 1:
            sub[-1] += ","
        lines.extend(sub)
    lines.append(f"{indent}}}" + loc)


def format_attr(value, limit: int = INLINE_LIMIT, elide: bool = False) -> str:
    if isinstance(value, DType):
        return value.value
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(format_attr(v, limit, elide) for v in value) + "]"
    if isinstance(value, np.ndarray):
        return format_tensor(value, limit, elide)
    raise TypeError(f"cannot print attribute value {value!r}")


def format_float(x: float) -> str:
    if x != x:
        return "nan"
    if x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    return repr(float(x))


def format_tensor(array: np.ndarray, limit: int = INLINE_LIMIT, elide: bool = False) -> str:
    dtype = DType.from_numpy(array.dtype)
    head = f"tensor<{TensorType(dtype, array.shape)}>"
    if array.size > limit and dtype is not DType.str:
        if elide:
            return head + " ..."
        data = base64.b64encode(np.ascontiguousarray(array).tobytes()).decode()
        return f'{head} b64"{data}"'
    flat = array.reshape(-1)
    if dtype is DType.str:
        items = [
            json.dumps(s.decode("utf-8", "surrogateescape") if isinstance(s, bytes) else str(s))
            for s in flat
        ]
    elif dtype is DType.bool:
        items = ["true" if b else "false" for b in flat]
    elif dtype.is_float:
        items = [format_float(float(x)) for x in flat]
    elif dtype.is_int:
        items = [str(int(x)) for x in flat]
    else:  # complex: bytes keep both parts exactly
        data = base64.b64encode(np.ascontiguousarray(array).tobytes()).decode()
        return f'{head} b64"{data}"'
    return f"{head} [{', '.join(items)}]"
