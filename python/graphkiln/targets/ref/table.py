# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The ref target's kernel table: IR op name -> numpy function, one module per family."""

from . import (
    elementwise,
    activation,
    cast,
    tensor,
    indexing,
    generate,
    conv,
    pool,
    normalization,
    image,
    reduce,
    linalg,
    softmax,
    quantize,
    attention,
    rnn,
    signal,
    control,
    sequence,
    text,
    fused,
)

FAMILIES = (
    elementwise,
    activation,
    cast,
    tensor,
    indexing,
    generate,
    conv,
    pool,
    normalization,
    image,
    reduce,
    linalg,
    softmax,
    quantize,
    attention,
    rnn,
    signal,
    control,
    sequence,
    text,
    fused,
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
