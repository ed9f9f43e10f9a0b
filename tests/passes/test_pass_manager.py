# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The pass manager: tracing, disabling, per-pass verification, and whole-pipeline checks."""

import io
import types

import numpy as np
import pytest

from graphkiln.errors import CompileError
from graphkiln.ir import parse_graph
from graphkiln.passes import eliminate_dead_code, fuse_pointwise
from graphkiln.passes.context import PassContext
from graphkiln.passes.manager import run_pipeline
from graphkiln.program import Program

TEXT = """
graph main(%x: f32[2,3]) {
  %one: f32[] = Constant() {value = tensor<f32[]> [1.0]}
  %a: f32[2,3] = Mul(%x, %one)
  %b: f32[2,3] = Relu(%a)
  %c: f32[2,3] = Exp(%b)
  %dead: f32[2,3] = Neg(%x)
  return %c
}"""


def test_trace_prints_ir_after_each_pass_with_time():
    out = io.StringIO()
    records = run_pipeline(
        parse_graph(TEXT), [eliminate_dead_code, fuse_pointwise], PassContext(), trace=True, out=out
    )
    text = out.getvalue()
    assert "// after eliminate_dead_code" in text and "// after fuse_pointwise" in text
    assert "Fused" in text and " ms, " in text
    assert [r.name for r in records] == ["eliminate_dead_code", "fuse_pointwise"]


def test_disabled_passes_are_skipped(monkeypatch):
    monkeypatch.setenv("GRAPHKILN_DISABLE_PASSES", "fuse_pointwise")
    graph = parse_graph(TEXT)
    records = run_pipeline(graph, [eliminate_dead_code, fuse_pointwise], PassContext())
    assert [r.name for r in records] == ["eliminate_dead_code"]
    assert "Fused" not in [n.op for n in graph.nodes]
    monkeypatch.setenv("GRAPHKILN_DISABLE_PASSES", "no_such_pass")
    with pytest.raises(ValueError, match="unknown passes"):
        run_pipeline(parse_graph(TEXT), [eliminate_dead_code], PassContext())


def test_verify_passes_names_the_first_pass_that_changes_a_result(monkeypatch):
    def negate_outputs(graph, ctx):
        out = graph.outputs[0]
        node = graph.add_node("Neg", [out])
        graph.outputs = [node.outputs[0]]

    broken = types.ModuleType("graphkiln.passes.broken_negation")
    broken.run = negate_outputs
    from graphkiln.passes import pipelines

    monkeypatch.setitem(pipelines.PHASES, "cleanup", [eliminate_dead_code, broken])
    prog = Program(parse_graph(TEXT))
    with pytest.raises(CompileError, match="pass broken_negation changed output 0"):
        prog.compile("ref", optimize=True, verify_passes=True)
    prog.compile("ref", optimize=False, verify_passes=True)


def test_optimized_ref_gives_the_same_results_and_stats():
    prog = Program(parse_graph(TEXT)).compile("ref", optimize=True)
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    (y,) = prog.run({"x": x})
    np.testing.assert_allclose(y, np.exp(np.maximum(x, 0)), rtol=1e-6)
    stats = prog.stats()
    assert stats["nodes_in"] == 4 and stats["kernels"] == 1
    assert {"nodes_out", "arena_bytes", "naive_bytes", "passes"} <= set(stats)
    assert all({"name", "ms", "nodes_after"} == set(p) for p in stats["passes"])


def test_unknown_compile_option_is_refused():
    with pytest.raises(ValueError, match="no option fast.*accepted: optimize"):
        Program(parse_graph(TEXT)).compile("ref", fast=True)
