# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The ref target's kernel table: IR op name -> numpy function, one module per family
(the families are listed in ir/ops)."""

from importlib import import_module

from ...ir.ops import COMPILER_FAMILIES, MODEL_FAMILIES

FAMILIES = tuple(
    import_module(f".{name}", __package__) for name in MODEL_FAMILIES + COMPILER_FAMILIES
)


def build_kernels() -> dict:
    kernels: dict = {}
    for family in FAMILIES:
        for op, fn in family.KERNELS.items():
            if op in kernels:
                raise ValueError(f"ref kernel for {op} defined twice")
            kernels[op] = fn
    return kernels


KERNELS = build_kernels()
