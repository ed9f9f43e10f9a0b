# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Fused matmul bodies whose bias (and ReLU) the Gemm step itself takes (src/gpu/gemm.hip,
blas_lt.hip).

A Fused node of kind "matmul" whose body starts MatMul -> Add(bias) or MatMul -> Add(bias)
-> Relu, with a bias of the product's last dim (a row vector: [n], [1, n], ...) and B a
matrix (so the product is one GEMM over the stacked rows of A), gets one Gemm step with
attribute epilogue=1 (the bias as input 2) and relu=1 for the Relu; the rest of the body (a
Cast, GELU's nodes, a residual Add) is lowered after it by the generic lowering
(lower_pointwise.lower_fused), as is any other body. On NVIDIA builds cuBLASLt runs the step
as one call with its bias (+ ReLU) epilogue; elsewhere the product and a small epilogue
kernel."""

from __future__ import annotations

from ...ir import Node, Value
from ..native.lower import LoweringContext, static_dims
from .lower_linalg import lower_matmul, matmul_step


def _epilogue(body, nodes: list[Node]) -> tuple[Node, Value, bool] | None:
    """(the MatMul node, the bias value, whether a Relu follows the Add) when `nodes` (the
    body's, constants left out) start with MatMul -> Add(bias) (-> Relu), else None."""
    if len(body.outputs) != 1 or [n.op for n in nodes[:2]] != ["MatMul", "Add"]:
        return None
    matmul, add = nodes[0], nodes[1]
    product = matmul.outputs[0]
    if len(add.inputs) != 2 or product not in add.inputs or add.inputs[0] is add.inputs[1]:
        return None
    bias = add.inputs[1] if add.inputs[0] is product else add.inputs[0]
    relu = len(nodes) > 2 and nodes[2].op == "Relu" and nodes[2].inputs[0] is add.outputs[0]
    used = nodes[:3] if relu else nodes[:2]
    readers = [v for n in nodes for v in n.inputs]
    if any(readers.count(n.outputs[0]) != 1 or n.outputs[0] in body.outputs for n in used[:-1]):
        return None  # an intermediate value is read elsewhere too
    try:
        a_dims, b_dims = static_dims(matmul.inputs[0]), static_dims(matmul.inputs[1])
        out_dims, bias_dims = static_dims(product), static_dims(bias)
    except Exception:  # noqa: BLE001 - dynamic dims: the generic lowering
        return None
    if len(a_dims) < 2 or len(b_dims) != 2 or len(bias_dims) > len(out_dims):
        return None
    if not bias_dims or bias_dims[-1] != out_dims[-1] or any(d != 1 for d in bias_dims[:-1]):
        return None
    dtype = product.type.dtype
    if any(v.type.dtype != dtype for v in (bias, *(n.outputs[0] for n in used))):
        return None
    return matmul, bias, relu


def lower_gemm_with_epilogue(node: Node, nodes: list[Node], ctx: LoweringContext) -> int:
    """When the body `nodes` of a Fused matmul node start with MatMul -> Add(bias) (-> Relu):
    one Gemm step with that epilogue, and the number of nodes it covered (the caller lowers
    the rest: a Cast, GELU's pointwise nodes, ...); else 0, nothing emitted. The body's inputs
    must already be bound to the node's slots."""
    if node.attrs.get("kind") != "matmul":
        return 0
    body = node.attrs["body"]
    found = _epilogue(body, nodes)
    if found is None or not lower_matmul.supports(found[0], ctx):
        return 0
    matmul, bias, relu = found
    count = 3 if relu else 2
    last = nodes[count - 1].outputs[0]
    if last is body.outputs[0]:  # nothing after it: straight into the node's output
        out = ctx.output(node.outputs[0])
        ctx.bind(last, out)
    else:
        out = ctx.output(last)
    inputs, attrs = matmul_step(matmul, ctx)
    if attrs["batch"] != 1:  # cannot happen with a matrix B: checked, not assumed
        raise AssertionError("a MatMul by a matrix is one product")
    attrs.update(epilogue=1, relu=int(relu))
    ctx.emit("Gemm", [*inputs, ctx.input(bias)], [out], attrs, node.name)
    return count
