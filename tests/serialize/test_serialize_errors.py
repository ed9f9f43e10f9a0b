# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Loading anything but an intact saved program raises FormatError, and says why."""

import json
import struct

import msgpack
import pytest

import graphkiln
from graphkiln import FormatError
from graphkiln.cli.common import EXAMPLE_MODEL
from graphkiln.serialize import Limits
from graphkiln.serialize import msgpack_container
from serialize_samples import every_kind_program


@pytest.fixture(scope="module")
def saved():
    program = graphkiln.parse_onnx(EXAMPLE_MODEL).compile("ref", optimize=True)
    return {fmt: graphkiln.save_buffer(program, fmt) for fmt in ("msgpack", "json")}


@pytest.fixture(scope="module")
def rich():
    program, _ = every_kind_program()
    return {fmt: graphkiln.save_buffer(program, fmt) for fmt in ("msgpack", "json")}


def edit_msgpack(data: bytes, change) -> bytes:
    """Decode the document, let `change` edit it, re-seal with valid lengths and CRCs."""
    document, section, _ = msgpack_container.split(data)
    doc = msgpack.unpackb(document, raw=False, unicode_errors="surrogatepass")
    change(doc)
    packed = msgpack.packb(doc, use_bin_type=True, unicode_errors="surrogatepass")
    return b"".join(msgpack_container.seal(packed, [bytes(section)]))


def edit_json(data: bytes, change) -> bytes:
    doc = json.loads(data)
    change(doc)
    return json.dumps(doc).encode()


def load_fails(data, *words, **kwargs) -> str:
    with pytest.raises(FormatError) as info:
        graphkiln.load_buffer(data, **kwargs)
    message = str(info.value)
    for word in words:
        assert word in message, message
    return message


def test_wrong_magic(saved, tmp_path):
    load_fails(b"GKILX" + saved["msgpack"][5:], "not a graphkiln saved program")
    load_fails(b"\x08\x07\x12\x00 an onnx model", "not a graphkiln saved program")
    load_fails(b"", "not a graphkiln saved program")
    load_fails(edit_json(saved["json"], lambda d: d.update(magic="other")), "not a graphkiln")
    load_fails(b'["a list"]', "not a graphkiln")
    (tmp_path / "model.gkp").write_bytes(b"PK\x03\x04 zip")
    with pytest.raises(FormatError):
        graphkiln.load(tmp_path / "model.gkp")


def test_newer_format_version(saved):
    newer = bytearray(saved["msgpack"])
    newest = graphkiln.serialize.FORMAT_VERSION
    struct.pack_into("<I", newer, 6, newest + 1)
    load_fails(bytes(newer), f"format version {newest + 1} is newer", "upgrade")
    load_fails(
        edit_json(saved["json"], lambda d: d.update(format_version=7)), "format version 7 is newer"
    )
    load_fails(edit_json(saved["json"], lambda d: d.update(format_version=0)), "does not exist")


@pytest.mark.parametrize("fmt", ["msgpack", "json"])
def test_unknown_target(saved, fmt):
    def to_npu(doc):
        doc["compiled"]["target"] = "npu"

    edit = edit_msgpack if fmt == "msgpack" else edit_json
    message = load_fails(edit(saved[fmt], to_npu), "'npu'", "lacks")
    assert "available: " in message and "ref" in message
    load_fails(edit(saved[fmt], lambda d: d["compiled"]["options"].update(fast=1)), "fast")


