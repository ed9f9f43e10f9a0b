# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""IR op -> gpu lowering function, merged from the lower_<family>.py modules (and the
shared Einsum decomposition, targets/native/lower_einsum.py, and the Loop / Scan entries of
targets/native/lower_loops.py: unrolled by the plan's specialization)."""

from __future__ import annotations

from ..native import lower_einsum, lower_loops
from ..native.lower_support import SupportContext
from . import (
    lower_attention,
    lower_bytes,
    lower_data,
    lower_linalg,
    lower_loss,
    lower_norm,
    lower_pointwise,
    lower_reduce,
    lower_tensor,
)

LOWERINGS: dict = {}
for _module in (
    lower_tensor,
    lower_pointwise,
    lower_linalg,
    lower_reduce,
    lower_norm,
    lower_attention,
    lower_bytes,
    lower_loss,
    lower_data,
    lower_einsum,
    lower_loops,
):
    overlap = set(LOWERINGS) & set(_module.LOWERINGS)
    if overlap:
        raise RuntimeError(f"ops lowered twice: {sorted(overlap)}")
    LOWERINGS.update(_module.LOWERINGS)

SUPPORT = SupportContext("gpu", LOWERINGS)
# the Fused kinds lower_pointwise.lower_fused lowers (by kind, then node by node)
FUSED_KINDS = frozenset({"pointwise", "reduce", "conv", "gemm", "matmul"})
