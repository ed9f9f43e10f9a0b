# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The bias of a transformer block's output projection joins its product, so that the
residual Add alone joins the normalization after it (the gpu pipeline, before pointwise
fusion).

    h = x @ W;  s = h + bias;  t = s + residual;  y = LayerNormalization(t)

Left to the fusion passes, the two Adds become one pointwise node that joins the
normalization (fuse_reduction), and the product stays alone: on the gpu a Gemm, a Pointwise
step writing t, then the LayerNormalization. Here MatMul + Add(bias) become one
Fused(kind=matmul) node first: the Gemm step takes the bias in its epilogue
(lower_gemm_epilogue.py), and Add(residual) + LayerNormalization become one step that reads
both operands (lower_reduce.lower_residual_layer_norm): two steps, t never written.

Only where it pays: W a constant matrix, the bias a constant row vector of the product's
last dim and type, the sum read only by an Add whose sum only a LayerNormalization reads."""

from __future__ import annotations

from ..ir import Graph, Node, TensorType, Value
from .fusion import fusible, make_fused

NORMALIZATIONS = ("LayerNormalization",)


def _constant_dims(value: Value | None) -> list | None:
    """The dims of a constant tensor value, else None."""
    if value is None or value.constant is None or not isinstance(value.type, TensorType):
        return None
    return None if value.type.dims is None else list(value.type.dims)


def _row_bias(add: Node, product: Value) -> bool:
    """The Add's other operand is a constant row vector over the product's last dim."""
    if len(add.inputs) != 2 or add.inputs[0] is add.inputs[1]:
        return False
    bias = add.inputs[1] if add.inputs[0] is product else add.inputs[0]
    dims, out = _constant_dims(bias), product.type
    if not dims or bias is None or not isinstance(out, TensorType) or not out.dims:
        return False
    return (
        len(dims) <= len(out.dims)
        and dims[-1] == out.dims[-1]
        and all(d == 1 for d in dims[:-1])
        and getattr(bias.type, "dtype", None) == out.dtype
    )


def _only_reader(uses: dict, graph: Graph, value: Value) -> Node | None:
    readers = uses.get(value, [])
    if len(readers) != 1 or value in graph.outputs:
        return None
    return readers[0]


def run(graph: Graph, ctx=None) -> Graph:
    uses = graph.users()
    for matmul in [n for n in graph.nodes if n.op == "MatMul" and fusible(n)]:
        product = matmul.output(0)
        if len(_constant_dims(matmul.inputs[1]) or []) != 2:
            continue
        add = _only_reader(uses, graph, product)
        if add is None or add.op != "Add" or not fusible(add) or not _row_bias(add, product):
            continue
        residual = _only_reader(uses, graph, add.output(0))
        if residual is None or residual.op != "Add" or not fusible(residual):
            continue
        norm = _only_reader(uses, graph, residual.output(0))
        if (
            norm is None
            or norm.op not in NORMALIZATIONS
            or norm.inputs[0] is not residual.output(0)
        ):
            continue
        make_fused(graph, [matmul, add], "matmul")
        uses = graph.users()
    return graph
