# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The gpu target's `shapes=[...]` (issue 20): the listed plans built while compiling, the
entries checked before any device is asked for, programs with plans keyed by parameter
values refusing it, and a saved program keeping the shapes of its plans ("gpu_plans",
serialize/gpu_plan.py) that loading checks without a device and builds again. Without a
device: plans are the numpy model of the kernels (plan_emulator.py); outputs against ref."""

from __future__ import annotations

import json

import msgpack
import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln as gk
from concurrency_models import resnet_feeds, resnet_like
from graphkiln.serialize import msgpack_container
from graphkiln.serialize.gpu_plan import read_gpu_plans
from graphkiln.serialize.limits import DEFAULT_LIMITS
from graphkiln.targets.gpu.target import GpuTarget
from gpu_testing import EmulatedPlan

SIZE = 16


def shape(batch: int) -> tuple:
    return ((batch, 3, SIZE, SIZE),)


@pytest.fixture
def gpu_builds(monkeypatch) -> list:
    """An emulated device: the gpu target compiles here; each plan built is recorded as
    its graph's input shapes."""
    import graphkiln.device as device
    from graphkiln.targets import registry
    from graphkiln.targets.gpu import target as gpu_target

    builds: list = []

    def plan(g, builtin_blas, *args, **kwargs):
        builds.append(tuple(tuple(v.type.dims) for v in g.inputs))
        return EmulatedPlan(g, builtin_blas, *args, **kwargs)

    monkeypatch.setattr(device, "require_gpu", lambda: type("V", (), {"usable": []})())
    monkeypatch.setattr(registry, "gpu_code_built", lambda: True)
    monkeypatch.setattr(gpu_target, "GpuPlan", plan)
    return builds


def model(batch="N") -> bytes:
    return resnet_like(seed=5, batch=batch, widths=(4, 8, 8), size=SIZE).SerializeToString()


def program(data: bytes, target="gpu", **options):
    return gk.parse_onnx_buffer(data, default_dim=None).compile(target, **options)


def feeds(batch: int) -> dict:
    return resnet_feeds(30 + batch, batch=batch, size=SIZE)  # seeded random, not zeros


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want).max()))


def test_shapes_is_a_gpu_option():
    assert "shapes" in GpuTarget.options and "rebuilt on load" in GpuTarget.options["shapes"]


def test_listed_plans_are_built_while_compiling(gpu_builds):
    data = model()
    prog = program(data, shapes=[{"x": [1, 3, SIZE, SIZE]}, {"x": [3, 3, SIZE, SIZE]}])
    assert gpu_builds == [shape(1), shape(3)]  # exactly those, in order
    assert len(prog._executable._plans) == 2
    ref = program(data, "ref")
    for batch in (1, 3):
        close(prog.run(feeds(batch))[0], ref.run(feeds(batch))[0])
    assert gpu_builds == [shape(1), shape(3)]  # those runs were hits
    close(prog.run(feeds(2))[0], ref.run(feeds(2))[0])  # another shape: built on first use
    assert gpu_builds[2:] == [shape(2)]


def test_an_entry_of_the_static_shapes_builds_once(gpu_builds):
    prog = program(model(batch=1), shapes=[{"x": [1, 3, SIZE, SIZE]}, {}])
    assert gpu_builds == [shape(1)] and len(prog._executable._plans) == 1
    close(prog.run(feeds(1))[0], program(model(batch=1), "ref").run(feeds(1))[0])


def _add_model() -> bytes:
    g = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["y"])],
        "m",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 4]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 4]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.parametrize(
    "shapes,words",
    [
        ([{"x": [1, 3, SIZE]}], "shapes[0]: input 'x' has rank 4"),
        (
            [{"x": [1, 3, SIZE, SIZE]}, {"x": [1, 4, SIZE, SIZE]}],
            "shapes[1]: input 'x': dimension 1 is static 3",
        ),
        ([{"y": [1, 3, SIZE, SIZE]}], "shapes[0]: unknown input(s) ['y']"),
        ([{}], "shapes[0]: no shape for input 'x'"),
        ([{"x": [1, -3, SIZE, SIZE]}], "not a list of sizes >= 0"),
        ("x=1,3,16,16", "expected a list of"),
    ],
)
def test_a_bad_entry_is_named_before_any_device_is_asked_for(monkeypatch, shapes, words):
    from graphkiln.targets import registry

    monkeypatch.setattr(registry, "gpu_code_built", lambda: True)  # no device here
    with pytest.raises(ValueError) as info:
        program(model(), shapes=shapes)
    assert words in str(info.value)


