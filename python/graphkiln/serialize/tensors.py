# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Tensor records: the table of constant arrays a document refers to by index.

Numeric tensors are raw little-endian bytes: in the msgpack container a record names an
offset and length in the data section; in JSON it holds base64 (or, for a few small exact
values, a plain list). String tensors are lists of their elements in both."""

from __future__ import annotations

import base64
import binascii
import math

import ml_dtypes
import numpy as np

from ..ir import DType
from .checks import damaged, need_dict, need_int, need_list, need_str
from .limits import DATA_ALIGNMENT, Limits

SMALL_TENSOR = 64  # JSON writes tensors of at most this many exact elements as lists
_LIST_FLOATS = (DType.f16, DType.bf16, DType.f32, DType.f64)
# element types stored one per byte that use only its low bits (the largest valid byte)
_LARGEST_BYTE = {
    DType.bool: 1,
    DType.u4: 15,
    DType.i4: 15,
    DType.f4e2m1: 15,
    DType.u2: 3,
    DType.i2: 3,
}


class TensorTable:
    """Collects the arrays of a program, each once (arrays shared by the imported and the
    compiled graph are stored once and shared again after loading)."""

    def __init__(self):
        self.arrays: list[np.ndarray] = []
        self._index: dict[int, int] = {}

    def add(self, array: np.ndarray) -> int:
        key = id(array)
        if key not in self._index:
            self._index[key] = len(self.arrays)
            self.arrays.append(array)
        return self._index[key]


def normalized(array: np.ndarray) -> tuple[DType, np.ndarray]:
    """The element type and a C-contiguous, native little-endian copy-if-needed of `array`."""
    dtype = DType.from_numpy(array.dtype)
    if dtype is DType.str:
        return dtype, array
    return dtype, np.asarray(array, dtype=dtype.numpy, order="C")  # keeps 0-d arrays 0-d


def string_elements(array: np.ndarray, for_json: bool) -> list:
    items = []
    for item in array.reshape(-1).tolist():
        if isinstance(item, bytes):
            items.append({"bytes": base64.b64encode(item).decode("ascii")} if for_json else item)
        else:
            items.append(str(item))
    return items


def json_record(array: np.ndarray) -> dict:
    dtype, array = normalized(array)
    record = {"dtype": dtype.value, "shape": list(array.shape)}
    if dtype is DType.str:
        record["strings"] = string_elements(array, for_json=True)
    elif array.size <= SMALL_TENSOR and _exact_as_list(dtype, array):
        flat = array.reshape(-1)
        if dtype is DType.bool:
            record["values"] = [bool(x) for x in flat]
        elif dtype.is_int:
            record["values"] = [int(x) for x in flat]
        else:
            record["values"] = [float(x) for x in flat.astype(np.float64)]
    else:
        record["base64"] = base64.b64encode(array.tobytes()).decode("ascii")
    return record


def _exact_as_list(dtype: DType, array: np.ndarray) -> bool:
    if dtype is DType.bool or dtype.is_int:
        return True
    return dtype in _LIST_FLOATS and bool(np.all(np.isfinite(array.astype(np.float64))))


class Budget:
    """The bytes of tensor data declared so far, against Limits.max_total_bytes."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.used = 0

    def take(self, nbytes: int, where: str) -> None:
        self.used += nbytes
        if self.used > self.limits.max_total_bytes:
            raise damaged(
                where,
                f"tensors declare {self.used} bytes in all, over the limit "
                f"of {self.limits.max_total_bytes} (Limits.max_total_bytes)",
            )


def read_dtype(obj, where: str) -> DType:
    if not isinstance(obj, str):
        raise damaged(where, f"dtype must be a name, got {type(obj).__name__}")
    try:
        return DType(obj)
    except ValueError:
        raise damaged(where, f"unknown dtype {obj[:20]!r}") from None


def read_shape(obj, where: str, limits: Limits) -> tuple[tuple[int, ...], int]:
    """The shape and its element count, each dim checked before multiplying."""
    need_list(obj, where, limits)
    if len(obj) > limits.max_rank:
        raise damaged(where, f"rank {len(obj)} is over the limit {limits.max_rank}")
    count = 1
    for i, dim in enumerate(obj):
        count *= need_int(dim, f"{where}[{i}]", 0, limits.max_dim)
        if count > limits.max_total_bytes:
            raise damaged(where, f"shape {obj[:8]} declares over {limits.max_total_bytes} elements")
    return tuple(obj), count


_MSGPACK_RECORD = frozenset(("dtype", "shape", "offset", "nbytes"))
_INT = frozenset((int,))


def _quick_record(record, limits: Limits, budget: Budget, data, data_length: int):
    """The common msgpack record (numeric, offset and nbytes), checked without building
    messages; None where anything is off (decode_record then says what)."""
    if type(record) is not dict or record.keys() != _MSGPACK_RECORD:
        return None
    name, shape, offset, nbytes = (
        record["dtype"],
        record["shape"],
        record["offset"],
        record["nbytes"],
    )
    dtype = _DTYPES.get(name) if type(name) is str else None
    if (
        dtype is None
        or dtype in _LARGEST_BYTE
        or type(shape) is not list
        or len(shape) > limits.max_rank
        or not set(map(type, shape)) <= _INT
        or (shape and (min(shape) < 0 or max(shape) > limits.max_dim))
        or type(offset) is not int
        or type(nbytes) is not int
    ):
        return None
    count = math.prod(shape)
    if (
        count * dtype.itemsize != nbytes
        or offset < 0
        or offset % DATA_ALIGNMENT
        or offset + nbytes > data_length
        or budget.used + nbytes > limits.max_total_bytes
    ):
        return None
    budget.used += nbytes
    flat = np.frombuffer(data, dtype.numpy, count, offset) if count else np.empty(0, dtype.numpy)
    return flat.reshape(shape)


