# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""What an op converter sees while one ONNX node is imported."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir import Graph, Value


class ImportContext:
    """One ONNX node being imported into `graph`.

    Converters are `convert(ctx) -> list[Value | None]` (outputs in ONNX order). They read
    `ctx.inputs` (None for omitted optional inputs), `ctx.attrs` (ONNX attribute values as
    Python: int, float, str, tuples, numpy arrays, Graph) and `ctx.opset`, and add IR nodes
    with `ctx.emit` / `ctx.constant`.
    """

    def __init__(
        self,
        graph: Graph,
        op_type: str,
        name: str,
        opset: int,
        inputs: list[Value | None],
        attrs: dict[str, Any],
        output_names: list[str | None],
    ):
        self.graph = graph
        self.op_type = op_type
        self.name = name
        self.opset = opset
        self.inputs = inputs
        self.attrs = attrs
        self.output_names = output_names

    def input(self, i: int) -> Value | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def const(self, i: int) -> np.ndarray | None:
        v = self.input(i)
        return None if v is None else v.constant

    def emit(
        self,
        op: str | None = None,
        inputs: list[Value | None] | None = None,
        attrs: dict | None = None,
        num_outputs: int | None = None,
    ) -> list[Value | None]:
        """Add one IR node. Defaults: same op name, the node's inputs, its attributes and
        as many outputs as the ONNX node has (named after them)."""
        if op is None:
            op = self.op_type
        if inputs is None:
            inputs = self.inputs
        if attrs is None:
            attrs = self.attrs
        if num_outputs is None or num_outputs == len(self.output_names):
            names = self.output_names
        else:
            names = [f"{self.name or op.lower()}_{i}" for i in range(num_outputs)]
        node = self.graph.add_node(op, inputs, attrs, output_names=names, name=self.name)
        return node.outputs

    def add(self, op: str, *inputs: Value | None, **attrs) -> Value:
        """Add a single-output helper node (named after this ONNX node)."""
        node = self.graph.add_node(
            op,
            list(inputs),
            attrs,
            output_names=[f"{self.name or self.op_type.lower()}_{op.lower()}"],
            name=self.name,
        )
        return node.outputs[0]

    def constant(self, data, dtype=None) -> Value:
        array = np.asarray(data, dtype=dtype)
        return self.graph.constant(array, name=f"{self.name or self.op_type.lower()}_const")
