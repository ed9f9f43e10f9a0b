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

_EXTERNAL = onnx.TensorProto.EXTERNAL


def tensor_to_array(tensor: onnx.TensorProto, where: str = "") -> np.ndarray:
    """A TensorProto as a numpy array; strings become Python str objects."""
    if tensor.data_location == _EXTERNAL:
        raise ModelError(f"{where}: tensor {tensor.name!r} keeps its data in an external file, "
                         "which is only read when the model is loaded from a path")
    try:
        DType.from_onnx(tensor.data_type)
        array = numpy_helper.to_array(tensor)
    except (ValueError, TypeError) as exc:
        raise ModelError(f"{where}: tensor {tensor.name!r} is malformed: {exc}") from None
    if tensor.data_type == onnx.TensorProto.STRING:
        array = np.vectorize(_decode, otypes=[object])(array) if array.size else array.astype(object)
    return array


def _decode(s):
    return s.decode("utf-8", "surrogateescape") if isinstance(s, bytes) else s


def sparse_to_array(sparse: onnx.SparseTensorProto, where: str = "") -> np.ndarray:
    values = tensor_to_array(sparse.values, where)
    indices = tensor_to_array(sparse.indices, where).astype(np.int64)
    dims = tuple(sparse.dims)
    dense = np.zeros(dims, dtype=values.dtype)
    flat = dense.reshape(-1)
    if indices.ndim == 2:  # [nnz, rank] coordinates
        indices = np.ravel_multi_index(indices.T, dims) if indices.size else indices.reshape(-1)
    if indices.size and (indices.min() < 0 or indices.max() >= flat.size):
        raise ModelError(f"{where}: sparse tensor index out of range for shape {dims}")
    flat[indices.reshape(-1)] = values.reshape(-1)
    return dense


def type_from_proto(tp: onnx.TypeProto, where: str, dim_override=None, default_dim=None):
    """An IR value type from a TypeProto. `default_dim` replaces symbolic dims if not None."""
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
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                if d.dim_value < 0:
                    raise ModelError(f"{where}: negative dimension {d.dim_value}")
                dims.append(int(d.dim_value))
            elif default_dim is not None:
                dims.append(int(default_dim))
            elif d.dim_param and d.dim_param.isidentifier():
                dims.append(d.dim_param)
            else:
                dims.append(fresh_dim("in"))
        return TensorType(dtype, tuple(dims))
    if which == "sequence_type":
        return SequenceType(type_from_proto(tp.sequence_type.elem_type, where))
    if which == "optional_type":
        return OptionalType(type_from_proto(tp.optional_type.elem_type, where))
    raise ModelError(f"{where}: unsupported value type {which or 'missing'!r}")


def load_external_data(model: onnx.ModelProto, base_dir: str) -> None:
    """Read external tensor data in place, refusing locations outside `base_dir`."""
    base = os.path.realpath(base_dir)
    for tensor in _all_tensors(model.graph):
        if tensor.data_location != _EXTERNAL:
            continue
        info = {e.key: e.value for e in tensor.external_data}
        location = info.get("location", "")
        where = f"tensor {tensor.name!r}"
        if not location:
            raise ModelError(f"{where}: external data without a location")
        if os.path.isabs(location):
            raise ModelError(f"{where}: external data location {location!r} is absolute; "
                             "it must be a path relative to the model's folder")
        path = os.path.realpath(os.path.join(base, location))
        if os.path.commonpath([path, base]) != base:
            raise ModelError(f"{where}: external data location {location!r} resolves outside "
                             f"the model's folder {base}")
        try:
            offset = int(info.get("offset", 0))
            length = int(info["length"]) if "length" in info else None
        except ValueError:
            raise ModelError(f"{where}: external data offset/length are not integers") from None
        try:
            size = os.path.getsize(path)
            if offset < 0 or offset > size or (length is not None and (length < 0 or offset + length > size)):
                raise ModelError(f"{where}: external data range offset={offset} length={length} "
                                 f"is outside {location!r} ({size} bytes)")
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read() if length is None else f.read(length)
        except OSError as exc:
            raise ModelError(f"{where}: cannot read external data {location!r}: {exc.strerror}") from None
        tensor.raw_data = data
        del tensor.external_data[:]
        tensor.data_location = onnx.TensorProto.DEFAULT


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
