# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln: import an ONNX model, compile it for a target, run it with numpy arrays.

    import graphkiln
    prog = graphkiln.parse_onnx("model.onnx")
    prog.compile(graphkiln.get_target("ref"))
    outputs = prog.run({"x": x})
"""

from __future__ import annotations

from .errors import (CompileError, FormatError, GraphError, GraphkilnError, ModelError,
                     ParseError, UnsupportedOperatorError)
from .program import Program
from .targets import available_targets, get_target
from .version import __version__


def parse_onnx(path, input_shapes: dict | None = None, default_dim: int | None = 1) -> Program:
    """Import an ONNX file. `input_shapes` fixes input dims by name; other symbolic dims
    become `default_dim` (None keeps them symbolic)."""
    from .frontends.onnx import graph_from_file

    return Program(graph_from_file(path, input_shapes, default_dim))


def parse_onnx_buffer(data: bytes, input_shapes: dict | None = None,
                      default_dim: int | None = 1) -> Program:
    """Import a serialized ONNX model (external data is refused)."""
    from .frontends.onnx import graph_from_bytes

    return Program(graph_from_bytes(data, input_shapes, default_dim))


__all__ = [
    "CompileError", "FormatError", "GraphError", "GraphkilnError", "ModelError", "ParseError",
    "Program", "UnsupportedOperatorError", "__version__", "available_targets", "get_target",
    "parse_onnx", "parse_onnx_buffer",
]
