# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Value types: tensors (dtype + dims, dims int or symbolic), sequences and optionals."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import cast

from .dtypes import DType

Dim = int | str
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_fresh = itertools.count()


def fresh_dim(prefix: str = "d") -> str:
    """A new symbolic dimension name, unique within this process."""
    return f"_{prefix}{next(_fresh)}"


# repr=False: each type's repr is its IR text form (`f32[1,3,224,224]`, `f32[N,128]`, `f32[*]`,
# `seq<i64[2]>`), which is how they read in printed dicts and lists (get_parameter_shapes).
@dataclass(frozen=True, repr=False)
class TensorType:
    """A tensor of `dtype` with `dims`; `dims is None` means the rank is unknown."""

    dtype: DType
    dims: tuple[Dim, ...] | None

    def __post_init__(self):
        if self.dims is not None:
            for d in self.dims:
                if isinstance(d, bool) or not (
                    (isinstance(d, int) and d >= 0) or (isinstance(d, str) and _SYMBOL.match(d))
                ):
                    raise ValueError(
                        f"bad dimension {d!r} in {self.dims}: "
                        "a dimension is an int >= 0 or an identifier"
                    )

    @property
    def rank(self) -> int | None:
        return None if self.dims is None else len(self.dims)

    @property
    def is_static(self) -> bool:
        return self.dims is not None and all(isinstance(d, int) for d in self.dims)

    def numel(self) -> int | None:
        if not self.is_static:
            return None
        n = 1
        for d in cast("tuple[int, ...]", self.dims):  # static: every dim an int
            n *= d
        return n

    def nbytes(self) -> int | None:
        n = self.numel()
        return None if n is None else n * self.dtype.itemsize

    def __str__(self) -> str:
        if self.dims is None:
            return f"{self.dtype.value}[*]"
        return f"{self.dtype.value}[{','.join(str(d) for d in self.dims)}]"

    __repr__ = __str__


@dataclass(frozen=True, repr=False)
class SequenceType:
    """A sequence of values of one element type (None: not known)."""

    elem: ValueType | None

    def __str__(self) -> str:
        return f"seq<{self.elem}>"

    __repr__ = __str__


@dataclass(frozen=True, repr=False)
class OptionalType:
    """A value that may be absent (`elem` None: its type is not known)."""

    elem: ValueType | None

    def __str__(self) -> str:
        return f"opt<{self.elem}>"

    __repr__ = __str__


ValueType = TensorType | SequenceType | OptionalType


def tensor(dtype: DType, dims) -> TensorType:
    return TensorType(dtype, None if dims is None else tuple(dims))
