# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""IR op -> lowering function, merged from the lower_<family>.py modules."""

from __future__ import annotations

from . import lower_basic

LOWERINGS: dict = {}
for _module in (lower_basic,):
    overlap = set(LOWERINGS) & set(_module.LOWERINGS)
    if overlap:
        raise RuntimeError(f"ops lowered twice: {sorted(overlap)}")
    LOWERINGS.update(_module.LOWERINGS)
