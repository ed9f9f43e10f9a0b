# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Which tensors the cpu target keeps channels-last (N, spatial..., C in memory).

oneDNN's fast convolution and pooling kernels work on channels-last data; keeping the
activations of a CNN in that layout between them saves a reorder per kernel. That holds
for 1-D (N, C, W: audio, byte and text CNNs), 2-D and 3-D convolutions alike. Producers:
convolutions and poolings, and a Transpose that views plain N, spatial..., C data as
N, C, spatial... Pointwise nodes keep the layout of a same-shape input; Concat along
channels keeps it when all its inputs have it. Graph outputs stay plain; consumers that
need plain data get one reorder (LoweringContext.input)."""

from __future__ import annotations

from ...ir import DType, Node, TensorType, Value
from ...passes.op_classes import POINTWISE

PRODUCERS = frozenset({"Conv", "QLinearConv", "MaxPool", "AveragePool"})
# float activations, and the u8 / i8 ones of a quantized CNN (QLinearConv, MaxPool)
_DTYPES = frozenset({DType.f32, DType.u8, DType.i8})


def _candidate(value: Value | None) -> bool:
    t = value.type if value is not None else None
    return (
        isinstance(t, TensorType)
        and t.dtype in _DTYPES
        and t.dims is not None
        and 3 <= len(t.dims) <= 5
        and all(isinstance(d, int) for d in t.dims)
        and t.dims[1] > 1
        and _spatial(t.dims) > 1
    )


def _spatial(dims) -> int:
    size = 1
    for d in dims[2:]:
        size *= d
    return size


def _is_pointwise(node: Node) -> bool:
    return node.op in POINTWISE or (node.op == "Fused" and node.attrs.get("kind") == "pointwise")


# Readers that take channels-last data as it is (the others get a reorder to plain).
CHANNELS_LAST_READERS = frozenset(
    {
        "Conv",
        "QLinearConv",
        "MaxPool",
        "AveragePool",
        "GlobalAveragePool",
        "GlobalMaxPool",
        "Concat",
        "Transpose",
    }
)


def _reads_channels_last(node: Node) -> bool:
    if node.op == "Fused":
        return node.attrs.get("kind") in ("conv", "pointwise")
    return node.op in CHANNELS_LAST_READERS or node.op in POINTWISE or _global_pool_reduction(node)


def _global_pool_reduction(node: Node) -> bool:
    """ReduceMean / ReduceMax over every spatial axis (the cpu target runs it as a global
    pool, which reads channels-last data as it is)."""
    if node.op not in ("ReduceMean", "ReduceMax") or not node.inputs:
        return False
    dims = getattr(node.inputs[0].type, "dims", None)
    if dims is None or len(dims) < 3:
        return False
    axes = node.attrs.get("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1] is not None:
        data = node.inputs[1].constant
        axes = None if data is None else [int(a) for a in data.reshape(-1)]
    if not axes:
        return False
    rank = len(dims)
    reduced = {a % rank for a in axes}
    return reduced | {a for a in range(2, rank) if dims[a] == 1} == set(range(2, rank))


def _is_nhwc_to_nchw(node: Node) -> bool:
    """A Transpose (0, rank-1, 1, ..., rank-2): N, spatial..., C data seen as N, C, spatial..."""
    perm = tuple(node.attrs.get("perm") or ()) if node.op == "Transpose" else ()
    return len(perm) >= 3 and perm == (0, len(perm) - 1, *range(1, len(perm) - 1))


def _concat_over_channels(node: Node, rank: int) -> bool:
    axis = node.attrs.get("axis")
    return node.op == "Concat" and axis is not None and axis % rank == 1


def channels_last_values(
    nodes: list[Node], outputs: set[Value], readers: dict[Value, list[Node]]
) -> set[Value]:
    chosen: set[Value] = set()
    for node in nodes:
        out = node.outputs[0] if node.outputs else None
        if not _candidate(out) or out in outputs:
            continue
        kind = node.attrs.get("kind") if node.op == "Fused" else None
        if node.op in PRODUCERS or kind == "conv" or _is_nhwc_to_nchw(node):
            # a Transpose (0,3,1,2) of plain NHWC data is that data seen channels-last
            chosen.add(out)
        elif _is_pointwise(node):
            if any(v in chosen and v.type.dims == out.type.dims for v in node.inputs):
                chosen.add(out)
        elif _concat_over_channels(node, len(out.type.dims)):
            if all(v in chosen for v in node.inputs if v is not None):
                chosen.add(out)
    # Keep channels-last only where some reader takes it (else it costs a reorder).
    for node in reversed(nodes):
        for out in node.outputs:
            if out in chosen and not any(_reads_channels_last(r) for r in readers.get(out, [])):
                chosen.discard(out)
    return chosen
