# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ONNX protobuf pieces -> Python / IR: tensors, types, attributes, external data."""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import numpy_helper

from ...errors import ModelError
from ...ir import DType, OptionalType, SequenceType, TensorType, fresh_dim
from .symbolic_dims import is_fixed, is_symbol_name
from .limits import DEFAULT_MAX_TENSOR_BYTES, check_tensor_bytes, element_count

_EXTERNAL = onnx.TensorProto.EXTERNAL
_PACKED_BITS = {DType.u4: 4, DType.i4: 4, DType.f4e2m1: 4, DType.u2: 2, DType.i2: 2}


def tensor_to_array(
    tensor: onnx.TensorProto, where: str = "", max_bytes: int = DEFAULT_MAX_TENSOR_BYTES
) -> np.ndarray:
    """A TensorProto as a numpy array; strings become Python str objects. Its declared size
    is checked against `max_bytes` and its data against its dims before any conversion."""
    if tensor.data_location == _EXTERNAL:
        raise ModelError(
            f"{where}: tensor {tensor.name!r} keeps its data in an external file, "
            "which is only read when the model is loaded from a path"
        )
    try:
        dtype = DType.from_onnx(tensor.data_type)
    except ValueError as exc:
        raise ModelError(f"{where}: tensor {tensor.name!r} is malformed: {exc}") from None
    what = f"{where}: tensor {tensor.name!r}"
    check_tensor_bytes(what, tensor.dims, dtype.itemsize, max_bytes)
    _check_raw_data(tensor, dtype, what)
    try:
        array = numpy_helper.to_array(tensor)
    except (ValueError, TypeError, IndexError) as exc:
        raise ModelError(f"{what} is malformed: {exc}") from None
    if tensor.data_type == onnx.TensorProto.STRING:
        array = (
            np.vectorize(_decode, otypes=[object])(array) if array.size else array.astype(object)
        )
    return array


def _check_raw_data(tensor: onnx.TensorProto, dtype: DType, what: str) -> None:
    if not tensor.HasField("raw_data"):
        return
    if dtype == DType.str:
        raise ModelError(f"{what}: a string tensor cannot keep its data in raw_data")
    count = element_count(tensor.dims)
    bits = _PACKED_BITS.get(dtype)
    need = (count * bits + 7) // 8 if bits else count * dtype.itemsize
    have = len(tensor.raw_data)
    if have != need:
        raise ModelError(
            f"{what}: raw_data holds {have} bytes but {dtype.value}{list(tensor.dims)} needs {need}"
        )


def _decode(s):
    return s.decode("utf-8", "surrogateescape") if isinstance(s, bytes) else s


def sparse_to_array(
    sparse: onnx.SparseTensorProto, where: str = "", max_bytes: int = DEFAULT_MAX_TENSOR_BYTES
) -> np.ndarray:
    values = tensor_to_array(sparse.values, where, max_bytes).reshape(-1)
    indices = tensor_to_array(sparse.indices, where, max_bytes)
    dims = tuple(int(d) for d in sparse.dims)
    what = f"{where}: sparse tensor {sparse.values.name!r}"
    check_tensor_bytes(what, dims, values.dtype.itemsize, max_bytes)  # the dense result
    if indices.dtype.kind not in "iu":
        raise ModelError(f"{what}: indices must be integers, got {indices.dtype}")
    indices = indices.astype(np.int64)
    nnz = values.size
    if indices.ndim == 2 and indices.shape == (nnz, len(dims)) and len(dims) > 1:
        coords = indices.T  # [nnz, rank] coordinates
        if coords.size and ((coords < 0).any() or (coords >= np.array(dims)[:, None]).any()):
            raise ModelError(f"{what}: sparse tensor index out of range for shape {dims}")
        indices = np.ravel_multi_index(coords, dims) if coords.size else coords.reshape(-1)
    indices = indices.reshape(-1)
    if indices.size != nnz:
        raise ModelError(f"{what}: {indices.size} indices for {nnz} values")
    size = element_count(dims)
    if indices.size and (indices.min() < 0 or indices.max() >= size):
        raise ModelError(f"{what}: sparse tensor index out of range for shape {dims}")
    dense = np.zeros(dims, dtype=values.dtype)
    dense.reshape(-1)[indices] = values
    return dense


