# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`--input NAME=FILE.npy`, `--input NAME=FILE.npz` and `--input FILE.npz`: arrays read from
numpy files, never through pickle (a pickle can run code), and checked against the model's
inputs with messages that name the input and the file.

An array given for an input with symbolic dims also fixes those dims (as `--input-dim`
would, which wins where both are given): `input_shapes_from_arrays`."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass

import numpy as np

from ..errors import GraphkilnError

ACCEPTED = (
    "NAME=FILE.npy (an array saved by numpy.save), NAME=FILE.npz (the array named "
    "NAME in a numpy.savez file, or its only array) or FILE.npz (each array of it "
    "feeds the input of its name)"
)
NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a zip archive (an empty one: end record only)


@dataclass
class GivenArray:
    name: str  # the input it feeds
    array: np.ndarray
    item: str  # the --input option's text
    key: str | None = None  # the array's name in an .npz

    @property
    def label(self) -> str:
        return repr(self.item) + (f" (array {self.key!r})" if self.key is not None else "")


def _fail(label: str, message: str):
    raise SystemExit(f"graphkiln: --input {label}: {message}")


def read_inputs(items: list[str]) -> dict[str, GivenArray]:
    """The arrays of the --input options, by input name (each name at most once)."""
    given: dict[str, GivenArray] = {}
    for item in items:
        name, sep, path = item.partition("=")
        label = repr(item)
        if sep and not name:
            _fail(label, f"no input name before '='; accepted: {ACCEPTED}")
        if sep:
            arrays = _read(label, path)
            if isinstance(arrays, dict):
                key, array = _pick(label, path, name, arrays)
                found = [GivenArray(name, array, item, key)]
            else:
                found = [GivenArray(name, arrays, item)]
        else:
            arrays = _read(label, item)
            if not isinstance(arrays, dict):
                _fail(
                    label,
                    "a file without NAME= must be an .npz whose arrays are named "
                    "after the inputs; this one holds a single array (.npy): give "
                    f"it as NAME={item}",
                )
            found = [GivenArray(k, a, item, k) for k, a in arrays.items()]
        for g in found:
            if g.name in given:
                _fail(
                    g.label,
                    f"input {g.name!r} is given twice (also by --input {given[g.name].label})",
                )
            given[g.name] = g
    return given


def _pick(label: str, path: str, name: str, arrays: dict) -> tuple[str, np.ndarray]:
    """(array name, array) of an .npz given as NAME=FILE.npz."""
    if name in arrays:
        return name, arrays[name]
    if len(arrays) == 1:
        return next(iter(arrays.items()))
    if not arrays:
        _fail(label, f"{path} holds no arrays")
    _fail(
        label,
        f"{path} holds the arrays {', '.join(sorted(arrays))}, none named {name!r} "
        f"(NAME=FILE.npz takes the array NAME, or the only one); FILE.npz alone feeds "
        "each array to the input of its name",
    )


def _read(label: str, path: str):
    """The array of an .npy file, or {name: array} of an .npz; anything else is refused."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as exc:
        _fail(label, f"cannot read {path}: {exc.strerror}")
    if head.startswith(NPY_MAGIC):
        try:
            return np.load(path, allow_pickle=False)
        except ValueError as exc:
            if "allow_pickle" in str(exc) or "pickled" in str(exc):
                _fail(
                    label,
                    f"{path} holds an array of Python objects, which only pickle can "
                    "load; graphkiln does not load pickles (they can run code): save "
                    "a numeric, bool or string array",
                )
            _fail(label, f"{path} is not a readable .npy file: {exc}")
        except OSError as exc:
            _fail(label, f"cannot read {path}: {exc}")
    if head.startswith(ZIP_MAGICS):
        try:
            return load_npz(path)
        except NumpyFileError as exc:
            _fail(label, str(exc))
    pickle = (
        " (it looks like a pickle, which graphkiln does not load)" if head[:1] == b"\x80" else ""
    )
    _fail(label, f"{path} is not a numpy .npy or .npz file{pickle}; accepted: {ACCEPTED}")


class NumpyFileError(GraphkilnError, ValueError):
    """A numpy file that cannot be read without pickle; the message names the file."""


def load_npz(path: str) -> dict[str, np.ndarray]:
    """{name: array} of an .npz file, read without pickle; NumpyFileError otherwise (also
    used by calibration_files.py)."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {key: _npz_array(path, npz, key) for key in npz.files}
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise NumpyFileError(f"{path} is not a readable .npz file: {exc}") from None


def _npz_array(path: str, npz, key: str) -> np.ndarray:
    try:
        return npz[key]
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "pickled" in str(exc):
            raise NumpyFileError(
                f"array {key!r} of {path} holds Python objects, which only pickle can "
                "load; graphkiln does not load pickles (they can run code)"
            ) from None
        raise NumpyFileError(f"array {key!r} of {path} cannot be read: {exc}") from None


def input_shapes_from_arrays(
    graph_proto, given: dict[str, GivenArray], fixed: dict[str, list[int]]
) -> dict[str, list[int]]:
    """`fixed` (the --input-dim shapes) plus, for each given array whose input has symbolic
    or unknown dims and no --input-dim, the input's shape: its static dims as declared, the
    others from the array. A rank that differs from the declared one is an error here."""
    shapes = dict(fixed)
    initializers = {t.name for t in graph_proto.initializer}
    for vi in graph_proto.input:
        g = given.get(vi.name)
        if g is None or vi.name in fixed or vi.name in initializers:
            continue
        if vi.type.WhichOneof("value") != "tensor_type":
            continue
        tensor = vi.type.tensor_type
        if not tensor.HasField("shape"):  # rank unknown: the array says
            shapes[vi.name] = list(g.array.shape)
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
        if all(d is not None for d in dims):
            continue
        if len(dims) != g.array.ndim:
            declared = ",".join("?" if d is None else str(d) for d in dims)
            _fail(
                g.label,
                f"the array has shape {list(g.array.shape)} (rank {g.array.ndim}), "
                f"input {vi.name!r} of the model has rank {len(dims)} "
                f"([{declared}], ? symbolic)",
            )
        shapes[vi.name] = [a if d is None else d for d, a in zip(dims, g.array.shape)]
    return shapes


def check_given(name: str, g: GivenArray, expected) -> None:
    """The array fits the program's input type: dtype and static dims (a clear message naming
    the file; Program.run checks again, and symbols shared between inputs)."""
    from ..ir import TensorType

    if not isinstance(expected, TensorType):
        return
    a = g.array
    want = np.dtype(expected.dtype.numpy)
    if a.dtype != want and not (want == np.dtype(object) and a.dtype.kind in "OU"):
        _fail(
            g.label,
            f"the array is {a.dtype}, input {name!r} of the model is {expected} "
            f"({want}); save it as {want}, e.g. numpy.save(FILE, "
            f"array.astype(numpy.{want}))",
        )
    if expected.dims is None:
        return
    fits = a.ndim == len(expected.dims) and all(
        isinstance(d, str) or d == got for d, got in zip(expected.dims, a.shape)
    )
    if not fits:
        _fail(
            g.label,
            f"the array has shape {list(a.shape)}, input {name!r} of the model is "
            f"{expected}: its fixed dims (the model's, or --input-dim's) must match",
        )
