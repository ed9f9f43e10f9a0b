# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Kernel contracts (targets/native/kernel_contracts.py): what emit() refuses, the saved-plan
loader's check and old spellings, and drift checks against the C++ sources: every kernel
in the table is registered (cpu core, gpu registry.hip), every attribute name a kernel's
source reads is declared, and Reduce's op names agree between src/cpu and src/gpu."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from graphkiln import Program
from graphkiln.ir import parse_graph
from graphkiln.targets.native.kernel_contracts import REDUCE_OPS, TABLE, check_step, kernels
from graphkiln.targets.native.lower import LoweringContext, LoweringError
from graphkiln.targets.registry import default_target

SRC = Path(__file__).resolve().parents[3] / "src"
needs_core = pytest.mark.skipif(default_target() != "cpu", reason="needs the C++ core")

# source files whose attribute reads serve kernels registered elsewhere
CPU_EXTRA = {
    "onednn_post_ops.cpp": ["Conv", "ConvTranspose", "MatMul"],
    "depthwise_conv.cpp": ["Conv"],  # the Conv steps conv.cpp hands to it
    "winograd_conv.cpp": ["Conv"],  # likewise
    "stem_conv.cpp": ["Conv"],  # likewise
}
GPU_EXTRA = {
    "conv.hip": ["Conv"],
    "conv_epilogue.hip": ["Conv"],  # the Conv step's epilogue (conv_cudnn.hip's factory)
    "conv_miopen.hip": ["Conv"],  # Conv steps on MIOpen (AMD)
    "attention.hip": ["Attention"],
    "attention_mma.hip": ["Attention"],
    "attention_mma_f32.hip": ["Attention"],
}
_READ = re.compile(
    r"\b(?:attrs|a)\.(?:get_int|get_float|get_str|get_ints|get_floats|get_strs|"
    r'has)\("([a-z_0-9]+)"'
)


@pytest.mark.parametrize(
    "kernel, attrs, n_in, n_out, message",
    [
        ("Nope", {}, 1, 1, "the cpu target has no kernel 'Nope'"),
        (
            "Gather",
            {"axis": 0, "mode": 1},
            2,
            1,
            "kernel 'Gather' has no attribute 'mode' "
            r"\(it accepts: axis:int\)",
        ),
        ("Gather", {"axis": 0.5}, 2, 1, "attribute 'axis' must be int, not float 0.5"),
        ("Gather", {}, 2, 1, "needs attribute\\(s\\) axis"),
        ("Gather", {"axis": 0}, 3, 1, "takes 2 inputs, not 3"),
        ("Reduce", {"op": "logsum", "axes": [1]}, 1, 1, "is 'logsum'; accepted: sum, mean"),
    ],
)
def test_emit_refuses_what_the_contract_does_not_accept(kernel, attrs, n_in, n_out, message):
    ctx = LoweringContext([], [], [], {}, target="cpu")
    with pytest.raises(LoweringError, match=f"lowering node 'n' for cpu: .*{message}"):
        ctx.emit(kernel, [None] * n_in, [0] * n_out, attrs, "n")
    assert ctx.plan.steps == []


def test_contract_types_follow_the_core():
    # floats take ints, every list type takes an empty list; cpu steps may carry num_threads
    assert check_step("cpu", "LayerNormalization", {"axis": 1, "epsilon": 1}, 3, 1) is None
    assert (
        check_step(
            "cpu",
            "CopyRegions",
            {k: [] for k in ("dims", "dst_strides", "io", "offsets", "ranks", "src_strides")},
            1,
            1,
        )
        is None
    )
    assert check_step("cpu", "Copy", {"num_threads": 2}, 1, 1) is None
    assert "no attribute 'num_threads'" in check_step("gpu", "Copy", {"num_threads": 2}, 1, 1)


@needs_core
def test_every_cpu_contract_is_a_registered_kernel_and_back():
    from graphkiln._native import load_core

    assert set(kernels("cpu")) == set(load_core().cpu_kernels())


