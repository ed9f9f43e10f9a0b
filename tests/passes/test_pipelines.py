# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Pipelines are built from named phases, and every Fused kind a target's pipeline can
produce lowers on that target: statically (the kinds the pipeline's fusion passes declare
against the target table's FUSED_KINDS) and on real graphs (a CNN with residual blocks, a
BERT-style encoder, a CRNN-style recognizer) run through each target's pipeline, whose
Fused nodes must all be supported and lower."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import graphkiln
from graphkiln.ir.clone import clone_graph
from graphkiln.passes import (
    attention_heads,
    fuse_epilogue,
    fuse_pointwise,
    fuse_reduction,
    pipelines,
)
from graphkiln.passes.context import PassContext
from graphkiln.passes.manager import run_pipeline
from graphkiln.targets.cpu import table as cpu_table
from graphkiln.targets.cpu.target import CpuTarget
from graphkiln.targets.gpu import table as gpu_table
from graphkiln.targets.gpu.target import GpuTarget, lower_plan
from graphkiln.targets.gpu.target import unsupported_nodes as gpu_unsupported
from graphkiln.targets.native.lower_support import node_supported

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import concurrency_models as cm  # noqa: E402

TARGETS = {"cpu": (CpuTarget(), cpu_table), "gpu": (GpuTarget(), gpu_table)}
OPTIONS = [{}, {"fp16": True}]


def test_pipelines_are_their_phases():
    full = pipelines.pipeline("full")
    assert full == pipelines.FULL
    assert full[-4:-1] == [fuse_pointwise, fuse_epilogue, fuse_reduction]
    gpu = GpuTarget().passes({})
    assert gpu.index(attention_heads) < gpu.index(fuse_pointwise)
    assert gpu.index(fuse_reduction) < gpu.index(fuse_epilogue)
    from graphkiln.targets.gpu import precision

    assert precision in GpuTarget().passes({"fp16": True})
    assert precision not in gpu


def test_unknown_pipeline_or_slot_is_refused():
    with pytest.raises(ValueError, match="no pass pipeline 'fast'.*accepted: full, gpu"):
        pipelines.pipeline("fast")
    with pytest.raises(ValueError, match="slots \\['after'\\] do not exist"):
        pipelines.pipeline("gpu", {"after": []})


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("options", OPTIONS, ids=["fp32", "fp16"])
def test_every_kind_a_pipeline_produces_lowers_on_its_target(target, options):
    if target == "cpu" and options:
        pytest.skip("fp16 is a gpu option")
    instance, table = TARGETS[target]
    kinds = pipelines.fused_kinds(instance.passes(options))
    assert kinds and kinds <= table.FUSED_KINDS


def _models():
    yield "resnet_like", cm.resnet_like(seed=0, batch=2), {}
    yield "bert_like", cm.bert_like(seed=1, batch=2), {}
    yield "ocr", cm.ocr_recognizer(seed=2, batch=1, width=64), {}


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize(
    "name,model,shapes", list(_models()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_fused_nodes_of_real_graphs_lower(target, name, model, shapes):
    instance, table = TARGETS[target]
    program = graphkiln.parse_onnx_buffer(model.SerializeToString(), default_dim=1)
    graph = clone_graph(program.graph)
    run_pipeline(graph, instance.passes({}), PassContext(options={}))
    fused = [n for n in graph.nodes if n.op == "Fused"]
    assert fused, name
    assert {n.attrs["kind"] for n in fused} <= table.FUSED_KINDS
    assert [n.name for n in fused if not node_supported(n, table.SUPPORT)] == []
    if target == "gpu":
        assert gpu_unsupported(graph) == []
        plan = lower_plan(graph)
        assert plan.steps
    else:
        rng = np.random.default_rng(3)
        feeds = {}
        for v in program.graph.inputs:
            dims = [d if isinstance(d, int) else 1 for d in v.type.dims]
            dtype = v.type.dtype.numpy
            feeds[v.name] = (
                rng.integers(0, 50, dims).astype(dtype)
                if np.issubdtype(dtype, np.integer)
                else rng.standard_normal(dims).astype(dtype)
            )
        cpu = graphkiln.parse_onnx_buffer(model.SerializeToString(), default_dim=1)
        ref = graphkiln.parse_onnx_buffer(model.SerializeToString(), default_dim=1)
        got = cpu.compile("cpu").run(feeds)
        want = ref.compile("ref").run(feeds)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4 * float(np.abs(w).max()))
