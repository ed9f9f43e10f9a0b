# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""IR op -> cpu lowering function: the shared lowerings of targets/native (kernels that
src/cpu and src/gpu both have) merged with the cpu's own lower_<family>.py modules (oneDNN
convolution / matmul / pooling, the fused families, norms, reductions)."""

from __future__ import annotations

from ..native import (
    lower_axis,
    lower_basic,
    lower_bitwise,
    lower_cast,
    lower_col2im,
    lower_control,
    lower_data,
    lower_det,
    lower_einsum,
    lower_image,
    lower_indexing,
    lower_integer,
    lower_loops,
    lower_lp_pool,
    lower_lrn_unpool,
    lower_nbits,
    lower_nms,
    lower_pointwise,
    lower_quantize,
    lower_rnn,
    lower_select,
    lower_signal,
)
from ..native.lower_support import SupportContext
from . import (
    lower_conv,
    lower_fused,
    lower_matmul,
    lower_norm,
    lower_qconv,
    lower_qmatmul,
    lower_reduce,
    lower_rotary,
)

LOWERINGS: dict = {}
for _module in (
    lower_basic,
    lower_conv,
    lower_data,
    lower_matmul,
    lower_fused,
    lower_pointwise,
    lower_reduce,
    lower_bitwise,
    lower_quantize,
    lower_norm,
    lower_axis,
    lower_cast,
    lower_rotary,
    lower_lp_pool,
    lower_image,
    lower_einsum,
    lower_rnn,
    lower_indexing,
    lower_nms,
    lower_select,
    lower_det,
    lower_lrn_unpool,
    lower_control,
    lower_loops,
    lower_signal,
    lower_col2im,
    lower_integer,
    lower_nbits,
):
    overlap = set(LOWERINGS) & set(_module.LOWERINGS)
    if overlap:
        raise RuntimeError(f"ops lowered twice: {sorted(overlap)}")
    LOWERINGS.update(_module.LOWERINGS)
# a Loop a plan did not unroll (lower_loops.py) is compiled in line on cpu (lower_control.py)
LOWERINGS["Loop"] = lower_control.LOOP_LOWERING
# QLinearConv runs on oneDNN's int8 convolution where it can (lower_qconv.py), else on the
# shared portable kernel
LOWERINGS.update(lower_qconv.LOWERINGS)
# MatMulInteger likewise on oneDNN's int8 matmul (lower_qmatmul.py)
LOWERINGS.update(lower_qmatmul.LOWERINGS)

SUPPORT = SupportContext("cpu", LOWERINGS)
FUSED_KINDS = frozenset(lower_fused.FAMILIES)  # the Fused kinds lower_fused lowers
