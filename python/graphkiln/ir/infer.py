# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Building blocks for schemas' `infer` functions."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import GraphError
from .dtypes import DType
from .schema import InferContext
from .types import Dim, TensorType, fresh_dim


def broadcast_dims(*shapes: tuple[Dim, ...] | None) -> tuple[Dim, ...] | None:
    """Numpy-style broadcast of static or symbolic dims; None if any rank is unknown."""
    ranked = [s for s in shapes if s is not None]
    if len(ranked) != len(shapes):
        return None
    rank = max((len(s) for s in ranked), default=0)
    out: list[Dim] = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in ranked if len(s) - rank + i >= 0]
        known = {d for d in dims if d != 1}
        if not known:
            out.append(1)
        elif len(known) == 1:
            out.append(known.pop())
        else:
            ints = {d for d in known if isinstance(d, int)}
            if len(ints) > 1:
                raise GraphError(f"shapes {shapes} do not broadcast")
            out.append(ints.pop() if ints else fresh_dim("b"))
    return tuple(out)


def fresh_dims(rank: int) -> tuple[str, ...]:
    """`rank` new symbolic dims."""
    return tuple(fresh_dim() for _ in range(rank))


def unknown(dtype: DType, rank: int | None) -> TensorType:
    """A tensor of known dtype whose dims are all fresh symbols (or unknown rank)."""
    return TensorType(dtype, None if rank is None else fresh_dims(rank))


def same_as(i: int = 0) -> Callable[[InferContext], list]:
    """Output 0 has the type of input i."""
    return lambda ctx: [ctx.type(i)]


def elementwise(dtype: DType | None = None) -> Callable[[InferContext], list]:
    """Broadcast all present inputs; dtype of input 0 unless given."""

    def infer(ctx: InferContext):
        ts = [ctx.tensor(i) for i in range(ctx.num_inputs) if ctx.has(i)]
        return [TensorType(dtype or ts[0].dtype, broadcast_dims(*(t.dims for t in ts)))]

    return infer


def normalize_axis(axis: int, rank: int, where: str = "") -> int:
    if not -rank <= axis < max(rank, 1):
        raise GraphError(f"{where}: axis {axis} out of range for rank {rank}")
    return axis % rank if rank else 0


def dims_from_const(values) -> tuple[Dim, ...]:
    return tuple(int(v) for v in values.reshape(-1))
