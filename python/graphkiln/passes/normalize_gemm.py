# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Put Gemm / MatMul in one form: constant B stored untransposed with alpha folded in, and
MatMul on a transposed constant reading the transposed constant instead."""

from __future__ import annotations

import numpy as np

from ..ir import Node
from .rewrite import Rewriter, apply_rules


# Gemm(A, B, C, transB=1, alpha=a) with constant B -> Gemm(A, a * B^T, C, transB=0, alpha=1)
def gemm_constant_b(node: Node, rw: Rewriter):
    b = node.input(1).constant
    trans_b, alpha = node.attrs.get("transB", 0), node.attrs.get("alpha", 1.0)
    if b is None or b.dtype.kind != "f" or (not trans_b and alpha == 1.0):
        return None
    new_b = (b.T if trans_b else b) * np.asarray(alpha, dtype=b.dtype)
    attrs = dict(node.attrs, transB=0, alpha=1.0)
    inputs = [node.inputs[0], rw.constant(np.ascontiguousarray(new_b), "gemm_b")] + list(
        node.inputs[2:]
    )
    return rw.emit_node("Gemm", inputs, attrs).outputs


# MatMul(A, Transpose(constant B)) -> MatMul(A, constant B^T)   (folds the layout change)
def matmul_transposed_constant(node: Node, rw: Rewriter):
    b = node.input(1)
    producer = b.producer
    if producer is None or producer.op != "Transpose":
        return None
    data = producer.input(0).constant
    if data is None:
        return None
    perm = producer.attrs.get("perm") or tuple(reversed(range(data.ndim)))
    return [
        rw.emit(
            "MatMul",
            node.inputs[0],
            rw.constant(np.ascontiguousarray(data.transpose(perm)), "matmul_b"),
        )
    ]


RULES = [("Gemm", gemm_constant_b), ("MatMul", matmul_transposed_constant)]


def run(graph, ctx) -> None:
    apply_rules(graph, RULES, ctx)
