# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A served model: a name, a version and a compiled program, with what the protocol's
metadata says about it (inputs and outputs with datatypes, -1 for symbolic dims) and the
checks a request's tensors pass before they reach a batch.

The program is anything with `Program`'s introspection and `run`: `get_parameter_names()`,
`get_parameter_shapes()` (types with `.dtype.numpy` and `.dims`, symbolic dims as str),
`get_output_names()`, `get_output_shapes()`, `run(feeds) -> list`, callable from several
threads at once."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .codec import ProtocolError, datatype_of


@dataclass(frozen=True)
class TensorSpec:
    """One input or output: its name, numpy dtype, protocol datatype and dims (int, or the
    symbol's name; None for an unknown rank)."""

    name: str
    dtype: np.dtype
    datatype: str
    dims: tuple | None

    def metadata(self) -> dict:
        """{"name", "datatype", "shape"} as the protocol's metadata lists it (-1: any size)."""
        shape = [-1] if self.dims is None else [d if isinstance(d, int) else -1 for d in self.dims]
        return {"name": self.name, "datatype": self.datatype, "shape": shape}


def _specs(names, types, what: str) -> list[TensorSpec]:
    specs = []
    for name, t in zip(names, types):
        dtype = getattr(getattr(t, "dtype", None), "numpy", None)
        datatype = None if dtype is None else datatype_of(dtype)
        if datatype is None:
            raise ValueError(
                f"{what} {name!r} is of type {t}, which the Open Inference "
                "Protocol cannot carry (tensors of its datatypes only)"
            )
        dims = getattr(t, "dims", None)
        specs.append(
            TensorSpec(name, np.dtype(dtype), datatype, None if dims is None else tuple(dims))
        )
    return specs


@dataclass
class ServedModel:
    """A compiled program served as `name` (version `version`). `batch_symbol` is the
    symbol every input and output has as dim 0 (the dim requests are batched along), or
    None when the model has no such dim: its requests then run one at a time."""

    name: str
    program: object
    version: str = "1"
    platform: str = "graphkiln"
    inputs: list[TensorSpec] = field(init=False)
    outputs: list[TensorSpec] = field(init=False)
    batch_symbol: str | None = field(init=False)

    def __post_init__(self):
        prog = self.program
        shapes = prog.get_parameter_shapes()
        self.inputs = _specs(
            prog.get_parameter_names(), [shapes[n] for n in prog.get_parameter_names()], "input"
        )
        self.outputs = _specs(prog.get_output_names(), prog.get_output_shapes(), "output")
        firsts = {s.dims[0] if s.dims else None for s in self.inputs + self.outputs}
        (first,) = firsts if len(firsts) == 1 else (None,)
        self.batch_symbol = first if isinstance(first, str) else None

    @property
    def output_names(self) -> list[str]:
        """The output names, in the order `run` returns them."""
        return [s.name for s in self.outputs]

    def metadata(self) -> dict:
        """The protocol's model metadata (GET /v2/models/{name})."""
        return {
            "name": self.name,
            "versions": [self.version],
            "platform": self.platform,
            "inputs": [s.metadata() for s in self.inputs],
            "outputs": [s.metadata() for s in self.outputs],
        }

    def check_feeds(self, feeds: dict[str, np.ndarray]) -> None:
        """ProtocolError (400) unless `feeds` has every input, no other name, each of its
        dtype and rank, static dims as declared and each symbol one size throughout."""
        names = [s.name for s in self.inputs]
        missing = [n for n in names if n not in feeds]
        unknown = [n for n in feeds if n not in names]
        if missing or unknown:
            parts = ([f"missing input(s) {missing}"] if missing else []) + (
                [f"unknown input(s) {unknown}"] if unknown else []
            )
            raise ProtocolError(400, f"{'; '.join(parts)}: model {self.name!r} takes {names}")
        bound: dict[str, tuple[int, str]] = {}
        for spec in self.inputs:
            value = feeds[spec.name]
            got = datatype_of(value.dtype)
            if got != spec.datatype:
                raise ProtocolError(
                    400,
                    f"input {spec.name!r}: datatype {got}, but model "
                    f"{self.name!r} takes {spec.datatype}",
                )
            if spec.dims is None:
                continue
            want = spec.metadata()["shape"]
            if value.ndim != len(spec.dims):
                raise ProtocolError(
                    400,
                    f"input {spec.name!r}: shape {list(value.shape)} has rank "
                    f"{value.ndim}; model {self.name!r} takes rank "
                    f"{len(spec.dims)} {want}",
                )
            for axis, (dim, size) in enumerate(zip(spec.dims, value.shape)):
                if isinstance(dim, int) and dim != size:
                    raise ProtocolError(
                        400,
                        f"input {spec.name!r}: dim {axis} is {size}; model "
                        f"{self.name!r} fixes it at {dim} (shape {want})",
                    )
                if isinstance(dim, str):
                    first = bound.setdefault(dim, (size, spec.name))
                    if first[0] != size:
                        raise ProtocolError(
                            400,
                            f"input {spec.name!r}: dim {axis} ({dim!r}) is "
                            f"{size}, but input {first[1]!r} set {dim!r} "
                            f"to {first[0]}",
                        )
