# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of the ops the compiler makes (they never come from a model): Fused."""

from ...errors import GraphError
from ..schema import REQUIRED, define

FUSED_KINDS = ("pointwise", "conv", "gemm", "matmul", "reduce")


def _fused(ctx):
    body = ctx.attrs["body"]
    if len(body.inputs) != ctx.num_inputs:
        raise GraphError(
            f"Fused: body takes {len(body.inputs)} inputs, node gives {ctx.num_inputs}"
        )
    return [v.type for v in body.outputs]


# A fused node runs its `body` as one kernel: `kind` says what leads it (a pointwise chain,
# a convolution or GEMM with its epilogue, or a reduction with its prologue).
define(
    "Fused",
    ("inputs*",),
    ("outputs*",),
    [("body", "graph", REQUIRED), ("kind", "str", "pointwise")],
    _fused,
)
