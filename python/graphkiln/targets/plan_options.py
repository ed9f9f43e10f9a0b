# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Compile options about a program's plans per input shape (specializations):

- `plan_cache_size=N`: how many plans a program keeps (least recently used dropped first);
  wins over GRAPHKILN_PLAN_CACHE_SIZE, which wins over the default, 32;
- `shapes=[{"x": [1, 3, 224, 224]}, ...]`: the input shapes whose plans are built while
  compiling (each checked against the program's inputs: rank, static dims, and a symbol
  given the same size wherever it appears). cpu saves those plans with the program, gpu the
  shapes of its plans (rebuilt when loaded: gpu plans are the device's); ref has no plans
  and only checks the entries."""

from __future__ import annotations

from .. import env
from ..ir import TensorType

DEFAULT_PLAN_CACHE_SIZE = 32
CACHE_HELP = (
    "how many plans (one per input shape signature) the program keeps, least "
    "recently used dropped first (default GRAPHKILN_PLAN_CACHE_SIZE, else "
    f"{DEFAULT_PLAN_CACHE_SIZE})"
)
SHAPES_HELP = (
    "a list of {input name: shape} whose plans are built while compiling (and "
    "saved with the program), e.g. [{'x': [1, 3, 224, 224]}, {'x': [4, 3, 224, "
    "224]}]; inputs with static shapes may be left out"
)


def plan_cache_size(options: dict) -> int:
    """The bound for a program compiled with `options`, checked: a positive integer."""
    value = options.get("plan_cache_size")
    source = "plan_cache_size"
    if value is None:
        text = env.get("GRAPHKILN_PLAN_CACHE_SIZE")
        if text is None or text.strip() == "":
            return DEFAULT_PLAN_CACHE_SIZE
        source = "GRAPHKILN_PLAN_CACHE_SIZE"
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(
                f"GRAPHKILN_PLAN_CACHE_SIZE={text!r}: expected a positive integer"
            ) from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"{source}={value!r}: expected a positive integer (how many plans, "
            "one per input shape, the program keeps)"
        )
    return value


def ahead_shapes(options: dict, inputs: list) -> list[tuple[tuple[int, ...], ...]]:
    """The `shapes` option as one tuple of input shapes per entry, in input order, checked
    against `inputs` (the graph's input values); [] when not given."""
    given = options.get("shapes")
    if given is None:
        return []
    if isinstance(given, dict):
        given = [given]
    if not isinstance(given, (list, tuple)):
        raise ValueError(f"shapes={given!r:.80}: expected a list of {{input name: shape}} dicts")
    return [shape_signature(f"shapes[{n}]", entry, inputs) for n, entry in enumerate(given)]


def shape_signature(where: str, entry, inputs: list) -> tuple[tuple[int, ...], ...]:
    """One {input name: shape} as a tuple of input shapes in input order, checked against
    `inputs` (rank, static dims, a symbol the same size wherever it appears); errors start
    with `where`. Also checks the plan shapes a saved gpu program lists (serialize)."""
    if not isinstance(entry, dict):
        raise ValueError(f"{where}={entry!r:.80}: expected a dict of input name -> shape")
    names = [v.name for v in inputs]
    unknown = [k for k in entry if k not in names]
    if unknown:
        raise ValueError(f"{where}: unknown input(s) {unknown}; the program's inputs are {names}")
    bound: dict[str, tuple[int, str]] = {}
    return tuple(_one_shape(where, value, entry.get(value.name), bound) for value in inputs)


def _one_shape(where: str, value, shape, bound: dict) -> tuple[int, ...]:
    name = value.name
    t = value.type
    dims = t.dims if isinstance(t, TensorType) else None
    if shape is None:
        if dims is not None and all(isinstance(d, int) for d in dims):
            return tuple(dims)
        raise ValueError(
            f"{where}: no shape for input {name!r} ({t}), whose shape is not "
            "static: give it as a list of sizes"
        )
    if not isinstance(shape, (list, tuple)) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise ValueError(
            f"{where}: input {name!r}: shape {shape!r:.80} is not a list of sizes >= 0"
        )
    shape = tuple(int(d) for d in shape)
    if dims is None:
        return shape
    if len(dims) != len(shape):
        raise ValueError(
            f"{where}: input {name!r} has rank {len(dims)} ({t}), got shape {list(shape)}"
        )
    for axis, (want, got) in enumerate(zip(dims, shape)):
        if isinstance(want, str):
            first = bound.setdefault(want, (got, name))
            if first[0] != got:
                raise ValueError(
                    f"{where}: input {name!r}: dimension {axis} is {want}, "
                    f"which is {first[0]} in input {first[1]!r}, got {got}"
                )
        elif want != got:
            raise ValueError(
                f"{where}: input {name!r}: dimension {axis} is static {want} ({t}), got {got}"
            )
    return shape
