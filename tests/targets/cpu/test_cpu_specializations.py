# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Specializations of one cpu program (issue 20): packed weights shared between the plans
of other input shapes (never packed again), the plan cache's size (option and variable),
plans built ahead with `shapes=[...]` and saved / loaded with their packed weights stored
once, ready to run without lowering; outputs checked against ref."""

from __future__ import annotations

import subprocess
import sys

import msgpack
import numpy as np
import pytest

import graphkiln as gk
from concurrency_models import bert_feeds, bert_like, resnet_feeds, resnet_like
from graphkiln.serialize import msgpack_container, plan_secret
from graphkiln.targets.cpu import segments as cpu_segments


@pytest.fixture(autouse=True)
def own_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    plan_secret._cache.clear()
    yield
    plan_secret._cache.clear()


def small_resnet() -> bytes:
    return resnet_like(seed=4, batch="N", widths=(8, 16, 16)).SerializeToString()


def program(data: bytes, target="cpu", **options):
    return gk.parse_onnx_buffer(data, default_dim=None).compile(target, **options)


def packed(prog) -> list:
    """(data address, bytes) of every packed constant of every plan."""
    return [
        (a.ctypes.data, a.nbytes)
        for segments in prog._executable._plans.values()
        for s in segments
        for _, items in s.executor.packed_constants()
        for _, a in items
    ]


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("kind", ["resnet", "bert"])
def test_other_shapes_share_the_packed_weights(kind):
    data = small_resnet() if kind == "resnet" else bert_like(seed=4, batch="N").SerializeToString()
    feeds_of = resnet_feeds if kind == "resnet" else bert_feeds
    prog, ref = program(data), program(data, "ref")
    for batch in (1, 2, 4):
        feeds = feeds_of(batch + 10, batch=batch)
        close(prog.run(feeds)[0], ref.run(feeds)[0])
    items = packed(prog)
    assert prog.stats()["plan"]["plans"] == 3 and len(items) >= 3 * 4
    # the three plans point at the same bytes: one packing per weight, not one per shape
    assert len({address for address, _ in items}) == len(items) // 3
    later = [s for key, segs in prog._executable._plans.items() if key[0][0][0] != 1 for s in segs]
    assert all(s.executor.reused_packings == len(items) // 3 for s in later)


def test_packings_are_offered_only_for_the_same_constant_and_view():
    """Gemm with transB of a square weight and MatMul of the same weight pack the same
    bytes differently: a packing offered to the other must not be taken."""
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(3).standard_normal((16, 16)).astype(np.float32)
    g = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["a"]),
            helper.make_node("Gemm", ["a", "w"], ["y"], transB=1),
        ],
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16])],
        [numpy_helper.from_array(w, "w")],
    )
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    prog, ref = program(data), program(data, "ref")
    for n in (3, 5):
        x = np.random.default_rng(n).standard_normal((n, 16)).astype(np.float32)
        close(prog.run({"x": x})[0], ref.run({"x": x})[0])


def test_plan_cache_size_option_and_variable(monkeypatch):
    data = small_resnet()
    prog = program(data, plan_cache_size=2)
    for batch in (1, 2, 3, 1):
        prog.run(resnet_feeds(batch, batch=batch))
    keys = [key[0][0][0] for key in prog._executable._plans]
    assert keys == [3, 1]  # least recently used (batch 2) dropped
    monkeypatch.setenv("GRAPHKILN_PLAN_CACHE_SIZE", "1")
    prog = program(data)
    prog.run(resnet_feeds(1, batch=1))
    prog.run(resnet_feeds(2, batch=2))
    assert prog.stats()["plan"]["plans"] == 1
    with pytest.raises(ValueError, match="GRAPHKILN_PLAN_CACHE_SIZE='lots'"):
        monkeypatch.setenv("GRAPHKILN_PLAN_CACHE_SIZE", "lots")
        program(data)
    monkeypatch.delenv("GRAPHKILN_PLAN_CACHE_SIZE")
    with pytest.raises(ValueError, match="plan_cache_size=0: expected a positive integer"):
        program(data, plan_cache_size=0)


def test_shapes_are_checked_against_the_inputs():
    data = small_resnet()
    for shapes, words in [
        ([{"x": [1, 3, 32]}], "rank 4"),
        ([{"x": [1, 4, 32, 32]}], "dimension 1 is static 3"),
        ([{"y": [1, 3, 32, 32]}], "unknown input"),
        ([{}], "no shape for input 'x'"),
        ([{"x": "1,3,32,32"}], "not a list of sizes"),
    ]:
        with pytest.raises(ValueError, match=words):
            program(data, shapes=shapes)
    from onnx import TensorProto, helper

    g = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["y"])],
        "m",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 4]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 4]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
    )
    add = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    with pytest.raises(ValueError, match="dimension 0 is N, which is 2 in input 'a', got 3"):
        program(add, shapes=[{"a": [2, 4], "b": [3, 4]}])


def count_lowerings(monkeypatch) -> list:
    calls = []
    original = cpu_segments.PlanSegment.__init__

    def counting(self, *args, **kwargs):
        calls.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(cpu_segments.PlanSegment, "__init__", counting)
    return calls


@pytest.mark.parametrize("fmt", ["msgpack", "json"])
def test_shapes_built_ahead_are_saved_and_loaded_without_lowering(fmt, monkeypatch):
    data = small_resnet()
    calls = count_lowerings(monkeypatch)
    prog = program(data, shapes=[{"x": [1, 3, 32, 32]}, {"x": [3, 3, 32, 32]}])
    assert len(calls) == 2 and prog.stats()["plan"]["plans"] == 2  # built while compiling
    ref = program(data, "ref")
    feeds = {b: resnet_feeds(20 + b, batch=b) for b in (1, 2, 3)}
    expected = {b: prog.run(feeds[b]) for b in (1, 3)}
    assert len(calls) == 2  # those runs were hits
    for b in (1, 3):
        close(expected[b][0], ref.run(feeds[b])[0])
    saved = gk.save_buffer(prog, fmt)
    if fmt == "msgpack":
        assert saved[6:10] == (3).to_bytes(4, "little")  # format version 3: specializations
        doc = msgpack.unpackb(bytes(msgpack_container.split(saved)[0]), raw=False)
        plans = doc["compiled"]["cpu_plan"]["plans"]
        refs = [
            [p[1] for step in plan["segments"][0]["steps"] for p in step.get("packed", [])]
            for plan in plans
        ]
        assert len(refs[0]) >= 4 and refs[0] == refs[1]  # packed weights stored once
        assert plans[0]["segments"][0]["constants"] == plans[1]["segments"][0]["constants"]
    del calls[:]
    loaded = gk.load_buffer(saved)
    assert not calls and loaded._executable.plan_source == "saved"
    for b in (1, 3):  # bit-identical at each saved shape, no lowering
        got = loaded.run(feeds[b])
        assert all(np.array_equal(x, y) for x, y in zip(got, expected[b]))
    assert not calls
    close(loaded.run(feeds[2])[0], ref.run(feeds[2])[0])  # a new shape still specializes
    assert len(calls) == 1 and loaded.stats()["plan"]["plans"] == 3
    # ... taking the loaded packed weights as they are
    new = [s for key, segs in loaded._executable._plans.items() if key[0][0][0] == 2 for s in segs]
    assert new[0].executor.reused_packings == len(refs[0]) if fmt == "msgpack" else True
    again = gk.load_buffer(gk.save_buffer(loaded, fmt))
    assert again.stats()["plan"]["plans"] == 3 and again._executable.plan_source == "saved"
    assert all(np.array_equal(x, y) for x, y in zip(again.run(feeds[3]), expected[3]))


def test_plans_declared_as_version_2_are_damaged():
    prog = program(small_resnet(), shapes=[{"x": [1, 3, 32, 32]}])
    document, section, _ = msgpack_container.split(gk.save_buffer(prog))
    old = b"".join(msgpack_container.seal(bytes(document), [bytes(section)], 2))
    with pytest.raises(gk.FormatError, match="declares version 2 but holds fields of version 3"):
        gk.load_buffer(old)


def test_hit_path_costs_little():
    """A run of a known shape: the Python side of Program.run (feed checks, plan lookup)
    over the executor's own run, on a one-op model; generous bound for a shared CI core."""
    import time

    from onnx import TensorProto, helper

    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
    )
    prog = program(
        helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    )
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_array_equal(prog.run({"x": x})[0], np.maximum(x, 0))
    (segment,) = next(iter(prog._executable._plans.values()))

    def best(f, n=500):
        times = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(n):
                f()
            times.append((time.perf_counter() - start) / n)
        return min(times)

    overhead = best(lambda: prog.run({"x": x})) - best(lambda: segment.executor.run([x]))
    assert overhead < 50e-6, f"{overhead * 1e6:.1f} us"


def test_cli_compile_shapes(tmp_path):
    model = tmp_path / "r.onnx"
    model.write_bytes(small_resnet())
    out = tmp_path / "r.gkp"

    def run(*a):
        return subprocess.run(
            [sys.executable, "-m", "graphkiln", *a], capture_output=True, text=True
        )

    done = run(
        "compile",
        str(model),
        "--target",
        "cpu",
        "--shapes",
        "x=1,3,32,32;x=2,3,32,32",
        "-o",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    loaded = gk.load(out)
    assert loaded._executable.plan_source == "saved" and loaded.stats()["plan"]["plans"] == 2
    bad = run("compile", str(model), "--target", "cpu", "--shapes", "x=1,4,32,32")
    assert bad.returncode != 0 and "dimension 1 is static 3" in bad.stderr
    bad = run("compile", str(model), "--target", "cpu", "--shapes", "x:1")
    assert bad.returncode != 0 and "not NAME=D0,D1" in bad.stderr