@pytest.mark.parametrize("fmt", ["msgpack", "json"])
def test_truncated_at_many_points(rich, fmt):
    data = rich[fmt]
    points = sorted(set(range(0, 80)) | set(range(0, len(data), max(1, len(data) // 400))))
    for size in points:
        with pytest.raises(FormatError):
            graphkiln.load_buffer(data[:size])


@pytest.mark.parametrize("fmt", ["msgpack", "json"])
def test_flipped_bytes_at_many_points(rich, fmt):
    """Every failure is a FormatError; in msgpack the header and document are covered by a
    CRC (always checked) and the tensor data by one checked with verify_data=True."""
    data = rich[fmt]
    document_end = (
        msgpack_container.HEADER_SIZE + struct.unpack_from("<Q", data, 10)[0]
        if fmt == "msgpack"
        else 0
    )
    loaded = 0
    for position in range(0, len(data), max(1, len(data) // 500)):
        damaged = bytearray(data)
        damaged[position] ^= 0x10
        try:
            graphkiln.load_buffer(bytes(damaged))
            loaded += 1
            assert position >= document_end, f"a flip at {position} inside the document loaded"
        except FormatError:
            pass
        if fmt == "msgpack":
            with pytest.raises(FormatError):
                graphkiln.load_buffer(bytes(damaged), verify_data=True)
    assert fmt == "json" or loaded > 0  # flips in tensor data load without verify_data


def test_oversize_declared_shapes(saved):
    def huge(doc):
        doc["tensors"][0]["shape"] = [1 << 40, 1 << 40]

    load_fails(edit_msgpack(saved["msgpack"], huge), "tensors[0].shape")
    load_fails(edit_json(saved["json"], huge), "tensors[0].shape")

    def negative(doc):
        doc["tensors"][0]["shape"] = [-1, 16]

    load_fails(edit_msgpack(saved["msgpack"], negative), "outside")

    def mismatch(doc):
        doc["tensors"][0]["shape"] = [3]

    load_fails(edit_msgpack(saved["msgpack"], mismatch), "bytes for shape")
    load_fails(edit_json(saved["json"], mismatch), "tensors[0]")
    load_fails(saved["msgpack"], "Limits.max_total_bytes", limits=Limits(max_total_bytes=1000))
    load_fails(saved["json"], "over the limit", limits=Limits(max_total_bytes=1000))

    def past_the_end(doc):
        record = doc["tensors"][0]
        record["offset"] = 1 << 30

    load_fails(edit_msgpack(saved["msgpack"], past_the_end), "tensors[0].offset")


def test_bad_references_and_schema(saved):
    def forward_reference(doc):
        doc["graph"]["nodes"][-1]["inputs"][0] = 10_000

    load_fails(edit_msgpack(saved["msgpack"], forward_reference), "not defined before")

    def self_cycle(doc):
        node = doc["graph"]["nodes"][-1]
        node["inputs"][0] = node["outputs"][0]["id"]

    load_fails(edit_msgpack(saved["msgpack"], self_cycle), "not defined before")

    def wrong_id(doc):
        doc["graph"]["nodes"][0]["outputs"][0]["id"] += 5

    load_fails(edit_json(saved["json"], wrong_id), ".id")

    def unknown_op(doc):
        doc["graph"]["nodes"][-1]["op"] = "Teleport"

    load_fails(edit_msgpack(saved["msgpack"], unknown_op), "unknown op 'Teleport'")

    def wrong_kind(doc):
        node = next(n for n in doc["graph"]["nodes"] if n["op"] == "Conv")
        name, _, value = next(a for a in node["attrs"] if a[1] == "ints")
        node["attrs"] = [[name, "floats", value]]

    load_fails(edit_msgpack(saved["msgpack"], wrong_kind), "is ints")

    def scope_escape(doc):  # a graph output read from inside a subgraph of another node
        doc["graph"]["outputs"] = [10_000]

    load_fails(edit_json(saved["json"], scope_escape), "outputs[0]")


def test_subgraph_values_are_not_visible_outside(rich):
    def read_branch_value(doc):
        nodes = doc["graph"]["nodes"]
        branch = next(n for n in nodes if n["op"] == "If")
        inner = branch["attrs"][0][2]["nodes"][0]["outputs"][0]["id"]
        doc["graph"]["outputs"][-1] = inner

    load_fails(edit_msgpack(rich["msgpack"], read_branch_value), "not visible")


def test_damaged_json_and_strings(rich):
    load_fails(rich["json"][:-2] + b"x}", "does not parse")
    load_fails(b'{"magic": "graphkiln", "format_version": 1, "x": NaN}', "does not parse")
    load_fails(
        b'{"magic": "graphkiln", "format_version": 1, "graph": '
        + b"[" * 100000
        + b"]" * 100000
        + b"}"
    )

    def bad_bool(doc):
        record = next(t for t in doc["tensors"] if t["dtype"] == "bool")
        record["values"] = [1, 0, 1]

    load_fails(edit_json(rich["json"], bad_bool), "true or false")

    def bad_int4(doc):
        record = next(t for t in doc["tensors"] if t["dtype"] == "i4")
        record["values"][0] = 9

    load_fails(edit_json(rich["json"], bad_int4), "outside")


@pytest.mark.parametrize("fmt", ["msgpack", "json"])
def test_gpu_program_for_another_architecture(saved, fmt, monkeypatch):
    """A program compiled for one GPU ISA refuses to load where no GPU has it (on a build
    with GPU code: a CPU-only build lacks the gpu target, test_cpu_only_build.py)."""
    try:
        from graphkiln._native import load_core

        core = load_core()
    except ImportError:
        pytest.skip("the C++ core is not built")
    monkeypatch.setattr(
        core,
        "build_info",
        lambda: {
            "version": "0.1.0",
            "compiler": "gcc",
            "gpu_platform": "nvidia",
            "gpu_targets": ["sm_90"],
            "gpu_toolkit": "CUDA 13.0",
        },
    )
    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "sm_90")

    def to_gfx90a(doc):
        doc["compiled"]["target"] = "gpu"
        doc["compiled"]["options"] = {}
        doc["compiled"]["gpu_arch"] = "gfx90a"

    edit = edit_msgpack if fmt == "msgpack" else edit_json
    message = load_fails(edit(saved[fmt], to_gfx90a), "gfx90a", "sm_90")
    assert "compile the model again" in message.lower()
    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "none")
    load_fails(edit(saved[fmt], to_gfx90a), "gfx90a", "none")
