# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A new input shape of a dynamic program compiles no new kernel on gpu: the generated
pointwise sources of two specializations (other widths / sequence lengths, same broadcast
patterns) are the same texts, so the runtime compiler's module cache serves the second
(issue 20: a new shape must cost a fraction of the first compile). No device needed: the
plans are lowered only."""

from __future__ import annotations

import os
import sys

import pytest

import graphkiln as gk
from graphkiln.compiler import compile_graph
from graphkiln.targets.native.specialize import specialize
from graphkiln.targets.gpu.target import GpuTarget, lower_plan

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import concurrency_models as cm  # noqa: E402


def _sources(graph, shapes) -> set[str]:
    plan = lower_plan(specialize(graph, shapes))
    return {s.attrs["jit_source"] for s in plan.steps if "jit_source" in s.attrs}


def _compiled(model):
    prog = gk.parse_onnx_buffer(model.SerializeToString(), default_dim=None)
    graph, _ = compile_graph(prog.graph, GpuTarget(), {}, False, False)
    return graph


@pytest.mark.parametrize("widths", [(160, 320), (176, 944)])
def test_ocr_widths_share_their_generated_kernels(widths):
    graph = _compiled(cm.ocr_recognizer(seed=0))
    first, second = (_sources(graph, ((1, 3, 48, w),)) for w in widths)
    assert first and first == second


def test_bert_lengths_share_their_generated_kernels():
    graph = _compiled(cm.bert_dynamic_seq(seed=0, vocab=1000, hidden=32, heads=2, layers=1))
    first, second = (_sources(graph, ((1, s), (1, s))) for s in (16, 96))
    assert first and first == second
