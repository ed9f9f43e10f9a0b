# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Size limits for untrusted models: a tensor larger than `max_tensor_bytes` is refused
(with a ModelError naming it) before anything of that size is allocated."""

from __future__ import annotations

from ... import env
from ...errors import ModelError

DEFAULT_MAX_TENSOR_BYTES = 4 << 30  # 4 GiB for one tensor
# Subgraphs (If / Loop / Scan bodies) nested deeper than this are refused.
MAX_SUBGRAPH_DEPTH = 64


def resolve_max_tensor_bytes(value: int | None = None) -> int:
    """`value` when given, else GRAPHKILN_MAX_TENSOR_BYTES, else 4 GiB."""
    source = "max_tensor_bytes"
    if value is None:
        text = env.get("GRAPHKILN_MAX_TENSOR_BYTES")
        if text is None or not text.strip():
            return DEFAULT_MAX_TENSOR_BYTES
        source = "GRAPHKILN_MAX_TENSOR_BYTES"
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"{source}={text!r} is not an integer number of bytes") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{source} must be an int (bytes), got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{source} must be positive, got {value}")
    return value


def element_count(dims) -> int:
    count = 1
    for d in dims:
        count *= int(d)
    return count


def check_tensor_bytes(what: str, dims, itemsize: int, limit: int) -> None:
    """Refuse a tensor of `dims` x `itemsize` bytes above `limit`; `what` names it."""
    dims = [int(d) for d in dims]
    if any(d < 0 for d in dims):
        raise ModelError(f"{what} has a negative dimension in {dims}")
    nbytes = element_count(dims) * itemsize
    if nbytes > limit:
        raise ModelError(
            f"{what} of shape {dims} would take {nbytes:,} bytes, over the limit "
            f"of {limit:,} bytes for one tensor (raise it with max_tensor_bytes= "
            "or GRAPHKILN_MAX_TENSOR_BYTES if the model is trusted)"
        )
