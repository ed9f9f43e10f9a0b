# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Tensors of the Open Inference Protocol (v2, as KServe and Triton speak it) to and from
numpy: the JSON form (`"data"`: a flat or nested list in row-major order) and the binary
tensor extension (a JSON header of `Inference-Header-Content-Length` bytes, then each
binary tensor's raw little-endian bytes in input order, sized by its `binary_data_size`
parameter; BYTES elements as a 4-byte little-endian length and the bytes).

Every mistake in a request is a ProtocolError carrying the HTTP status and a message that
names the input and what was expected."""

from __future__ import annotations

import json
import math
import zlib

import ml_dtypes
import numpy as np

from ..errors import GraphkilnError

# protocol datatype -> numpy dtype (BYTES: numpy object arrays of str, graphkiln's str type)
DATATYPES = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "BYTES": np.dtype(object),
}
_BY_NUMPY = {dtype: name for name, dtype in DATATYPES.items()}


class ProtocolError(GraphkilnError):
    """A request the server refuses (a GraphkilnError, like every error graphkiln raises):
    `status` is the HTTP status (4xx for the client's
    mistakes), the message says what was wrong; answered as {"error": message}."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def datatype_of(dtype) -> str | None:
    """The protocol datatype of a numpy dtype (str / bytes / object arrays are BYTES), or
    None where the protocol has none (complex, float8, 4-bit and 2-bit types)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "OUS":
        return "BYTES"
    return _BY_NUMPY.get(dtype)


def read_body(body: bytes, content_encoding: str | None, limit: int) -> bytes:
    """The request body, inflated where it came gzip- or deflate-encoded (as tritonclient
    may send it), refused (413) when it, or what it inflates to, exceeds `limit` bytes."""
    if len(body) > limit:
        raise ProtocolError(
            413,
            f"the request body is {len(body)} bytes; this server "
            f"accepts at most {limit} (--max-body-mb)",
        )
    encoding = (content_encoding or "identity").strip().lower()
    if encoding == "identity":
        return body
    if encoding not in ("gzip", "deflate"):
        raise ProtocolError(
            415, f"Content-Encoding {content_encoding!r} is not supported (gzip, deflate or none)"
        )
    inflater = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise ProtocolError(400, f"the {encoding} request body does not inflate: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise ProtocolError(
            413,
            f"the {encoding} request body inflates to more than {limit} "
            "bytes, the most this server accepts (--max-body-mb)",
        )
    return out


def split_binary(body: bytes, header_length: str | None) -> tuple[dict, memoryview]:
    """The request's JSON object and its binary part. `header_length` is the
    Inference-Header-Content-Length header (None: the whole body is JSON)."""
    if header_length is None:
        head, rest = body, memoryview(b"")
    else:
        try:
            n = int(header_length)
        except ValueError:
            n = -1
        if not 0 <= n <= len(body):
            raise ProtocolError(
                400,
                f"Inference-Header-Content-Length is {header_length!r}; "
                f"expected an integer from 0 to the body's {len(body)} "
                "bytes",
            )
        view = memoryview(body)
        head, rest = view[:n].tobytes(), view[n:]
    try:
        request = json.loads(head)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(400, f"malformed JSON in the request: {exc}") from None
    if not isinstance(request, dict):
        raise ProtocolError(
            400,
            'the request must be a JSON object with an "inputs" list, '
            f"got a JSON {type(request).__name__}",
        )
    return request, rest


def _shape_of(name: str, spec) -> list[int]:
    if not isinstance(spec, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in spec
    ):
        raise ProtocolError(
            400, f'input {name!r}: "shape" must be a list of integers >= 0, got {spec!r}'
        )
    return spec


def _from_binary(name: str, datatype: str, shape: list[int], raw: memoryview) -> np.ndarray:
    count = math.prod(shape)
    if datatype == "BYTES":
        items, at = [], 0
        while at < len(raw):
            if at + 4 > len(raw):
                raise ProtocolError(
                    400, f"input {name!r}: BYTES data ends inside an element's 4-byte length"
                )
            size = int.from_bytes(raw[at : at + 4], "little")
            if at + 4 + size > len(raw):
                raise ProtocolError(
                    400,
                    f"input {name!r}: a BYTES element of {size} bytes runs past binary_data_size",
                )
            items.append(bytes(raw[at + 4 : at + 4 + size]).decode("utf-8", "replace"))
            at += 4 + size
        if len(items) != count:
            raise ProtocolError(
                400,
                f"input {name!r}: {len(items)} BYTES elements for shape {shape} ({count} elements)",
            )
        return np.array(items, dtype=object).reshape(shape)
    dtype = DATATYPES[datatype]
    if len(raw) != count * dtype.itemsize:
        raise ProtocolError(
            400,
            f"input {name!r}: binary_data_size is {len(raw)} bytes; shape "
            f"{shape} of {datatype} needs {count * dtype.itemsize}",
        )
    # a copy: the array outlives the request body and must be writable
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)


def _from_json(name: str, datatype: str, shape: list[int], data) -> np.ndarray:
    count = math.prod(shape)
    dtype = DATATYPES[datatype]
    if datatype == "BYTES":
        flat = np.array(data, dtype=object).reshape(-1) if data != [] else np.array([], object)
        if not all(isinstance(x, str) for x in flat):
            raise ProtocolError(400, f"input {name!r}: BYTES data must be strings")
    else:
        try:
            values = np.asarray(data)
        except ValueError as exc:  # ragged nested lists
            raise ProtocolError(
                400, f'input {name!r}: "data" is not a rectangular list of numbers ({exc})'
            ) from None
        kind = values.dtype.kind if values.size else dtype.kind
        allowed = {"b": "b", "i": "iu", "u": "iu", "f": "iuf", "V": "iuf"}[dtype.kind]
        if kind not in allowed:
            what = {"b": "booleans", "i": "integers", "u": "integers"}.get(dtype.kind, "numbers")
            raise ProtocolError(
                400,
                f"input {name!r}: {datatype} data must be {what}, got "
                f"{values.dtype.name if kind != 'O' else 'mixed'} values",
            )
        if dtype.kind in "iu" and values.size:
            info = np.iinfo(dtype)
            if values.min() < info.min or values.max() > info.max:
                raise ProtocolError(
                    400,
                    f"input {name!r}: a value is outside {datatype}'s "
                    f"range [{info.min}, {info.max}]",
                )
        flat = values.astype(dtype).reshape(-1)
    if flat.size != count:
        raise ProtocolError(
            400, f"input {name!r}: {flat.size} data elements for shape {shape} ({count} elements)"
        )
    return flat.reshape(shape)


def decode_inputs(request: dict, binary: memoryview) -> dict[str, np.ndarray]:
    """The request's "inputs" as {name: array}, each of the datatype and shape it declares
    (checking them against the model is `ServedModel.check_feeds`'s job)."""
    inputs = request.get("inputs")
    if not isinstance(inputs, list) or not inputs:
        raise ProtocolError(
            400,
            'the request has no "inputs" list (a list of {"name", '
            '"datatype", "shape", "data"} objects)',
        )
    feeds: dict[str, np.ndarray] = {}
    at = 0
    for i, tensor in enumerate(inputs):
        if not isinstance(tensor, dict) or not isinstance(tensor.get("name"), str):
            raise ProtocolError(400, f'inputs[{i}] must be an object with a string "name"')
        name = tensor["name"]
        if name in feeds:
            raise ProtocolError(400, f"input {name!r} is given twice")
        datatype = tensor.get("datatype")
        if datatype not in DATATYPES:
            raise ProtocolError(
                400,
                f"input {name!r}: unknown datatype {datatype!r} (one of {', '.join(DATATYPES)})",
            )
        shape = _shape_of(name, tensor.get("shape"))
        params = tensor.get("parameters") or {}
        if not isinstance(params, dict):
            raise ProtocolError(400, f'input {name!r}: "parameters" must be an object')
        size = params.get("binary_data_size")
        if size is not None:
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise ProtocolError(
                    400, f"input {name!r}: binary_data_size must be an integer >= 0, got {size!r}"
                )
            if at + size > len(binary):
                raise ProtocolError(
                    400,
                    f"input {name!r}: binary_data_size {size} runs past the "
                    f"body's {len(binary)} binary bytes (at offset {at})",
                )
            feeds[name] = _from_binary(name, datatype, shape, binary[at : at + size])
            at += size
        elif "data" in tensor:
            feeds[name] = _from_json(name, datatype, shape, tensor["data"])
        else:
            raise ProtocolError(
                400, f'input {name!r} has neither "data" nor a binary_data_size parameter'
            )
    if at != len(binary):
        raise ProtocolError(
            400,
            f"{len(binary) - at} binary bytes after the last binary input "
            "(binary_data_size of the inputs and the body disagree)",
        )
    return feeds


def requested_outputs(request: dict, names: list[str]) -> list[tuple[str, bool]]:
    """(output name, as binary) for each output to return: those the request's "outputs"
    names (all, in the model's order, when it names none). Binary where the output's
    `binary_data` parameter says so, else where the request's `binary_data_output` does."""
    params = request.get("parameters") or {}
    if not isinstance(params, dict):
        raise ProtocolError(400, 'the request\'s "parameters" must be an object')
    default_binary = bool(params.get("binary_data_output", False))
    wanted = request.get("outputs")
    if wanted is None:
        return [(n, default_binary) for n in names]
    if not isinstance(wanted, list):
        raise ProtocolError(400, '"outputs" must be a list of {"name": ...} objects')
    out = []
    for i, item in enumerate(wanted):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ProtocolError(400, f'outputs[{i}] must be an object with a string "name"')
        if item["name"] not in names:
            raise ProtocolError(
                400, f"unknown output {item['name']!r}; the model's outputs are {names}"
            )
        p = item.get("parameters") or {}
        out.append(
            (
                item["name"],
                bool(p.get("binary_data", default_binary))
                if isinstance(p, dict)
                else default_binary,
            )
        )
    return out


def _bytes_elements(array: np.ndarray) -> bytes:
    parts = []
    for x in array.reshape(-1):
        b = x if isinstance(x, bytes) else str(x).encode("utf-8")
        parts.append(len(b).to_bytes(4, "little"))
        parts.append(b)
    return b"".join(parts)


def encode_response(
    header: dict, outputs: list[tuple[str, np.ndarray, bool]]
) -> tuple[bytes, dict[str, str]]:
    """The response body and its extra headers: `header` (model_name, model_version, id)
    with an "outputs" list; binary outputs follow the JSON, whose length is then sent as
    Inference-Header-Content-Length."""
    tensors, blobs = [], []
    for name, value, binary in outputs:
        value = np.asarray(value)
        datatype = datatype_of(value.dtype)
        if datatype is None:
            raise ProtocolError(
                500,
                f"output {name!r} is of dtype {value.dtype}, which the "
                "protocol has no datatype for",
            )
        entry = {"name": name, "datatype": datatype, "shape": list(value.shape)}
        if binary:
            raw = (
                _bytes_elements(value)
                if datatype == "BYTES"
                else np.ascontiguousarray(value, value.dtype.newbyteorder("<")).tobytes()
            )
            entry["parameters"] = {"binary_data_size": len(raw)}
            blobs.append(raw)
        elif datatype == "BYTES":
            entry["data"] = [
                x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x)
                for x in value.reshape(-1)
            ]
        elif datatype in ("FP16", "BF16"):
            entry["data"] = value.astype(np.float32).reshape(-1).tolist()
        else:
            entry["data"] = value.reshape(-1).tolist()
        tensors.append(entry)
    head = json.dumps({**header, "outputs": tensors}, allow_nan=True).encode()
    if not blobs:
        return head, {"content-type": "application/json"}
    return b"".join([head, *blobs]), {
        "content-type": "application/octet-stream",
        "inference-header-content-length": str(len(head)),
    }
