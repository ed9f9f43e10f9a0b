# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Parse the text ir.printer writes back into a Graph (see printer.py for the syntax)."""

from __future__ import annotations

import base64
import json
import re

import numpy as np

from ..errors import GraphError, ParseError
from .dtypes import DType
from .graph import Graph, Value
from .schema import get_schema
from .types import OptionalType, SequenceType, TensorType, ValueType

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|\#[^\n]*)
  | (?P<b64>b64"[A-Za-z0-9+/=]*")
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<value>%(?:[A-Za-z0-9_.]+|"(?:[^"\\]|\\.)*"))
  | (?P<number>-?(?:inf\b|nan\b|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<punct>[()\[\]{}<>,=:*?])
""",
    re.VERBOSE,
)


class _Tokens:
    def __init__(self, text: str):
        self.text = text
        self.items: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m:
                raise self._error(pos, f"unexpected character {text[pos]!r}")
            kind = m.lastgroup  # every alternative of _TOKEN is a named group
            assert kind is not None
            if kind != "ws":
                self.items.append((kind, m.group(), pos))
            pos = m.end()
        self.items.append(("eof", "", len(text)))
        self.i = 0

    def _error(self, pos: int, msg: str) -> ParseError:
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return ParseError(f"line {line}, column {col}: {msg}")

    def peek(self, k: int = 0) -> tuple[str, str, int]:
        return self.items[min(self.i + k, len(self.items) - 1)]

    def next(self) -> tuple[str, str, int]:
        tok = self.items[self.i]
        self.i += 1
        return tok

    def accept(self, text: str) -> bool:
        if self.peek()[1] == text and self.peek()[0] in ("punct", "ident"):
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> None:
        kind, got, pos = self.peek()
        if not self.accept(text):
            raise self._error(pos, f"expected {text!r}, got {got or 'end of text'!r}")

    def expect_kind(self, kind: str) -> str:
        k, got, pos = self.next()
        if k != kind:
            raise self._error(pos, f"expected {kind}, got {got or 'end of text'!r}")
        return got

    def error(self, msg: str) -> ParseError:
        return self._error(self.peek()[2], msg)


def parse_graph(text: str) -> Graph:
    """Parse one `graph name(...) { ... }` block."""
    toks = _Tokens(text)
    graph = _graph(toks, None, {})
    if toks.peek()[0] != "eof":
        raise toks.error("text after the end of the graph")
    return graph


def _graph(toks: _Tokens, parent: Graph | None, scope: dict[str, Value]) -> Graph:
    toks.expect("graph")
    graph = Graph(toks.expect_kind("ident"), parent)
    scope = dict(scope)
    toks.expect("(")
    while not toks.accept(")"):
        name = _name(toks.expect_kind("value"))
        toks.expect(":")
        value = Value(name, _type(toks))
        graph._names.add(name)
        graph.inputs.append(value)
        scope[name] = value
        if not toks.accept(","):
            toks.expect(")")
            break
    toks.expect("{")
    while not toks.accept("return"):
        _node(toks, graph, scope)
    while True:
        graph.outputs.append(_lookup(toks, scope, _name(toks.expect_kind("value"))))
        if not toks.accept(","):
            break
    toks.expect("}")
    return graph


def _name(token: str) -> str:
    return json.loads(token[1:]) if token.startswith('%"') else token[1:]


def _lookup(toks: _Tokens, scope: dict[str, Value], name: str) -> Value:
    try:
        return scope[name]
    except KeyError:
        raise toks.error(f"value %{name} is used before it is defined") from None


def _node(toks: _Tokens, graph: Graph, scope: dict[str, Value]) -> None:
    outs: list[tuple[str, ValueType | None] | None] = []
    while True:
        if toks.accept("_"):
            outs.append(None)
        else:
            name = _name(toks.expect_kind("value"))
            outs.append((name, _type(toks) if toks.accept(":") else None))
        if not toks.accept(","):
            break
    toks.expect("=")
    op = toks.expect_kind("ident")
    try:
        schema = get_schema(op)
    except GraphError:
        raise toks.error(f"unknown op {op!r}") from None
    toks.expect("(")
    inputs: list[Value | None] = []
    while not toks.accept(")"):
        inputs.append(
            None if toks.accept("_") else _lookup(toks, scope, _name(toks.expect_kind("value")))
        )
        if not toks.accept(","):
            toks.expect(")")
            break
    attrs = {}
    if toks.accept("{"):
        while not toks.accept("}"):
            key = toks.expect_kind("ident")
            toks.expect("=")
            spec = schema.attr_map.get(key)
            if spec is None:
                raise toks.error(f"op {op} has no attribute {key!r}")
            attrs[key] = _attr(toks, spec.kind, graph, scope)
            if not toks.accept(","):
                toks.expect("}")
                break
    name = ""
    if toks.accept("loc"):
        toks.expect("(")
        name = json.loads(toks.expect_kind("string"))
        toks.expect(")")
    for o in outs:
        if o is not None and o[0] in scope:
            raise toks.error(f"value %{o[0]} is defined twice")
    node = graph.add_node(
        op,
        inputs,
        attrs,
        output_names=[None if o is None else o[0] for o in outs],
        name=name,
        infer=False,
    )
    for value, declared in zip(node.outputs, outs):
        if value is not None and declared is not None:  # omitted (None) together
            if value.name != declared[0]:
                raise toks.error(f"value %{declared[0]} is defined twice")
            value.type = declared[1]
            scope[value.name] = value


def _type(toks: _Tokens):
    kind, text, pos = toks.next()
    if text in ("seq", "opt"):
        toks.expect("<")
        elem = _type(toks)
        toks.expect(">")
        return SequenceType(elem) if text == "seq" else OptionalType(elem)
    if text == "?":
        return None
    try:
        dtype = DType.parse(text)
    except ValueError as exc:
        raise toks._error(pos, str(exc)) from None
    toks.expect("[")
    if toks.accept("*"):
        toks.expect("]")
        return TensorType(dtype, None)
    dims = []
    while not toks.accept("]"):
        k, d, p = toks.next()
        dims.append(int(d) if k == "number" else d)
        if not toks.accept(","):
            toks.expect("]")
            break
    return TensorType(dtype, tuple(dims))


def _attr(toks: _Tokens, kind: str, graph: Graph, scope: dict[str, Value]):
    if kind == "graph":
        return _graph(toks, graph, scope)
    if kind == "tensor":
        return _tensor(toks)
    if kind == "dtype":
        return DType.parse(toks.expect_kind("ident"))
    if kind in ("ints", "floats", "strs"):
        return tuple(_scalar_list(toks))
    return _scalar(toks)


def _scalar_list(toks: _Tokens) -> list:
    """`[a, b, ...]` of numbers, strings or booleans."""
    toks.expect("[")
    items = []
    while not toks.accept("]"):
        items.append(_scalar(toks))
        if not toks.accept(","):
            toks.expect("]")
            break
    return items


def _scalar(toks: _Tokens):
    kind, text, pos = toks.next()
    if kind == "string":
        return json.loads(text)
    if kind == "number":
        return float(text) if any(c in text for c in ".eEni") else int(text)
    if kind == "ident" and text in ("true", "false"):
        return text == "true"
    raise toks._error(pos, f"expected a number or string, got {text!r}")


def _tensor(toks: _Tokens) -> np.ndarray:
    toks.expect("tensor")
    toks.expect("<")
    ttype = _type(toks)
    toks.expect(">")
    np_dtype = ttype.dtype.numpy
    if toks.peek()[0] == "b64":
        raw = base64.b64decode(toks.next()[1][4:-1])
        if len(raw) != int(np.prod(ttype.dims)) * np_dtype.itemsize:
            raise toks.error(f"tensor data has {len(raw)} bytes, expected {ttype}")
        return np.frombuffer(raw, dtype=np_dtype).reshape(ttype.dims).copy()
    items = _scalar_list(toks)
    if len(items) != int(np.prod(ttype.dims)):
        raise toks.error(f"tensor has {len(items)} elements, expected {ttype}")
    if ttype.dtype is DType.str:
        return np.array(items, dtype=object).reshape(ttype.dims)
    wide: type[np.generic]
    if ttype.dtype.is_float:
        wide = np.float64
    elif ttype.dtype is DType.bool:
        wide = np.bool_
    else:
        wide = np.uint64 if ttype.dtype is DType.u64 else np.int64
    return np.array(items, dtype=wide).astype(np_dtype).reshape(ttype.dims)
