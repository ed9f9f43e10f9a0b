# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The plan shapes of a compiled gpu program in the document (format version 4):

    "gpu_plans": [{"shapes": [[dim]] one per graph input}]   least recently used first

A gpu plan is made for one device (its kernels, tuned variants, graph replay), so the file
keeps only which input shape signatures had plans: those the program built ahead
(`shapes=[...]`) or for runs, at most plan_cache_size of them. Loading checks every entry
against the compiled graph's inputs without a device; the gpu target then builds those
plans on this device before the program is returned, so its first runs at those shapes pay
no build. Written only for a graph with dynamic inputs whose plans are keyed by shapes alone
(a graph of static inputs builds its one plan on load anyway; plans keyed by parameter
values are built when runs meet the values). A file without the field loads as before."""

from __future__ import annotations

from ..errors import FormatError
from ..targets.plan_options import shape_signature
from .checks import damaged, need_dict, need_int, need_list

FIELD = "gpu_plans"


def gpu_plan_document(executable) -> list | None:
    """The field's value for a gpu executable, or None when it has no plan shapes to keep."""
    plan_shapes = getattr(executable, "plan_shapes", None)
    signatures = plan_shapes() if plan_shapes is not None else []
    if not signatures:
        return None
    return [
        {"shapes": [[int(d) for d in shape] for shape in signature]} for signature in signatures
    ]


def read_gpu_plans(obj, graph, limits) -> list[tuple]:
    """The saved plan shapes as input shape signatures (tuples in input order, least
    recently used first), every entry checked against `graph`'s inputs; damage (a field of
    the wrong kind, a shape that does not fit an input, the same signature twice) raises
    FormatError naming the entry. Needs no device."""
    where = f"compiled.{FIELD}"
    out = []
    for n, item in enumerate(need_list(obj, where, limits)):
        at = f"{where}[{n}]"
        need_dict(item, at, ("shapes",))
        shapes = need_list(item["shapes"], f"{at}.shapes", limits, len(graph.inputs))
        for i, shape in enumerate(shapes):
            for axis, dim in enumerate(need_list(shape, f"{at}.shapes[{i}]", limits)):
                need_int(dim, f"{at}.shapes[{i}][{axis}]", 0, limits.max_dim)
        entry = {v.name: shape for v, shape in zip(graph.inputs, shapes)}
        try:
            signature = shape_signature(f"{at}.shapes", entry, list(graph.inputs))
        except ValueError as exc:
            raise FormatError(f"damaged file: {exc}") from None
        if signature in out:
            raise damaged(at, f"the same input shapes as {where}[{out.index(signature)}]")
        out.append(signature)
    return out
