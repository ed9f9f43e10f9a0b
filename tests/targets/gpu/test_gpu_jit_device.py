# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Runtime-compiled Pointwise kernels on the device (src/gpu/rtc.hip, pointwise.hip): with
the runtime compiler on and off (GRAPHKILN_GPU_JIT=0) the gpu target gives ref's results;
compiled code lands in the kernel cache (GRAPHKILN_KERNEL_CACHE), is read back by the next
compile, survives damaged files and a read-only folder; replays (graphs) run it too. The
source dump (GRAPHKILN_GPU_DUMP_SRC) is checked without a device."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time

import pytest

import graphkiln as gk
from gpu_testing import compare, requires_gpu
from op_cases import CASES as OP_CASES
from test_gpu_jit_codegen import CASES

MODELS = {
    name: CASES[name]
    for name in (
        "chain",
        "rounding_chain_f16",
        "rounding_chain_bf16",
        "where",
        "broadcast1_Mul",
        "broadcast6_Add",
        "cast_float32_float16",
        "int_int32_Div",
        "int_int8_Mul",
        "special_values",
        "f64_Exp",
        "attrs_Selu",
        "compare_i64_Less",
        "logic_Xor",
    )
}
MODELS.update({name: OP_CASES[name] for name in ("conv_bn_relu_pool", "mlp_block")})


def _check(name: str):
    model, feeds = MODELS[name]()
    ref = gk.parse_onnx_buffer(model).compile("ref").run(feeds)
    program = gk.parse_onnx_buffer(model).compile("gpu")
    for _ in range(3):  # the second run captures a graph, the third replays it
        compare(program.run(feeds), ref, rtol=1e-4, atol=1e-5)
    return program


def _generates_source(name: str) -> bool:
    """Whether the gpu plan of the model has a Pointwise step with generated source (a conv
    epilogue, for one, may run inside the convolution instead)."""
    from graphkiln.compiler import compile_graph
    from graphkiln.targets.gpu.target import GpuTarget, lower_plan

    model, _ = MODELS[name]()
    graph, _ = compile_graph(gk.parse_onnx_buffer(model).graph, GpuTarget(), {}, False, False)
    return any("jit_source" in s.attrs for s in lower_plan(graph).steps)


def _cached(folder) -> list[str]:
    return (
        sorted(f for f in os.listdir(folder) if f.endswith(".bin")) if os.path.isdir(folder) else []
    )


