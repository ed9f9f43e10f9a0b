# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The protocol's tensor codec on its own: every datatype through JSON and binary forms and
back, BYTES elements, and the refusals (as ProtocolError with a status) of bodies no
server should try to decode."""

import gzip
import json

import numpy as np
import pytest

from graphkiln.serving.codec import (
    DATATYPES,
    ProtocolError,
    decode_inputs,
    encode_response,
    read_body,
    requested_outputs,
    split_binary,
)

RNG = np.random.default_rng(11)


def _sample(datatype: str) -> np.ndarray:
    shape = (2, 3)
    if datatype == "BOOL":
        return RNG.random(shape) > 0.5
    if datatype == "BYTES":
        return np.array([["a", "bé", ""], ["xyz", "0", "long text"]], dtype=object)
    dtype = DATATYPES[datatype]
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return RNG.standard_normal(shape).astype(dtype)


def _roundtrip(datatype: str, value: np.ndarray, binary: bool) -> np.ndarray:
    body, headers = encode_response({"model_name": "m"}, [("y", value, binary)])
    request, rest = split_binary(body, headers.get("inference-header-content-length"))
    request["inputs"] = request.pop("outputs")
    return decode_inputs(request, rest)["y"]


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
@pytest.mark.parametrize("datatype", sorted(DATATYPES))
def test_every_datatype_round_trips(datatype, binary):
    value = _sample(datatype)
    got = _roundtrip(datatype, value, binary)
    assert got.dtype == value.dtype and got.shape == value.shape
    if datatype == "BYTES":
        assert got.tolist() == value.tolist()
    else:
        np.testing.assert_array_equal(
            got.astype(np.float64) if datatype == "BF16" else got,
            value.astype(np.float64) if datatype == "BF16" else value,
        )
    assert got.flags.writeable


def test_nested_json_data_is_row_major():
    request = {
        "inputs": [{"name": "x", "datatype": "INT32", "shape": [2, 2], "data": [[1, 2], [3, 4]]}]
    }
    x = decode_inputs(request, memoryview(b""))["x"]
    np.testing.assert_array_equal(x, np.array([[1, 2], [3, 4]], np.int32))


@pytest.mark.parametrize(
    "request_json, message",
    [
        (
            {"inputs": [{"name": "x", "datatype": "INT8", "shape": [1], "data": [300]}]},
            "outside INT8's range [-128, 127]",
        ),
        (
            {"inputs": [{"name": "x", "datatype": "BOOL", "shape": [1], "data": [1]}]},
            "BOOL data must be booleans",
        ),
        (
            {"inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 2], "data": [[1, 2], [3]]}]},
            "not a rectangular list",
        ),
        (
            {"inputs": [{"name": "x", "datatype": "FP32", "shape": [2**32, 2**32], "data": []}]},
            "0 data elements for shape",
        ),
        (
            {
                "inputs": [
                    {"name": "x", "datatype": "FP32", "shape": [1], "data": [1]},
                    {"name": "x", "datatype": "FP32", "shape": [1], "data": [1]},
                ]
            },
            "input 'x' is given twice",
        ),
        ({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1]}]}, 'neither "data" nor'),
        (
            {"inputs": [{"name": "x", "datatype": "BYTES", "shape": [1], "data": [1]}]},
            "BYTES data must be strings",
        ),
    ],
)
def test_bad_json_tensors(request_json, message):
    with pytest.raises(ProtocolError, match=message.replace("[", r"\[").replace("(", r"\(")) as e:
        decode_inputs(request_json, memoryview(b""))
    assert e.value.status == 400


def test_bad_binary_tensors():
    head = {
        "inputs": [
            {"name": "s", "datatype": "BYTES", "shape": [2], "parameters": {"binary_data_size": 9}}
        ]
    }
    blob = (3).to_bytes(4, "little") + b"abc" + b"\x05\x00"  # the second length cut short
    with pytest.raises(ProtocolError, match="ends inside an element's 4-byte length"):
        decode_inputs(head, memoryview(blob))
    head["inputs"][0]["parameters"]["binary_data_size"] = 7
    with pytest.raises(ProtocolError, match="1 BYTES elements for shape \\[2\\]"):
        decode_inputs(head, memoryview(blob[:7]))
    head["inputs"][0]["shape"] = [1]
    assert decode_inputs(head, memoryview(blob[:7]))["s"].tolist() == ["abc"]
    with pytest.raises(ProtocolError, match="2 binary bytes after the last binary input"):
        decode_inputs(head, memoryview(blob[:7] + b"\0\0"))


def test_bodies_refused_before_decoding():
    with pytest.raises(ProtocolError, match="malformed JSON") as e:
        split_binary(b"[" * 100_000, None)  # too deep for the JSON parser
    assert e.value.status == 400
    with pytest.raises(ProtocolError) as e:
        read_body(b"x" * 11, None, limit=10)
    assert e.value.status == 413
    with pytest.raises(ProtocolError, match="inflates to more than 100") as e:
        read_body(gzip.compress(b"x" * 101), "gzip", limit=100)  # ~25 bytes on the wire
    assert e.value.status == 413
    assert read_body(gzip.compress(b"x" * 100), "gzip", limit=100) == b"x" * 100
    with pytest.raises(ProtocolError) as e:
        read_body(b"abc", "br", limit=10)
    assert e.value.status == 415
    with pytest.raises(ProtocolError, match="does not inflate"):
        read_body(b"not gzip", "gzip", limit=10)


def test_requested_outputs_binary_flags():
    names = ["a", "b"]
    assert requested_outputs({}, names) == [("a", False), ("b", False)]
    assert requested_outputs({"parameters": {"binary_data_output": True}}, names) == [
        ("a", True),
        ("b", True),
    ]
    assert requested_outputs(
        {"outputs": [{"name": "b", "parameters": {"binary_data": True}}]}, names
    ) == [("b", True)]


def test_binary_response_layout():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([True, False])
    body, headers = encode_response(
        {"model_name": "m", "id": "7"}, [("a", a, True), ("b", b, False)]
    )
    n = int(headers["inference-header-content-length"])
    head = json.loads(body[:n])
    assert head["id"] == "7"
    assert head["outputs"][0] == {
        "name": "a",
        "datatype": "FP32",
        "shape": [2, 3],
        "parameters": {"binary_data_size": 24},
    }
    assert head["outputs"][1] == {
        "name": "b",
        "datatype": "BOOL",
        "shape": [2],
        "data": [True, False],
    }
    np.testing.assert_array_equal(np.frombuffer(body[n:], np.float32).reshape(2, 3), a)
    with pytest.raises(ProtocolError, match="no datatype for"):
        encode_response({}, [("c", np.zeros(2, np.complex64), False)])
