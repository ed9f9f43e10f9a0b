# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Einsum equations for the native targets' tests (test_cpu_einsum.py, and
tests/targets/gpu/test_gpu_einsum.py through the gpu plan emulator): id -> (equation,
operand shapes), each one-node model with seeded random operands, checked against ref and
numpy.einsum."""

from __future__ import annotations

import numpy as np

from cpu_testing import node, onnx_model, rand

EQUATIONS = {
    "matmul": ("ij,jk->ik", [(3, 4), (4, 5)]),
    "matmul_implicit": ("ij,jk", [(3, 4), (4, 5)]),
    "batched_matmul": ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    "batched_matmul_transposed_b": ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]),
    "transpose": ("ij->ji", [(3, 4)]),
    "transpose_implicit": ("ji", [(3, 4)]),
    "permute_3d": ("abc->cab", [(2, 3, 4)]),
    "identity": ("ij", [(3, 4)]),
    "trace": ("ii", [(4, 4)]),
    "diagonal": ("ii->i", [(4, 4)]),
    "batch_diagonal": ("...ii->...i", [(2, 3, 4, 4)]),
    "triple_diagonal": ("iii->i", [(3, 3, 3)]),
    "diagonal_then_product": ("ii,ij->j", [(3, 3), (3, 4)]),
    "outer": ("i,j->ij", [(3,), (4,)]),
    "sum_one_index": ("ij->i", [(3, 4)]),
    "sum_all": ("ij->", [(3, 4)]),
    "inner": ("i,i", [(5,), (5,)]),
    "hadamard": ("ij,ij->ij", [(3, 4), (3, 4)]),
    "ellipsis_broadcast": ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 6)]),
    "label_broadcast": ("ij,kj->ik", [(2, 1), (4, 3)]),
    "summed_in_one_operand": ("ijk,jl->il", [(2, 3, 4), (3, 5)]),
    "non_adjacent_contraction": ("abcd,cbe->ade", [(2, 3, 4, 5), (4, 3, 6)]),
    "three_operands": ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    "three_operands_shared": ("abc,cd,bd->ad", [(2, 3, 4), (4, 5), (3, 5)]),
    "four_operands": ("ij,jk,kl,lm->im", [(2, 3), (3, 4), (4, 5), (5, 6)]),
    "spaces": ("i j , j k -> i k", [(3, 4), (4, 5)]),
    "empty_contraction": ("ij,jk->ik", [(3, 0), (0, 5)]),
    "empty_rows": ("bij,bjk->bik", [(2, 0, 4), (2, 4, 5)]),
    "attention_scores": ("bhid,bhjd->bhij", [(2, 3, 5, 4), (2, 3, 6, 4)]),
    "attention_values": ("bhij,bhjd->bhid", [(2, 3, 5, 6), (2, 3, 6, 4)]),
}


def einsum_model(equation: str, shapes, dtype=np.float32, dims=None) -> bytes:
    """One Einsum node over inputs x0, x1, ... (`dims` replaces the declared shapes, e.g.
    with symbolic names)."""
    declared = dims or shapes
    names = [f"x{i}" for i in range(len(declared))]
    return onnx_model(
        [node("Einsum", names, ["y"], equation=equation)],
        dict(zip(names, declared)),
        {"y": None},
        opset=12,
        dtypes={**{n: dtype for n in names}, "y": dtype},
    )


def einsum_feeds(shapes, dtype=np.float32, seed=0) -> dict:
    return {f"x{i}": rand(s, seed + i, dtype=dtype, low=-3, high=3) for i, s in enumerate(shapes)}


def numpy_einsum(equation: str, feeds: dict) -> np.ndarray:
    """The float64 (int64 for integers) result numpy computes."""
    wide = [a.astype(np.int64 if a.dtype.kind in "iu" else np.float64) for a in feeds.values()]
    return np.einsum(equation.replace(" ", ""), *wide)
