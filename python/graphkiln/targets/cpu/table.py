# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""IR op -> lowering function, merged from the lower_<family>.py modules."""

from __future__ import annotations

from . import (lower_axis, lower_basic, lower_bitwise, lower_cast, lower_conv, lower_data,
               lower_fused, lower_lp_pool, lower_matmul, lower_norm, lower_pointwise,
               lower_quantize, lower_reduce, lower_rotary)

LOWERINGS: dict = {}
for _module in (lower_basic, lower_conv, lower_data, lower_matmul, lower_fused,
                lower_pointwise, lower_reduce, lower_bitwise, lower_quantize, lower_norm,
                lower_axis, lower_cast, lower_rotary, lower_lp_pool):
    overlap = set(LOWERINGS) & set(_module.LOWERINGS)
    if overlap:
        raise RuntimeError(f"ops lowered twice: {sorted(overlap)}")
    LOWERINGS.update(_module.LOWERINGS)
