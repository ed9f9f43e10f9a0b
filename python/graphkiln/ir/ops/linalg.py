# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of matrix products: MatMul, Gemm, Einsum, Det, MatMulInteger, QLinearMatMul."""

from ...errors import GraphError
from ..schema import REQUIRED, define
from .. import infer
from ..dtypes import DType
from ..types import TensorType, fresh_dim


def matmul_dims(a, b):
    """numpy.matmul's output dims: batch dims broadcast, a 1-D operand loses its dim."""
    if a is None or b is None:
        return None
    if len(a) == 0 or len(b) == 0:
        raise GraphError("MatMul operands must have rank >= 1")
    batch = infer.broadcast_dims(a[:-2], b[:-2])
    assert batch is not None  # None only for an unknown rank
    rows = (a[-2],) if len(a) >= 2 else ()
    cols = (b[-1],) if len(b) >= 2 else ()
    return batch + rows + cols


def _matmul(dtype: DType | None = None):
    """A @ B with the dtype of A, or a fixed one (MatMulInteger gives int32)."""

    def infer_fn(ctx):
        a = ctx.tensor(0)
        return [TensorType(dtype or a.dtype, matmul_dims(a.dims, ctx.tensor(1).dims))]

    return infer_fn


def _qlinear_matmul(ctx):
    dims = matmul_dims(ctx.tensor(0).dims, ctx.tensor(3).dims)
    return [TensorType(ctx.tensor(7).dtype, dims)]


define("MatMul", ("A", "B"), ("Y",), (), _matmul(), traits=("half_anchor",))
define(
    "MatMulInteger", ("A", "B", "a_zero_point?", "b_zero_point?"), ("Y",), (), _matmul(DType.i32)
)
define(
    "QLinearMatMul",
    ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"),
    ("y",),
    (),
    _qlinear_matmul,
)


def _gemm(ctx):
    a, b = ctx.tensor(0), ctx.tensor(1)
    rows = a.dims[1 if ctx.attrs["transA"] else 0] if a.dims and len(a.dims) == 2 else fresh_dim()
    cols = b.dims[0 if ctx.attrs["transB"] else 1] if b.dims and len(b.dims) == 2 else fresh_dim()
    return [TensorType(a.dtype, (rows, cols))]


define(
    "Gemm",
    ("A", "B", "C?"),
    ("Y",),
    [("alpha", "float", 1.0), ("beta", "float", 1.0), ("transA", "int", 0), ("transB", "int", 0)],
    _gemm,
    traits=("half_anchor",),
)


def parse_einsum(equation: str, num_inputs: int):
    """(input terms, output term) with spaces removed; '...' stays in the terms. The implicit
    output is the ellipsis then the letters used once, in ASCII order."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != num_inputs:
        raise GraphError(
            f"Einsum equation {equation!r} has {len(terms)} operands, the node {num_inputs}"
        )
    if not arrow:
        letters = lhs.replace("...", "").replace(",", "")
        once = sorted(c for c in set(letters) if letters.count(c) == 1)
        rhs = ("..." if "..." in lhs else "") + "".join(once)
    return terms, rhs


def _einsum(ctx):
    types = [ctx.tensor(i) for i in range(ctx.num_inputs)]
    terms, rhs = parse_einsum(ctx.attrs["equation"], len(types))
    letter_dims: dict = {}
    ellipses = []
    ellipsis_known = True
    for term, t in zip(terms, types):
        head, dots, tail = term.partition("...")
        if t.dims is None:
            ellipsis_known = ellipsis_known and not dots
            continue
        n_ellipsis = len(t.dims) - len(head) - len(tail) if dots else 0
        if dots:
            ellipses.append(t.dims[len(head) : len(head) + n_ellipsis])
        labelled = list(zip(head, t.dims[: len(head)])) + list(
            zip(tail, t.dims[len(t.dims) - len(tail) :])
        )
        for letter, dim in labelled:
            if letter_dims.get(letter) in (None, 1):
                letter_dims[letter] = dim
    head, dots, tail = rhs.partition("...")
    if dots and not ellipsis_known:
        return [TensorType(types[0].dtype, None)]
    middle = infer.broadcast_dims(*ellipses) if dots else ()

    def dim_of(letter):
        found = letter_dims.get(letter)
        return fresh_dim() if found is None else found

    dims = [dim_of(c) for c in head] + list(middle or ()) + [dim_of(c) for c in tail]
    return [TensorType(types[0].dtype, tuple(dims))]


define("Einsum", ("Inputs*",), ("Output",), [("equation", "str", REQUIRED)], _einsum)


def _det(ctx):
    x = ctx.tensor(0)
    return [TensorType(x.dtype, None if x.dims is None else x.dims[:-2])]


define("Det", ("X",), ("Y",), (), _det)


def _matmul_nbits(ctx):
    """MatMulNBits: A [.., K] times the block-quantized [N, K] weight, transposed: [.., N]."""
    a = ctx.tensor(0)
    n = ctx.attrs["N"]
    return [TensorType(a.dtype, None if a.dims is None else tuple(a.dims[:-1]) + (n,))]


# onnxruntime's com.microsoft MatMulNBits (weight-only int4 / int8): B packed uint8
# [N, k_blocks, block_size * bits / 8], scales [N * k_blocks], zero_points packed uint8 or
# float (absent: 2^(bits-1)); targets/ref/matmul_nbits.py says how they are read.
define(
    "MatMulNBits",
    ("A", "B", "scales", "zero_points?", "bias?"),
    ("Y",),
    [
        ("K", "int", REQUIRED),
        ("N", "int", REQUIRED),
        ("bits", "int", 4),
        ("block_size", "int", REQUIRED),
    ],
    _matmul_nbits,
)
