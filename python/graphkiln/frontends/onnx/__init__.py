# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The ONNX frontend: `graph_from_file(path)` and `graph_from_bytes(data)` return an ir.Graph."""

from __future__ import annotations

from ...ir import Graph
from .importer import MAX_OPSET, MIN_OPSET, import_model, model_from_bytes, read_model_file
from .ops_table import supported_ops


def graph_from_file(
    path, input_shapes: dict | None = None, default_dim: int | None = None
) -> Graph:
    model, _ = read_model_file(path)
    return import_model(model, input_shapes, default_dim)


def graph_from_bytes(
    data: bytes, input_shapes: dict | None = None, default_dim: int | None = None
) -> Graph:
    """Import a serialized model. External data is refused: there is no folder to read from."""
    return import_model(model_from_bytes(data), input_shapes, default_dim)


__all__ = ["graph_from_file", "graph_from_bytes", "supported_ops", "MAX_OPSET", "MIN_OPSET"]
