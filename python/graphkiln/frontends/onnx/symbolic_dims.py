# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""How the dims of the model's inputs become IR dims.

A dim with a `dim_value` >= 0 is that size; a declared 0 stays 0: ONNX and onnxruntime
read it as a real empty axis, and the conformance cases feed such inputs (an exporter that
wrote 0 for "unknown" can have it set with `input_shapes`). Every other dim stays symbolic:

- a `dim_param` that is an identifier (`batch`, `N`, `unk__12`) keeps its name, so the same
  name on two inputs is one symbol whose sizes must agree;
- a `dim_param` that is not one (`batch size`, `N+1`) gets an identifier made from it
  (`batch_size`, `N_1`), the same one wherever that text appears;
- an unknown dim (no value and no param, a `dim_param` of `?`, or `dim_value` -1, which
  some exporters write) is a symbol of its own, named after its input and axis:
  `images_dim2`.

Names never clash with another name the model's inputs use."""

from __future__ import annotations

import re

import onnx

_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")  # what the IR and its text form accept
_UNKNOWN_PARAMS = ("", "?", "-1")


def is_symbol_name(text: str) -> bool:
    """Whether `text` may name a dim in the IR (and its text form) as it is."""
    return _SYMBOL.match(text) is not None


def is_fixed(dim: onnx.TensorShapeProto.Dimension) -> bool:
    """Whether the model fixes this dim (a dim_value >= 0; -1 means unknown)."""
    return dim.HasField("dim_value") and dim.dim_value >= 0


def declared_text(dim: onnx.TensorShapeProto.Dimension) -> str:
    """The dim as error messages show the declared shape: `3`, `batch` or `?`."""
    if is_fixed(dim):
        return str(dim.dim_value)
    return dim.dim_param if dim.dim_param.strip() not in _UNKNOWN_PARAMS else "?"


def _params(tp: onnx.TypeProto):
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        if tp.tensor_type.HasField("shape"):
            yield from (d.dim_param for d in tp.tensor_type.shape.dim if d.dim_param)
    elif which == "sequence_type":
        yield from _params(tp.sequence_type.elem_type)
    elif which == "optional_type":
        yield from _params(tp.optional_type.elem_type)


class DimNamer:
    """The IR names of the symbolic dims of one model's inputs."""

    def __init__(self, inputs, input_shapes: dict | None = None):
        self._taken = {p for vi in inputs for p in _params(vi.type) if _SYMBOL.match(p)}
        self._renamed: dict[str, str] = {}
        self.fixed = _fixed_by(inputs, input_shapes or {})

    def name(self, dim: onnx.TensorShapeProto.Dimension, input_name: str, axis: int):
        """The dim's IR name, or its size where `input_shapes` set its dim_param."""
        param = dim.dim_param.strip() if not dim.HasField("dim_value") else ""
        if param in self.fixed:
            return self.fixed[param]
        if param not in _UNKNOWN_PARAMS:
            if _SYMBOL.match(param) and param == dim.dim_param:
                return param
            if param not in self._renamed:
                self._renamed[param] = self._fresh(_identifier(param))
            return self._renamed[param]
        return self._fresh(f"{_identifier(input_name)}_dim{axis}")

    def _fresh(self, base: str) -> str:
        name, n = base, 2
        while name in self._taken:
            name, n = f"{base}_{n}", n + 1
        self._taken.add(name)
        return name


def _fixed_by(inputs, input_shapes: dict) -> dict[str, int]:
    """{dim_param: size} that `input_shapes` sets, so that every input sharing a name gets
    the size; a ValueError when two of them set one name to different sizes."""
    fixed: dict[str, tuple[int, str]] = {}
    for vi in inputs:
        dims = input_shapes.get(vi.name)
        tt = vi.type.tensor_type
        if dims is None or vi.type.WhichOneof("value") != "tensor_type" or not tt.HasField("shape"):
            continue
        for axis, (d, size) in enumerate(zip(tt.shape.dim, dims)):
            param = d.dim_param.strip() if not d.HasField("dim_value") else ""
            if param in _UNKNOWN_PARAMS:
                continue
            first = fixed.setdefault(param, (size, vi.name))
            if first[0] != size:
                raise ValueError(
                    f"input_shapes[{vi.name!r}] sets dim {axis} ({param!r}) to "
                    f"{size}, but input_shapes[{first[1]!r}] sets {param!r} to "
                    f"{first[0]}: the model declares them the same size"
                )
    return {param: size for param, (size, _) in fixed.items()}


def _identifier(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", text) or "x"
    return name if _SYMBOL.match(name) else f"d{name}"
