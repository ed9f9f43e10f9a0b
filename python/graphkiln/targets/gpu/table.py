# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""IR op -> gpu lowering function, merged from the lower_<family>.py modules (and the
shared Einsum decomposition, targets/native/lower_einsum.py; the Scan entry of
targets/native/lower_loops.py: unrolled by the plan's specialization; If and Loop compiled in
line with the gpu's control steps, targets/native/lower_control.py; ConstantOfShape, Shape and
Size from targets/native/lower_data.py; MatMulNBits from targets/native/lower_nbits.py), then
the host steps (host_steps.py): ops whose kernels only
the C++ core's cpu side has, run on the host inside the gpu plan."""

from __future__ import annotations

from ..native import lower_control, lower_einsum, lower_loops, lower_nbits
from ..native import lower_data as native_data
from ..native.lower_support import SupportContext
from . import (
    host_steps,
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
LOWERINGS.update(lower_control.LOWERINGS)
# a Loop a plan did not unroll (lower_loops.py) is compiled in line (lower_control.py)
LOWERINGS["Loop"] = lower_control.LOOP_LOWERING
for _op in ("ConstantOfShape", "Shape", "Size"):
    LOWERINGS[_op] = native_data.LOWERINGS[_op]
# MatMulNBits: the shared lowering, to the gpu's own kernel (src/gpu/matmul_nbits.hip)
LOWERINGS.update(lower_nbits.LOWERINGS)
# the gpu's own lowerings, before the host steps are added
GPU_LOWERINGS = dict(LOWERINGS)
LOWERINGS = host_steps.add_host_lowerings(GPU_LOWERINGS)

SUPPORT = SupportContext("gpu", LOWERINGS)
# the Fused kinds lower_pointwise.lower_fused lowers (by kind, then node by node)
FUSED_KINDS = frozenset({"pointwise", "reduce", "conv", "gemm", "matmul"})
