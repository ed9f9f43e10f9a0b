# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A compiled cpu program keeps its plan and packed weights: loaded where the key (oneDNN's
ISA, oneDNN and graphkiln versions) and the MAC under this installation's secret match, it
is built from them without lowering or reordering weights, with bit-identical outputs;
anywhere else it is lowered again, still correct; a damaged plan is a FormatError."""

import importlib.util
import os

import msgpack
import numpy as np
import pytest
from onnx import helper

import graphkiln as gk
from graphkiln import FormatError
from graphkiln.serialize import msgpack_container, plan_secret
from graphkiln.targets.cpu import saved_plan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def own_secret(tmp_path, monkeypatch):
    """Each test has its own installation secret (not the user's)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    plan_secret._cache.clear()
    yield
    plan_secret._cache.clear()


def rand(shape, seed):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, size=shape).astype(np.float32)


def model(nodes, inputs: dict, outputs: dict, initializers: dict) -> bytes:
    from onnx import TensorProto, numpy_helper

    def info(name, shape):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)

    graph = helper.make_graph(
        nodes,
        "m",
        [info(k, v) for k, v in inputs.items()],
        [info(k, v) for k, v in outputs.items()],
        [numpy_helper.from_array(a, k) for k, a in initializers.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def conv_model() -> bytes:
    """conv 3x3 + bias + relu, max pool, conv 1x1 grouped: oneDNN packs both weights."""
    node = helper.make_node
    return model(
        [
            node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
            node("Relu", ["c1"], ["r1"]),
            node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
            node("Conv", ["p1", "w2"], ["y"], group=2),
        ],
        {"x": [2, 4, 12, 12]},
        {"y": [2, 6, 6, 6]},
        {"w1": rand((8, 4, 3, 3), 1), "b1": rand((8,), 2), "w2": rand((6, 4, 1, 1), 3)},
    )


def matmul_model() -> bytes:
    """relu(x @ w1 + b1), then Gemm with transB, alpha and a bias: oneDNN matmuls."""
    node = helper.make_node
    return model(
        [
            node("MatMul", ["x", "w1"], ["m"]),
            node("Add", ["m", "b1"], ["a"]),
            node("Relu", ["a"], ["r"]),
            node("Gemm", ["r", "w2", "b2"], ["y"], transB=1, alpha=0.5),
        ],
        {"x": [15, 32]},
        {"y": [15, 16]},
        {
            "w1": rand((32, 48), 4),
            "b1": rand((48,), 5),
            "w2": rand((16, 48), 6),
            "b2": rand((16,), 7),
        },
    )


MODELS = {"conv": (conv_model, (2, 4, 12, 12)), "matmul": (matmul_model, (15, 32))}


def compiled(kind: str):
    build, shape = MODELS[kind]
    data = build()
    program = gk.parse_onnx_buffer(data).compile("cpu")
    feeds = {"x": rand(shape, 11)}
    oracle = gk.parse_onnx_buffer(data).compile("ref").run(feeds)
    return program, feeds, oracle


def plan_segments(program) -> list:
    return [s for segments in program._executable._plans.values() for s in segments]


def same_bytes(a: list, b: list) -> bool:
    return all(
        x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        for x, y in zip(a, b)
    ) and len(a) == len(b)


def edit_document(data: bytes, edit) -> bytes:
    """The msgpack file with edit(document) applied, lengths and CRCs made valid again."""
    document, section, _ = msgpack_container.split(data)
    doc = msgpack.unpackb(bytes(document), raw=False)
    edit(doc)
    packed = msgpack.packb(doc, use_bin_type=True)
    return b"".join(msgpack_container.seal(packed, [bytes(section)], 2))


def resign(doc) -> None:
    """Sign the (edited) plan again with this installation's secret, as a save would."""
    plan = doc["compiled"]["cpu_plan"]
    signed = msgpack.packb([plan["key"], plan["segments"]], use_bin_type=True)
    plan["mac"] = plan_secret.plan_mac(plan_secret.plan_secret(), signed)


def assert_lowered_again(data: bytes, program, feeds) -> None:
    """`data` loads with its plan lowered again (not the saved one) and gives `program`'s
    outputs bit for bit."""
    loaded = gk.load_buffer(data)
    assert loaded._executable.plan_source == "lowered"
    assert same_bytes(program.run(feeds), loaded.run(feeds))


@pytest.mark.parametrize("kind", ["conv", "matmul"])
@pytest.mark.parametrize("fmt", ["msgpack", "json"])
def test_saved_plan_is_used_and_bit_identical(kind, fmt):
    program, feeds, oracle = compiled(kind)
    expected = program.run(feeds)
    np.testing.assert_allclose(expected[0], oracle[0], rtol=1e-4, atol=1e-5)
    packed = sum(
        len(items) for s in plan_segments(program) for _, items in s.executor.packed_constants()
    )
    assert packed >= 2  # both weights of each model were packed by oneDNN kernels
    loaded = gk.load_buffer(gk.save_buffer(program, fmt))
    assert loaded._executable.plan_source == "saved"
    assert loaded.stats()["plan"]["plan_source"] == "saved"
    (segment,) = plan_segments(loaded)
    assert segment.reused_packings == packed  # no weight reordered again
    assert same_bytes(expected, loaded.run(feeds))
    again = gk.load_buffer(gk.save_buffer(loaded, fmt))  # a loaded program saves its plan too
    assert again._executable.plan_source == "saved"
    assert same_bytes(expected, again.run(feeds))


def test_saved_plan_from_a_file_is_mapped(tmp_path):
    program, feeds, _ = compiled("conv")
    path = tmp_path / "conv.gkp"
    gk.save(program, path)
    loaded = gk.load(path)
    assert loaded._executable.plan_source == "saved"
    assert same_bytes(program.run(feeds), loaded.run(feeds))


def test_other_key_is_lowered_again(monkeypatch):
    """Saved where oneDNN dispatched to another ISA: the plan is not used, the compiled
    graph is lowered again, outputs still bit-identical."""
    program, feeds, _ = compiled("conv")
    data = gk.save_buffer(program)
    real = saved_plan.plan_key()
    other = dict(real, isa="sse41" if real["isa"] != "sse41" else "avx2")  # never this machine's
    monkeypatch.setattr(saved_plan, "plan_key", lambda: other)
    assert_lowered_again(data, program, feeds)


def test_key_edited_in_the_file_is_lowered_again():
    program, feeds, _ = compiled("matmul")
    data = gk.save_buffer(program)

    def other_isa(doc):
        doc["compiled"]["cpu_plan"]["key"]["isa"] = "sse41"
        resign(doc)  # a file honestly saved on an sse41 machine here

    assert_lowered_again(edit_document(data, other_isa), program, feeds)


def test_plan_saved_by_another_installation_is_lowered_again(tmp_path, monkeypatch):
    program, feeds, _ = compiled("conv")
    data = gk.save_buffer(program)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "elsewhere"))
    plan_secret._cache.clear()
    assert_lowered_again(data, program, feeds)