def type_from_proto(
    tp: onnx.TypeProto,
    where: str,
    dim_override=None,
    default_dim=None,
    namer=None,
    input_name: str = "",
):
    """An IR value type from a TypeProto. `default_dim` replaces symbolic dims if not None;
    else `namer` (symbolic_dims.DimNamer, for the model's inputs) names them, or, without
    one, identifier dim_params keep their names and other symbolic dims get fresh ones."""
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        tt = tp.tensor_type
        if tt.elem_type == 0:
            raise ModelError(f"{where}: tensor type has no element type")
        try:
            dtype = DType.from_onnx(tt.elem_type)
        except ValueError as exc:
            raise ModelError(f"{where}: {exc}") from None
        if dim_override is not None:
            return TensorType(dtype, tuple(int(d) for d in dim_override))
        if not tt.HasField("shape"):
            return TensorType(dtype, None)
        dims = []
        for axis, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value < -1:
                raise ModelError(
                    f"{where}: negative dimension {d.dim_value} (a dim is a size "
                    ">= 0, or -1, a dim_param or no value for one not known)"
                )
            if is_fixed(d):
                dims.append(int(d.dim_value))
            elif default_dim is not None:
                dims.append(int(default_dim))
            elif namer is not None:
                dims.append(namer.name(d, input_name, axis))
            elif not d.HasField("dim_value") and is_symbol_name(d.dim_param):
                dims.append(d.dim_param)
            else:
                dims.append(fresh_dim("in"))
        return TensorType(dtype, tuple(dims))
    if which == "sequence_type":
        return SequenceType(
            type_from_proto(tp.sequence_type.elem_type, where, namer=namer, input_name=input_name)
        )
    if which == "optional_type":
        return OptionalType(
            type_from_proto(tp.optional_type.elem_type, where, namer=namer, input_name=input_name)
        )
    raise ModelError(f"{where}: unsupported value type {which or 'missing'!r}")


def load_external_data(
    model: onnx.ModelProto, base_dir: str, max_bytes: int = DEFAULT_MAX_TENSOR_BYTES
) -> None:
    """Read external tensor data in place, refusing locations outside `base_dir`, anything
    but a regular file, and ranges longer than `max_bytes`."""
    base = os.path.realpath(base_dir)
    for tensor in _all_tensors(model.graph):
        if tensor.data_location != _EXTERNAL:
            continue
        info = {e.key: e.value for e in tensor.external_data}
        where = f"tensor {tensor.name!r}"
        path, location = _external_path(info, base, where)
        try:
            offset = int(info.get("offset", 0))
            length = int(info["length"]) if "length" in info else None
        except ValueError:
            raise ModelError(f"{where}: external data offset/length are not integers") from None
        try:
            size = os.path.getsize(path)
            if (
                offset < 0
                or offset > size
                or (length is not None and (length < 0 or offset + length > size))
            ):
                raise ModelError(
                    f"{where}: external data range offset={offset} length={length} "
                    f"is outside {location!r} ({size} bytes)"
                )
            count = size - offset if length is None else length
            if count > max_bytes:
                raise ModelError(
                    f"{where}: external data of {count:,} bytes in {location!r} is "
                    f"over the limit of {max_bytes:,} bytes for one tensor"
                )
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read(count)
        except OSError as exc:
            raise ModelError(
                f"{where}: cannot read external data {location!r}: {exc.strerror}"
            ) from None
        tensor.raw_data = data
        del tensor.external_data[:]
        tensor.data_location = onnx.TensorProto.DEFAULT


def _external_path(info: dict, base: str, where: str) -> tuple[str, str]:
    """The resolved path of an external data location, which must name a regular file
    inside `base` (after symlinks are followed)."""
    location = info.get("location", "")
    if not location:
        raise ModelError(f"{where}: external data without a location")
    if "\0" in location:
        raise ModelError(f"{where}: external data location {location!r} contains a NUL byte")
    if os.path.isabs(location):
        raise ModelError(
            f"{where}: external data location {location!r} is absolute; "
            "it must be a path relative to the model's folder"
        )
    path = os.path.realpath(os.path.join(base, location))
    if os.path.commonpath([path, base]) != base:
        raise ModelError(
            f"{where}: external data location {location!r} resolves outside "
            f"the model's folder {base}"
        )
    if not os.path.isfile(path):
        state = (
            "a folder"
            if os.path.isdir(path)
            else ("missing" if not os.path.lexists(path) else "not a regular file")
        )
        raise ModelError(
            f"{where}: external data location {location!r} is {state}; "
            "it must name a regular file in the model's folder"
        )
    return path, location


def _all_tensors(graph: onnx.GraphProto):
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from _all_tensors(attr.g)
            for g in attr.graphs:
                yield from _all_tensors(g)