@requires_gpu
@pytest.mark.parametrize("name", sorted(MODELS))
def test_gpu_jit_on_matches_ref(name, tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHKILN_KERNEL_CACHE", str(tmp_path))
    monkeypatch.delenv("GRAPHKILN_GPU_JIT", raising=False)
    _check(name)
    if _generates_source(name):
        assert _cached(tmp_path), "no kernel was runtime-compiled (is libnvrtc / hipRTC found?)"


@requires_gpu
@pytest.mark.parametrize("name", sorted(MODELS))
def test_gpu_jit_off_matches_ref(name, tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHKILN_KERNEL_CACHE", str(tmp_path))
    monkeypatch.setenv("GRAPHKILN_GPU_JIT", "0")
    _check(name)
    assert not _cached(tmp_path)


_COMPILE = """
import sys, time
sys.path[:0] = {paths!r}
import graphkiln as gk
from test_gpu_jit_codegen import CASES
model, feeds = CASES["chain"]()
start = time.perf_counter()
program = gk.parse_onnx_buffer(model).compile("gpu")
print(time.perf_counter() - start)
"""


def _compile_in_fresh_process(env: dict) -> float:
    """Seconds to compile the `chain` model in a new process (no module loaded in memory)."""
    paths = [os.path.dirname(os.path.abspath(__file__)), *sys.path]
    done = subprocess.run(
        [sys.executable, "-c", _COMPILE.format(paths=paths)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return float(done.stdout.strip().splitlines()[-1])


@requires_gpu
def test_gpu_jit_cache_is_hit_by_the_next_compile(tmp_path):
    env = {"GRAPHKILN_KERNEL_CACHE": str(tmp_path)}
    cold = _compile_in_fresh_process(env)
    files = _cached(tmp_path)
    assert files
    stamps = {f: os.stat(tmp_path / f).st_mtime_ns for f in files}
    warm = _compile_in_fresh_process(env)
    assert _cached(tmp_path) == files
    assert {f: os.stat(tmp_path / f).st_mtime_ns for f in files} == stamps  # read, not rewritten
    print(f"chain model compile: cold {cold * 1e3:.1f} ms, warm (cache hit) {warm * 1e3:.1f} ms")


@requires_gpu
def test_gpu_jit_damaged_cache_files_are_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHKILN_KERNEL_CACHE", str(tmp_path))
    program = _check("chain")
    files = _cached(tmp_path)
    sizes = {f: os.path.getsize(tmp_path / f) for f in files}
    for f in files:
        with open(tmp_path / f, "r+b") as handle:
            handle.truncate(sizes[f] // 2)
    del program
    gc.collect()  # the loaded module goes; the next compile reads the (damaged) files
    _check("chain")
    assert {f: os.path.getsize(tmp_path / f) for f in files} == sizes


@requires_gpu
def test_gpu_jit_unwritable_cache_folder_still_compiles(tmp_path, monkeypatch, capfd):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")  # the cache folder cannot be created, even as root
    monkeypatch.setenv("GRAPHKILN_KERNEL_CACHE", str(blocker / "kernels"))
    _check("chain")
    assert "not cached" in capfd.readouterr().err


@requires_gpu
def test_gpu_jit_speed_against_the_interpreter(tmp_path, monkeypatch):
    """Prints run times of a large fused chain, runtime-compiled and interpreted."""
    import numpy as np

    from cpu_testing import node

    from test_gpu_jit_codegen import onnx_model

    shape = (32, 64, 56, 56)
    nodes = [
        node("Sigmoid", ["x"], ["s"]),
        node("Mul", ["x", "s"], ["m"]),
        node("Add", ["m", "b"], ["t"]),
        node("Relu", ["t"], ["y"]),
    ]
    model = onnx_model(nodes, {"x": shape, "b": (64, 1, 1)}, {"y": shape})
    feeds = {
        "x": np.random.default_rng(0).standard_normal(shape, np.float32),
        "b": np.random.default_rng(1).standard_normal((64, 1, 1), np.float32),
    }
    monkeypatch.setenv("GRAPHKILN_KERNEL_CACHE", str(tmp_path))
    times = {}
    outputs = {}
    for mode in ("1", "0"):
        monkeypatch.setenv("GRAPHKILN_GPU_JIT", mode)
        program = gk.parse_onnx_buffer(model).compile("gpu")
        outputs[mode] = program.run(feeds)[0]
        start = time.perf_counter()
        for _ in range(10):
            program.run(feeds)
        times[mode] = (time.perf_counter() - start) / 10
    np.testing.assert_allclose(outputs["1"], outputs["0"], rtol=1e-5, atol=1e-6)
    print(
        f"fused chain {shape}: runtime-compiled {times['1'] * 1e3:.2f} ms a run, "
        f"interpreted {times['0'] * 1e3:.2f} ms (both include host<->device copies)"
    )


def test_gpu_jit_dump_writes_each_generated_source(tmp_path, monkeypatch):
    from graphkiln.compiler import compile_graph
    from graphkiln.targets.gpu.target import GpuTarget, lower_plan

    monkeypatch.setenv("GRAPHKILN_GPU_DUMP_SRC", str(tmp_path / "src"))
    model, _ = CASES["chain"]()
    graph, _ = compile_graph(gk.parse_onnx_buffer(model).graph, GpuTarget(), {}, False, False)
    plan = lower_plan(graph)
    entries = {
        s.attrs["jit_entry"]: s.attrs["jit_source"] for s in plan.steps if "jit_source" in s.attrs
    }
    assert entries
    assert sorted(os.listdir(tmp_path / "src")) == sorted(f"{e}.cu" for e in entries)
    for entry, text in entries.items():
        assert (tmp_path / "src" / f"{entry}.cu").read_text() == text
