# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Whether oneDNN's int8 convolution and matmul give exact integer sums on this CPU.

With VNNI (AVX-512 VNNI, AVX-VNNI) or AMX, a u8 x s8 product sum accumulates in int32. On
CPUs without it (plain AVX2 / AVX-512 before Cascade Lake) oneDNN multiplies with
vpmaddubsw, which adds two u8 x s8 products into a saturating int16: sums past 32767 are
clipped and a result can be many units off (measured on an AVX2 EPYC: the QDQ CNN of the
tests 3 units from ref). There the int8 lowerings step aside: QLinearConv / ConvInteger /
MatMulInteger go to the portable integer kernels (exact), and the cpu target's int8 option
defaults to False (a QDQ model computes in float32, as ref does). ONEDNN_MAX_CPU_ISA counts,
as oneDNN reads it."""

from __future__ import annotations

import functools

# oneDNN effective ISAs whose int8 instructions accumulate u8 x s8 in int32
_EXACT_INT8 = ("vnni", "amx", "avx512_core_bf16", "avx512_core_fp16")


@functools.cache
def onednn_int8_exact() -> bool:
    """True where oneDNN's int8 kernels run on VNNI / AMX (int32 accumulation)."""
    from ..._native import load_core

    isa = load_core().cpu_isa()
    return any(tag in isa for tag in _EXACT_INT8)
