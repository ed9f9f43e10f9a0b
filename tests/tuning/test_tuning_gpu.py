# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln.tuning.gpu: the selection logic on a real gpu plan (lowered without a device)
with executors whose step times are scripted per variant, so the winner is known; then,
on a GPU, exhaustive tuning of an attention model against ref and a warm compile that
measures nothing."""

import json

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.compiler import compile_graph
from graphkiln.targets.gpu.target import GpuTarget, lower_plan
from graphkiln.tuning import counters
from graphkiln.tuning.db import TuningDB
from graphkiln.tuning import gpu as gpu_tuning

B, H, S, D = 2, 4, 40, 16


def _model():
    from onnx import TensorProto, helper

    shape = [B, H, S, D]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in "qkv"]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    nodes = [
        helper.make_node("Attention", ["q", "k", "v"], ["a"], scale=0.25),
        helper.make_node("Relu", ["a"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "attention", inputs, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    rng = np.random.default_rng(5)
    feeds = {n: rng.standard_normal(shape).astype(np.float32) for n in "qkv"}
    return model.SerializeToString(), feeds


def _plan():
    model, _ = _model()
    graph, _ = compile_graph(gk.parse_onnx_buffer(model).graph, GpuTarget(), {}, False, False)
    return lower_plan(graph)


class ScriptedExecutor:
    """Times each step by the variant it was built with: attention variant 2 is fastest."""

    ATTENTION_MS = {0: 1.0, 1: 0.99, 2: 0.5, 3: 2.0, 4: 1.2, 5: 1.1}

    def __init__(self, plan, attention_ms=None):
        self.steps = [(s.name, s.kernel, s.attrs.get("variant", 0)) for s in plan.steps]
        self.attention_ms = attention_ms or self.ATTENTION_MS

    def run(self, arrays):
        return []

    def profile(self, arrays):
        return [
            (name, self.attention_ms[v] if kernel == "Attention" else 0.1)
            for name, kernel, v in self.steps
        ]


def test_exhaustive_tuning_stores_and_applies_the_fastest_variant(tmp_path):
    db = TuningDB(str(tmp_path / "tuning.db"))
    plan = _plan()
    assert [s.kernel for s in gpu_tuning.tunable_steps(plan)] == ["Attention"]
    before = counters()
    summary = gpu_tuning.tune_plan(plan, "exhaustive", ScriptedExecutor, db)
    assert summary["tuned"] == 1
    assert counters()["benchmarks"] > before["benchmarks"]
    step = gpu_tuning.tunable_steps(plan)[0]
    assert step.attrs["variant"] == 2
    (row,) = db.rows("gpu")
    solution = json.loads(row["solution"])
    assert solution["variant"] == 2 and solution["heuristic_ms"] == 1.0

    fresh = _plan()  # a warm lookup: the stored variant, nothing measured
    before = counters()
    summary = gpu_tuning.tune_plan(fresh, "lookup", ScriptedExecutor, db)
    assert summary["hits"] == 1 and counters()["benchmarks"] == before["benchmarks"]
    assert gpu_tuning.tunable_steps(fresh)[0].attrs["variant"] == 2


def test_a_marginal_gain_keeps_the_heuristic(tmp_path):
    db = TuningDB(str(tmp_path / "tuning.db"))
    plan = _plan()
    scripted = {
        0: 1.0,
        1: 0.99,
        2: 0.985,
        3: 1.5,
        4: 0.99,
        5: 0.99,
    }  # best is 1.5% faster: under MIN_GAIN
    gpu_tuning.tune_plan(plan, "exhaustive", lambda p: ScriptedExecutor(p, scripted), db)
    assert "variant" not in gpu_tuning.tunable_steps(plan)[0].attrs
    assert json.loads(db.rows("gpu")[0]["solution"])["variant"] == 0


def test_a_variant_that_does_not_build_is_skipped(tmp_path):
    db = TuningDB(str(tmp_path / "tuning.db"))
    plan = _plan()

    def build(p):
        if any(s.attrs.get("variant") == 2 for s in p.steps):
            raise RuntimeError("this build has no such variant")
        return ScriptedExecutor(p)

    gpu_tuning.tune_plan(plan, "exhaustive", build, db)
    assert "variant" not in gpu_tuning.tunable_steps(plan)[0].attrs  # 1 is under MIN_GAIN


def _no_gpu() -> str | None:
    from graphkiln._native import load_core
    from graphkiln.device import check_gpu_compatibility

    if not hasattr(load_core(), "GpuExecutor"):
        return "graphkiln._core was built without GPU_TARGETS"
    verdict = check_gpu_compatibility()
    return None if verdict.ok else f"no usable GPU: {verdict.message.splitlines()[0]}"


@pytest.mark.gpu
def test_gpu_exhaustive_then_warm_compile(tmp_path, monkeypatch):
    if _no_gpu():
        pytest.skip(_no_gpu())
    monkeypatch.setenv("GRAPHKILN_TUNING_DB", str(tmp_path / "tuning.db"))
    model, feeds = _model()
    want = gk.parse_onnx_buffer(model).compile("ref").run(feeds)[0]
    tuned = gk.parse_onnx_buffer(model).compile("gpu", exhaustive_tune=True)
    np.testing.assert_allclose(tuned.run(feeds)[0], want, rtol=1e-4, atol=1e-5)
    before = counters()
    warm = gk.parse_onnx_buffer(model).compile("gpu")
    after = counters()
    assert after["benchmarks"] == before["benchmarks"] and after["hits"] > before["hits"]
    np.testing.assert_allclose(warm.run(feeds)[0], want, rtol=1e-4, atol=1e-5)


def test_conv_steps_are_tunable_with_the_im2col_path_last():
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 9, 9])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 9, 9])
    w = helper.make_tensor(
        "w",
        TensorProto.FLOAT,
        [4, 3, 3, 3],
        np.random.default_rng(1).standard_normal(108).astype(np.float32),
    )
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    model = helper.make_model(
        helper.make_graph(nodes, "conv", [x], [y], [w]), opset_imports=[helper.make_opsetid("", 17)]
    )
    graph, _ = compile_graph(
        gk.parse_onnx_buffer(model.SerializeToString()).graph, GpuTarget(), {}, False, False
    )
    steps = gpu_tuning.tunable_steps(lower_plan(graph))
    assert [s.kernel for s in steps] == ["Conv"]
    assert gpu_tuning.VARIANTS["Conv"] == 9  # src/gpu/conv_cudnn.hip: kConvHipVariant
