# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Program: a graph plus, once compiled, the executable of one target."""

from __future__ import annotations

import numpy as np

from .errors import GraphkilnError
from .ir import Graph, OptionalType, SequenceType, TensorType, ValueType, print_graph
from .targets import Executable, Target, get_target


class Program:
    """An imported model. `compile(target)` prepares it to `run(feeds)`."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.target: Target | None = None
        self.options: dict = {}
        self._executable: Executable | None = None

    # -- compiling ----------------------------------------------------------------------
    def compile(self, target="ref", **options) -> "Program":
        """Compile for `target` (a name or a Target). Returns self."""
        target = get_target(target)
        self._executable = target.compile(self.graph, dict(options))
        self.target, self.options = target, dict(options)
        return self

    @property
    def is_compiled(self) -> bool:
        return self._executable is not None

    # -- running ------------------------------------------------------------------------
    def run(self, feeds: dict) -> list:
        """Run once. `feeds` maps every parameter name to a numpy array of its type."""
        if self._executable is None:
            raise GraphkilnError("the program is not compiled: call program.compile('ref') "
                                 "(or another target) before run()")
        inputs = check_feeds(self.graph, feeds)
        return self._executable.run(inputs)

    # -- introspection ------------------------------------------------------------------
    def get_parameter_names(self) -> list[str]:
        return [v.name for v in self.graph.inputs]

    def get_parameter_shapes(self) -> dict[str, ValueType]:
        return {v.name: v.type for v in self.graph.inputs}

    def get_output_names(self) -> list[str]:
        return [v.name for v in self.graph.outputs]

    def get_output_shapes(self) -> list[ValueType]:
        return [v.type for v in self.graph.outputs]

    def print(self, file=None, elide: bool = True) -> None:
        """Print the IR (large constants elided unless elide=False)."""
        print(print_graph(self.graph, elide=elide), end="", file=file)

    def __str__(self) -> str:
        return print_graph(self.graph, elide=True)


def check_feeds(graph: Graph, feeds) -> list:
    """Validate `feeds` against the graph inputs; return them in input order."""
    if not isinstance(feeds, dict):
        raise TypeError(f"feeds must be a dict of name -> numpy array, got {type(feeds).__name__}")
    names = [v.name for v in graph.inputs]
    missing = [n for n in names if n not in feeds]
    unknown = [n for n in feeds if n not in names]
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"missing {missing}")
        if unknown:
            parts.append(f"unknown {unknown}")
        raise ValueError(f"bad feeds: {'; '.join(parts)}; the program's inputs are {names}")
    bound: dict[str, int] = {}
    return [_check_one(v.name, v.type, feeds[v.name], bound) for v in graph.inputs]


def _check_one(name: str, expected, data, bound: dict[str, int]):
    if isinstance(expected, OptionalType):
        return None if data is None else _check_one(name, expected.elem, data, bound)
    if isinstance(expected, SequenceType):
        if not isinstance(data, (list, tuple)):
            raise TypeError(f"input {name!r}: expected a list for {expected}, got {type(data).__name__}")
        return [_check_one(f"{name}[{i}]", expected.elem, x, bound) for i, x in enumerate(data)]
    if not isinstance(data, np.ndarray):
        if np.isscalar(data) and isinstance(expected, TensorType) and expected.rank == 0:
            data = np.asarray(data, dtype=expected.dtype.numpy)
        else:
            raise TypeError(f"input {name!r}: expected a numpy array of {expected}, "
                            f"got {type(data).__name__}")
    if not isinstance(expected, TensorType):
        return data
    want = expected.dtype.numpy
    if data.dtype != want and not (want == np.dtype(object) and data.dtype.kind in "OU"):
        raise ValueError(f"input {name!r}: expected dtype {expected.dtype.value} "
                         f"({want}), got {data.dtype}")
    if expected.dims is None:
        return data
    if data.ndim != len(expected.dims):
        raise ValueError(f"input {name!r}: expected rank {len(expected.dims)} {expected}, "
                         f"got shape {list(data.shape)}")
    for axis, (want_dim, got) in enumerate(zip(expected.dims, data.shape)):
        if isinstance(want_dim, str):
            if bound.setdefault(want_dim, got) != got:
                raise ValueError(f"input {name!r}: dimension {axis} is {want_dim}={bound[want_dim]} "
                                 f"from another input, got {got}")
        elif want_dim != got:
            raise ValueError(f"input {name!r}: expected shape {list(expected.dims)}, "
                             f"got {list(data.shape)}")
    return data