def test_edited_plan_is_not_trusted():
    """A plan edited after saving (its MAC no longer matches) never reaches the kernels."""
    program, feeds, _ = compiled("conv")

    def drop_output(doc):
        doc["compiled"]["cpu_plan"]["segments"][0]["steps"][0]["outputs"] = []

    assert_lowered_again(edit_document(gk.save_buffer(program), drop_output), program, feeds)


def test_no_secret_saves_no_plan(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    plan_secret._cache.clear()
    program, feeds, _ = compiled("matmul")
    data = gk.save_buffer(program)
    assert data[6:10] == (1).to_bytes(4, "little")  # no plan: format version 1
    assert_lowered_again(data, program, feeds)


def test_version_1_file_without_plan_loads():
    program, feeds, _ = compiled("conv")

    def strip(doc):
        del doc["compiled"]["cpu_plan"]

    document, section, _ = msgpack_container.split(edit_document(gk.save_buffer(program), strip))
    old = b"".join(msgpack_container.seal(bytes(document), [bytes(section)], 1))
    assert_lowered_again(old, program, feeds)


def step_tensor(doc, field="outputs"):
    return doc["compiled"]["cpu_plan"]["segments"][0]["steps"][0][field][0]


DAMAGE = {
    "storage kind": (lambda d: step_tensor(d).__setitem__(3, 7), "outside [0, 3]"),
    "dtype": (lambda d: step_tensor(d).__setitem__(0, "f8"), "not an element type"),
    "strides": (lambda d: step_tensor(d)[2].pop(), "strides and dims differ"),
    "constant index": (
        lambda d: d["compiled"]["cpu_plan"]["segments"][0]["constants"].__setitem__(0, 10**6),
        "constants[0]",
    ),
    "input made later": (
        lambda d: d["compiled"]["cpu_plan"]["segments"][0]["inputs"].__setitem__(
            0, len(d["compiled"]["graph"]["inputs"]) + 5
        ),
        "inputs[0]",
    ),
    "attribute code": (
        lambda d: d["compiled"]["cpu_plan"]["segments"][0]["steps"][0]["attrs"].append(
            ["x", "Q", 1]
        ),
        "unknown attribute code",
    ),
    "missing mac": (lambda d: d["compiled"]["cpu_plan"].pop("mac"), "missing field"),
    "step without inputs": (
        lambda d: d["compiled"]["cpu_plan"]["segments"][0]["steps"][0].pop("inputs"),
        "missing field",
    ),
    "packed not bytes": (
        lambda d: d["compiled"]["cpu_plan"]["segments"][0]["steps"][0].__setitem__(
            "packed", [["layout", d["compiled"]["cpu_plan"]["segments"][0]["constants"][0]]]
        ),
        "1-D u8",
    ),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_plan_section_is_a_format_error(damage):
    program, _, _ = compiled("conv")
    edit, words = DAMAGE[damage]
    with pytest.raises(FormatError) as info:
        gk.load_buffer(edit_document(gk.save_buffer(program), edit))
    assert "cpu_plan" in str(info.value) and words in str(info.value)
    assert info.value.__cause__ is None  # a check said so, not the loader's catch-all


@pytest.mark.parametrize("where", ["offset", "dims"])
def test_tensor_outside_its_storage_is_refused_by_the_executor(where):
    """Even a plan that passes the MAC (signed again here) cannot make a kernel reach
    outside a storage: the C++ executor checks every tensor against its storage's size."""
    program, _, _ = compiled("conv")

    def outside(doc):
        tensor = step_tensor(doc)
        if where == "offset":
            tensor[5] += 1 << 30
        else:
            tensor[1][0] *= 1000
        resign(doc)

    with pytest.raises(FormatError, match="does not build.*outside its"):
        gk.load_buffer(edit_document(gk.save_buffer(program), outside))


def test_cpu_plan_in_a_ref_program_is_a_format_error():
    cpu_program, _, _ = compiled("conv")
    plan = msgpack.unpackb(
        bytes(msgpack_container.split(gk.save_buffer(cpu_program))[0]), raw=False
    )["compiled"]["cpu_plan"]
    ref_program = gk.parse_onnx_buffer(conv_model()).compile("ref")

    def add_plan(doc):
        doc["compiled"]["cpu_plan"] = plan

    with pytest.raises(FormatError, match="cpu plan in a program for target 'ref'"):
        gk.load_buffer(edit_document(gk.save_buffer(ref_program), add_plan))


def test_fuzzing_a_compiled_cpu_program_raises_only_format_errors(monkeypatch):
    """tools/fuzz_load.py's mutations on a compiled cpu program (msgpack and JSON)."""
    spec = importlib.util.spec_from_file_location(
        "fuzz_load", os.path.join(ROOT, "tools", "fuzz_load.py")
    )
    fuzz = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz)
    program, _, _ = compiled("conv")
    program.compile_ms = 0.0
    seeds = [(f"conv_cpu.{fmt}", gk.save_buffer(program, fmt)) for fmt in ("msgpack", "json")]
    monkeypatch.setattr(fuzz, "seed_files", lambda: seeds)
    lines = []
    with np.errstate(all="ignore"):
        stats = fuzz.run_fuzz(300, seed=777, report=lines.append)
    assert stats["crashes"] == 0, "\n".join(stats["crash_reports"][:3])
    assert stats["catch_all"] == 0, "\n".join(lines)
    assert stats["format_errors"] > 150 and stats["loaded"] > 0