def test_every_gpu_contract_is_in_the_gpu_registry_and_back():
    registry = (SRC / "gpu" / "registry.hip").read_text()
    names = set(re.findall(r'\{"([A-Za-z]+)", make_[a-z_]+\}', registry))
    assert names and names == set(kernels("gpu"))


def _cpu_files() -> dict[str, list[str]]:
    out = {name: list(ks) for name, ks in CPU_EXTRA.items()}
    for path in (SRC / "cpu").glob("*.cpp"):
        for kernel in re.findall(r'GRAPHKILN_REGISTER_KERNEL\("(\w+)"', path.read_text()):
            out.setdefault(path.name, []).append(kernel)
    return out


def _gpu_files() -> dict[str, list[str]]:
    registry = (SRC / "gpu" / "registry.hip").read_text()
    by_factory: dict[str, list[str]] = {}
    for k, f in re.findall(r'\{"(\w+)", (make_\w+)\}', registry):
        by_factory.setdefault(f, []).append(k)
    out = {name: list(ks) for name, ks in GPU_EXTRA.items()}
    for path in (SRC / "gpu").glob("*.hip"):
        for factory in re.findall(r"Kernel> (make_\w+)\(const KernelSpec", path.read_text()):
            if factory in by_factory:
                out.setdefault(path.name, []).extend(by_factory[factory])
    return out


@pytest.mark.parametrize(
    "target, folder, files", [("cpu", "cpu", _cpu_files), ("gpu", "gpu", _gpu_files)]
)
def test_attributes_the_kernel_sources_read_are_declared(target, folder, files):
    owners = files()
    pattern = "*.cpp" if target == "cpu" else "*.hip"
    undeclared = []
    for path in sorted((SRC / folder).glob(pattern)):
        names = set(_READ.findall(path.read_text()))
        if not names:
            continue
        assert path.name in owners, f"{path.name} reads attributes but serves no kernel here"
        declared = {a for k in owners[path.name] for a in TABLE[k][target].attrs}
        undeclared += [f"{path.name}: {n}" for n in sorted(names - declared)]
    assert undeclared == []


def test_reduce_op_names_agree_between_the_targets():
    cpu = re.findall(r'if \(s == "(\w+)"\) return ROp::', (SRC / "cpu" / "reduce.cpp").read_text())
    gpu = re.findall(r'\{"(\w+)", [A-Z_0-9]+\}', (SRC / "gpu" / "reduce.hip").read_text())
    assert set(cpu) == set(gpu) == set(REDUCE_OPS)


LOGSUM = """
graph main(%x: f32[2,8]) {
  %axes: i64[1] = Constant() {value = tensor<i64[1]> [1]}
  %y: f32[2,1] = ReduceLogSum(%x, %axes)
  return %y
}"""


@needs_core
def test_a_saved_plan_with_the_old_reduce_spelling_still_loads():
    from graphkiln.targets.cpu.target import CpuTarget

    program = Program(parse_graph(LOGSUM)).compile("cpu")
    items = program._executable.saved_plan()
    (step,) = [s for s in items[0].steps if s["kernel"] == "Reduce"]
    assert step["attrs"]["op"] == "log_sum"
    step["attrs"] = {**step["attrs"], "op": "logsum"}  # as files saved before the rename
    loaded = CpuTarget().from_saved(program.compiled_graph, {}, items)
    x = np.random.default_rng(0).uniform(0.5, 2.0, (2, 8)).astype(np.float32)
    (y,) = loaded.run([x])
    np.testing.assert_allclose(y, np.log(x.sum(1, keepdims=True)), rtol=1e-5)
    assert [s["attrs"]["op"] for s in items[0].steps if s["kernel"] == "Reduce"] == ["log_sum"]
    items[0].steps[0] = {**items[0].steps[0], "kernel": "Nope"}
    with pytest.raises(LoweringError, match="saved plan step 0 .*no kernel 'Nope'"):
        CpuTarget().from_saved(program.compiled_graph, {}, items)
