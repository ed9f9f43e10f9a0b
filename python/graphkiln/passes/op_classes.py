# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Which IR ops the fusion passes treat alike: read from the op schemas' traits (ir/ops/*
`define(..., traits=...)`), so a new op declares its class where it is defined."""

from ..ir.schema import ops_with_trait, require_ops

# One output element from the same-position elements of the (broadcast) inputs.
POINTWISE = ops_with_trait("pointwise")

# Ops that lead a fused node with a pointwise epilogue, and the kind they give it.
EPILOGUE_ANCHORS = require_ops(
    {"Conv": "conv", "ConvTranspose": "conv", "Gemm": "gemm", "MatMul": "matmul"},
    "passes/op_classes.py EPILOGUE_ANCHORS",
)

# Reductions that take a pointwise prologue and epilogue.
REDUCTIONS = ops_with_trait("reduction")

# Ops that only reinterpret the shape of contiguous data: no kernel runs.
VIEWS = ops_with_trait("view")
