# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A graph with symbolic dims whose shape computations (Shape -> Gather -> Slice on a
position table, as exporters write BERT's position ids) fold in every specialization: the
gpu target must not refuse it for an op (Shape) that no plan ever holds. Only the decision
is checked here (no device); the plans themselves are tested on the device."""

import graphkiln
from concurrency_models import bert_dynamic_seq
from graphkiln.compiler import compile_graph
from graphkiln.targets import get_target
from graphkiln.targets.native.lower_support import folded_when_specialized
from graphkiln.targets.gpu.target import unsupported_nodes


def _gpu_graph():
    prog = graphkiln.parse_onnx_buffer(bert_dynamic_seq().SerializeToString())
    target = get_target("gpu")
    graph, _ = compile_graph(prog.graph, target, {}, False, False)
    return graph


def test_shape_chains_are_not_refused_on_gpu():
    graph = _gpu_graph()
    folded = folded_when_specialized(graph)
    assert any(n.op == "Shape" for n in folded), "the model reads a shape"
    assert unsupported_nodes(graph) == []


def test_data_ops_are_not_taken_for_shape_computations():
    graph = _gpu_graph()
    folded = folded_when_specialized(graph)
    assert not any(n.op in ("MatMul", "Softmax", "LayerNormalization", "Attention") for n in folded)