def test_a_symbol_is_one_size_across_inputs(gpu_builds):
    with pytest.raises(ValueError, match="dimension 0 is N, which is 2 in input 'a', got 3"):
        program(_add_model(), shapes=[{"a": [2, 4], "b": [3, 4]}])
    prog = program(_add_model(), shapes=[{"a": [2, 4], "b": [2, 4]}])
    assert gpu_builds == [((2, 4), (2, 4))]
    rng = np.random.default_rng(7)
    a, b = (rng.standard_normal((2, 4)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(prog.run({"a": a, "b": b})[0], a + b, rtol=1e-6)
    assert len(gpu_builds) == 1


def _reshape_model() -> bytes:
    """y = Reshape(x, shape): plans keyed by the value of `shape` (a kernel parameter)."""
    g = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        "m",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_plans_keyed_by_parameter_values_refuse_shapes(gpu_builds):
    with pytest.raises(
        ValueError,
        match=r"values of input\(s\) \['shape'\].*compile it "
        "without `shapes`",
    ):
        program(_reshape_model(), shapes=[{"x": [2, 6], "shape": [2]}])
    prog = program(_reshape_model())  # without: built when runs meet the values
    x = np.random.default_rng(8).standard_normal((2, 6)).astype(np.float32)
    got = prog.run({"x": x, "shape": np.array([3, 4], np.int64)})[0]
    np.testing.assert_array_equal(got, x.reshape(3, 4))
    assert prog._executable.plan_shapes() == []  # nothing to save for such plans
    assert "gpu_plans" not in json.loads(gk.save_buffer(prog, "json"))["compiled"]


def _document(saved: bytes, fmt: str) -> dict:
    if fmt == "json":
        return json.loads(saved)
    return msgpack.unpackb(bytes(msgpack_container.split(saved)[0]), raw=False)


def edit(saved: bytes, fmt: str, change) -> bytes:
    """The saved program with its document changed by `change` (lengths, CRCs and the
    version it needs written again)."""
    if fmt == "json":
        doc = json.loads(saved)
        change(doc)
        return json.dumps(doc).encode()
    document, section, _ = msgpack_container.split(saved)
    doc = msgpack.unpackb(bytes(document), raw=False)
    change(doc)
    return b"".join(
        msgpack_container.seal(msgpack.packb(doc, use_bin_type=True), [bytes(section)], 4)
    )


@pytest.mark.parametrize("fmt", ["msgpack", "json"])
def test_saved_plan_shapes_are_built_again_on_load(gpu_builds, fmt):
    data = model()
    prog = program(data, shapes=[{"x": [1, 3, SIZE, SIZE]}, {"x": [3, 3, SIZE, SIZE]}])
    expected = {b: prog.run(feeds(b)) for b in (2, 1)}  # builds 2; order now 3, 2, 1
    assert gpu_builds == [shape(1), shape(3), shape(2)]
    saved = gk.save_buffer(prog, fmt)
    doc = _document(saved, fmt)
    assert doc["compiled"]["gpu_plans"] == [
        {"shapes": [list(s) for s in shape(b)]} for b in (3, 2, 1)
    ]  # least recently used first
    assert "shapes" not in doc["compiled"]["options"]  # compile-time only
    if fmt == "msgpack":
        assert saved[6:10] == (4).to_bytes(4, "little")  # format version 4: gpu_plans
    else:
        assert doc["format_version"] == 4
    del gpu_builds[:]
    loaded = gk.load_buffer(saved)
    assert gpu_builds == [shape(3), shape(2), shape(1)]  # built while loading, in order
    ref = program(data, "ref")
    for b in (1, 2, 3):
        got = loaded.run(feeds(b))
        close(got[0], ref.run(feeds(b))[0])
        if b in expected:
            np.testing.assert_array_equal(got[0], expected[b][0])
    assert len(gpu_builds) == 3  # no run at a saved shape built anything
    again = _document(gk.save_buffer(loaded, fmt), fmt)["compiled"]["gpu_plans"]
    assert again == [{"shapes": [list(s) for s in shape(b)]} for b in (1, 2, 3)]


def test_at_most_plan_cache_size_shapes_are_saved(gpu_builds):
    prog = program(
        model(), plan_cache_size=2, shapes=[{"x": [b, 3, SIZE, SIZE]} for b in (1, 2, 3)]
    )
    assert gpu_builds == [shape(1), shape(2), shape(3)]
    saved = gk.save_buffer(prog, "json")
    assert [e["shapes"][0][0] for e in json.loads(saved)["compiled"]["gpu_plans"]] == [2, 3]
    del gpu_builds[:]
    loaded = gk.load_buffer(saved)
    assert gpu_builds == [shape(2), shape(3)] and loaded.options == {"plan_cache_size": 2}


def test_a_file_without_plan_shapes_still_loads(gpu_builds):
    prog = program(model(), shapes=[{"x": [2, 3, SIZE, SIZE]}])
    doc = json.loads(gk.save_buffer(prog, "json"))
    del doc["compiled"]["gpu_plans"]
    doc["format_version"] = 1  # as written before the field existed
    del gpu_builds[:]
    loaded = gk.load_buffer(json.dumps(doc).encode())
    assert gpu_builds == []  # nothing to build ahead: the first run builds
    close(loaded.run(feeds(2))[0], program(model(), "ref").run(feeds(2))[0])
    assert gpu_builds == [shape(2)]


def test_a_static_program_saves_no_plan_shapes(gpu_builds):
    prog = program(model(batch=1))
    assert "gpu_plans" not in json.loads(gk.save_buffer(prog, "json"))["compiled"]


# -- the field, checked without a device -------------------------------------------------


def _compiled_graph(gpu_builds):
    prog = program(_add_model(), shapes=[{"a": [2, 4], "b": [2, 4]}])
    return prog, prog.compiled_graph


def test_read_gpu_plans_returns_the_signatures(gpu_builds):
    _, graph = _compiled_graph(gpu_builds)
    got = read_gpu_plans(
        [{"shapes": [[2, 4], [2, 4]]}, {"shapes": [[5, 4], [5, 4]]}], graph, DEFAULT_LIMITS
    )
    assert got == [((2, 4), (2, 4)), ((5, 4), (5, 4))]


@pytest.mark.parametrize(
    "entry,words",
    [
        ({"shapes": [[2, 4]]}, "compiled.gpu_plans[1].shapes: expected 2 items, got 1"),
        ({"shapes": [[2, 4], [2, 4, 1]]}, "input 'b' has rank 2"),
        ({"shapes": [[2, 4], [3, 4]]}, "dimension 0 is N, which is 2 in input 'a', got 3"),
        ({"shapes": [[2, 5], [2, 5]]}, "dimension 1 is static 4"),
        ({"shapes": [[2, -4], [2, 4]]}, "compiled.gpu_plans[1].shapes[0][1]: -4 is outside"),
        ({"shapes": [[2, "4"], [2, 4]]}, "compiled.gpu_plans[1].shapes[0][1]: expected an integer"),
        ({"shapes": "2,4"}, "compiled.gpu_plans[1].shapes: expected a list"),
        ({}, "compiled.gpu_plans[1]: missing field(s) ['shapes']"),
        ({"shapes": [[2, 4], [2, 4]], "plan": 1}, "compiled.gpu_plans[1]: unknown field(s)"),
        (
            {"shapes": [[1, 4], [1, 4]]},
            "compiled.gpu_plans[1]: the same input shapes as compiled.gpu_plans[0]",
        ),
        (7, "compiled.gpu_plans[1]: expected a map"),
    ],
)
def test_a_bad_entry_is_damage_naming_it(gpu_builds, entry, words):
    _, graph = _compiled_graph(gpu_builds)
    with pytest.raises(gk.FormatError) as info:
        read_gpu_plans([{"shapes": [[1, 4], [1, 4]]}, entry], graph, DEFAULT_LIMITS)
    assert words in str(info.value) and "damaged file" in str(info.value)


@pytest.mark.parametrize("fmt", ["msgpack", "json"])
def test_a_damaged_field_fails_to_load_before_any_device_is_asked_for(gpu_builds, fmt, monkeypatch):
    import graphkiln.device as device

    prog, _ = _compiled_graph(gpu_builds)
    saved = gk.save_buffer(prog, fmt)

    def no_device():
        raise AssertionError("the device was asked for")

    monkeypatch.setattr(device, "require_gpu", no_device)
    bad = edit(
        saved, fmt, lambda doc: doc["compiled"]["gpu_plans"].append({"shapes": [[3, 4], [2, 4]]})
    )
    with pytest.raises(gk.FormatError) as info:
        gk.load_buffer(bad)
    assert str(info.value).startswith("damaged file: compiled.gpu_plans[1].shapes: input 'b'")
    assert "asked for" not in str(info.value)


def test_the_field_belongs_to_gpu_programs_and_version_4(gpu_builds):
    prog = program(_add_model(), "ref")
    doc = json.loads(gk.save_buffer(prog, "json"))
    doc["compiled"]["gpu_plans"] = [{"shapes": [[2, 4], [2, 4]]}]
    doc["format_version"] = 4
    with pytest.raises(gk.FormatError, match="gpu plan shapes in a program for target 'ref'"):
        gk.load_buffer(json.dumps(doc).encode())
    gpu, _ = _compiled_graph(gpu_builds)
    doc = json.loads(gk.save_buffer(gpu, "json"))
    doc["format_version"] = 3
    with pytest.raises(gk.FormatError, match="declares version 3 but holds fields of version 4"):
        gk.load_buffer(json.dumps(doc).encode())