_DTYPES = {d.value: d for d in DType if d is not DType.str}


def decode_record(
    record, where: str, limits: Limits, budget: Budget, data=None, data_length: int = 0
) -> np.ndarray:
    """One tensor record as an array. `data` is the msgpack data section (bytes, mmap)
    from which arrays are made without copying; None for JSON."""
    if data is not None:
        quick = _quick_record(record, limits, budget, data, data_length)
        if quick is not None:
            return quick
    need_dict(
        record, where, ("dtype", "shape"), ("offset", "nbytes", "base64", "values", "strings")
    )
    dtype = read_dtype(record["dtype"], f"{where}.dtype")
    shape, count = read_shape(record["shape"], f"{where}.shape", limits)
    storage = [k for k in ("offset", "base64", "values", "strings") if k in record]
    if len(storage) != 1:
        raise damaged(where, f"expected exactly one of offset/base64/values/strings, got {storage}")
    if dtype is DType.str or "strings" in record:
        return _strings(record, dtype, shape, count, where, limits, budget)
    nbytes = count * dtype.itemsize
    budget.take(nbytes, where)
    if "offset" in record:
        if data is None or "nbytes" not in record:
            raise damaged(where, "offset/nbytes records belong to the msgpack container")
        offset = need_int(record["offset"], f"{where}.offset", 0, data_length)
        declared = need_int(record["nbytes"], f"{where}.nbytes", 0, data_length)
        if declared != nbytes:
            raise damaged(
                where,
                f"{declared} bytes for shape {list(shape)} of {dtype.value} ({nbytes} expected)",
            )
        if offset % DATA_ALIGNMENT or offset + nbytes > data_length:
            raise damaged(
                where,
                f"bytes [{offset}, {offset + nbytes}) are not an aligned part "
                f"of the {data_length}-byte data section",
            )
        flat = (
            np.frombuffer(data, dtype.numpy, count, offset) if count else np.empty(0, dtype.numpy)
        )
    elif "nbytes" in record:
        raise damaged(where, "nbytes without offset")
    elif "base64" in record:
        flat = _from_base64(record["base64"], dtype, count, nbytes, where, limits)
    else:
        flat = _from_values(record["values"], dtype, count, where, limits)
    _check_byte_range(flat, dtype, where)
    return flat.reshape(shape)


def _strings(record, dtype, shape, count, where, limits, budget) -> np.ndarray:
    if dtype is not DType.str or "strings" not in record:
        raise damaged(where, "string data needs dtype str and a strings list")
    items = need_list(record["strings"], f"{where}.strings", limits, count)
    budget.take(8 * count, where)
    out = np.empty(count, dtype=object)
    for i, item in enumerate(items):
        if isinstance(item, dict):
            text = need_str(
                need_dict(item, f"{where}.strings[{i}]", ("bytes",))["bytes"],
                f"{where}.strings[{i}]",
                limits,
            )
            try:
                item = base64.b64decode(text, validate=True)
            except (binascii.Error, ValueError):
                raise damaged(f"{where}.strings[{i}]", "bad base64") from None
        elif isinstance(item, bytes):
            if len(item) > limits.max_string_bytes:
                raise damaged(f"{where}.strings[{i}]", "string over the limit")
        else:
            item = need_str(item, f"{where}.strings[{i}]", limits)
        out[i] = item
    return out.reshape(shape)


def _from_base64(text, dtype, count, nbytes, where, limits) -> np.ndarray:
    need_str(text, f"{where}.base64", Limits(max_string_bytes=limits.max_total_bytes * 2))
    if len(text) != 4 * ((nbytes + 2) // 3):
        raise damaged(
            where,
            f"{len(text)} base64 characters cannot hold the {nbytes} bytes "
            f"of shape {count} x {dtype.value}",
        )
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise damaged(where, "bad base64 data") from None
    if len(raw) != nbytes:
        raise damaged(where, f"base64 holds {len(raw)} bytes, {nbytes} expected")
    return np.frombuffer(raw, dtype.numpy, count) if count else np.empty(0, dtype.numpy)


def _from_values(items, dtype, count, where, limits) -> np.ndarray:
    need_list(items, f"{where}.values", limits, count)
    if dtype is DType.bool:
        if not all(isinstance(x, bool) for x in items):
            raise damaged(where, "bool values must be true or false")
        return np.array(items, dtype=np.bool_)
    if dtype.is_int:
        info = ml_dtypes.iinfo(dtype.numpy)
        for i, x in enumerate(items):
            need_int(x, f"{where}.values[{i}]", int(info.min), int(info.max))
        wide = np.array(items, dtype=np.uint64 if dtype is DType.u64 else np.int64)
        return wide.astype(dtype.numpy)
    if dtype in _LIST_FLOATS:
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in items):
            raise damaged(where, "float values must be numbers")
        wide = np.array(items, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            narrow = wide.astype(dtype.numpy)
            exact = np.array_equal(narrow.astype(np.float64), wide, equal_nan=True)
        if not exact:  # the writer only lists values the dtype holds exactly
            raise damaged(where, f"values are not exactly representable as {dtype.value}")
        return narrow
    raise damaged(where, f"dtype {dtype.value} cannot be written as a list")


def _check_byte_range(flat: np.ndarray, dtype: DType, where: str) -> None:
    largest = _LARGEST_BYTE.get(dtype)
    if largest is None or flat.size == 0:
        return
    if int(flat.view(np.uint8).max()) > largest:
        raise damaged(where, f"{dtype.value} data has bytes over {largest}")
