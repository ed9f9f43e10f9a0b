# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""How many runs of one compiled program may execute at once: the bound of its pool of
execution contexts (each context: an arena, a workspace, staging buffers and, on gpu, a
stream with its captured graph). `compile(..., max_concurrency=N)` wins over
GRAPHKILN_MAX_CONCURRENCY, which wins over the target's default."""

from __future__ import annotations

from .. import env

OPTION_HELP = (
    "how many runs of the compiled program may execute at once (its execution "
    "contexts; default GRAPHKILN_MAX_CONCURRENCY, else the target's default); "
    "callers beyond it wait for a context"
)


def max_concurrency(options: dict, default: int) -> int:
    """The bound for a program compiled with `options`, checked: a positive integer."""
    value = options.get("max_concurrency")
    source = "max_concurrency"
    if value is None:
        text = env.get("GRAPHKILN_MAX_CONCURRENCY")
        if text is None or text.strip() == "":
            return default
        source, value = "GRAPHKILN_MAX_CONCURRENCY", text.strip()
        try:
            value = int(value)
        except ValueError:
            raise ValueError(
                f"GRAPHKILN_MAX_CONCURRENCY={text!r}: expected a positive integer"
            ) from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"{source}={value!r}: expected a positive integer (how many runs may execute at once)"
        )
    return value
