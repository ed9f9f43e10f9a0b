# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Write the QDQ model: each activation input of a quantized op read through
QuantizeLinear -> DequantizeLinear (one pair per tensor, placed right after the tensor is
made), each float weight replaced by an int8 initializer read through DequantizeLinear
(per output channel: its `axis` attribute, opset 13), each Conv / Gemm bias by an int32
one at scale sx * sW, and each Conv output (or its Relu's / Clip's) quantized too, every
reader reading it dequantized: the form onnxruntime's quantize_static writes, which the cpu
target folds into integer convolutions (passes/fold_quantized.py).

  Relu(Conv(x, W, b))  ->  DQ(Q(Relu(Conv(DQ(Q(x, sx, zx), sx, zx), DQ(W_q, sW, 0; axis=0),
                                          DQ(b_q, sx * sW, 0; axis=0))), sy, 0), sy, 0)"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from .calibrate import Ranges
from .params import activation_params, bias_params, weight_params
from .quantizable import Plan


class _Names:
    """Fresh tensor and node names, never one the model already uses."""

    def __init__(self, graph: onnx.GraphProto):
        self.used = {t.name for t in graph.initializer} | {vi.name for vi in graph.input}
        for node in graph.node:
            self.used.update(node.input)
            self.used.update(node.output)
            self.used.add(node.name)

    def fresh(self, base: str) -> str:
        name, n = base, 1
        while name in self.used:
            name, n = f"{base}_{n}", n + 1
        self.used.add(name)
        return name


def _initializer(graph, names: _Names, base: str, array: np.ndarray) -> str:
    name = names.fresh(base)
    graph.initializer.append(numpy_helper.from_array(array, name))
    return name


def _dequantized(graph, names, base: str, arrays, axis) -> tuple[str, onnx.NodeProto]:
    """(the dequantized tensor's name, the DequantizeLinear node) of constant (quantized
    values, scale, zero point)."""
    inputs = [
        _initializer(graph, names, f"{base}_{suffix}", array)
        for suffix, array in zip(("quantized", "scale", "zero_point"), arrays)
    ]
    out = names.fresh(f"{base}_dequantized")
    attrs = {} if axis is None else {"axis": axis}
    return out, onnx.helper.make_node("DequantizeLinear", inputs, [out], names.fresh(out), **attrs)


def _qdq_pair(graph, names, tensor: str, params) -> tuple[str, list[onnx.NodeProto]]:
    scale, zero = params
    s_name = _initializer(graph, names, f"{tensor}_scale", scale)
    z_name = _initializer(graph, names, f"{tensor}_zero_point", zero)
    q_out, dq_out = names.fresh(f"{tensor}_quantized"), names.fresh(f"{tensor}_dequantized")
    nodes = [
        onnx.helper.make_node(
            "QuantizeLinear", [tensor, s_name, z_name], [q_out], names.fresh(q_out)
        ),
        onnx.helper.make_node(
            "DequantizeLinear", [q_out, s_name, z_name], [dq_out], names.fresh(dq_out)
        ),
    ]
    return dq_out, nodes


def rewrite(model: onnx.ModelProto, plan: Plan, ranges: Ranges, symmetric: bool) -> int:
    """Turn `model` (a copy the caller owns) into its QDQ form, in place. Returns the number
    of biases stored as int32."""
    graph = model.graph
    names = _Names(graph)
    initializers = {t.name: t for t in graph.initializer}
    old_nodes = list(graph.node)
    head: list[onnx.NodeProto] = []  # weight / bias DequantizeLinear nodes, first in the graph
    weight_outputs: dict[tuple[str, int | None], tuple[str, np.ndarray]] = {}
    weight_scales: dict[tuple[int, int], np.ndarray] = {}  # (node, input) -> its w scale
    for (index, i), weight in plan.weights.items():
        key = (weight.name, weight.axis)
        if key not in weight_outputs:
            arrays = weight_params(numpy_helper.to_array(initializers[weight.name]), key[1])
            out, node = _dequantized(graph, names, weight.name, arrays, weight.axis)
            weight_outputs[key] = (out, arrays[1])
            head.append(node)
        old_nodes[index].input[i], weight_scales[index, i] = weight_outputs[key]
    params = {t: activation_params(*ranges[t], symmetric) for t in plan.activations}
    pairs = {tensor: _qdq_pair(graph, names, tensor, params[tensor]) for tensor in params}
    biases = _quantize_biases(graph, names, plan, old_nodes, params, weight_scales, initializers)
    head += biases
    for index, i in plan.activation_uses:
        old_nodes[index].input[i] = pairs[old_nodes[index].input[i]][0]
    outputs = set(plan.outputs)
    for node in old_nodes:  # every reader of a quantized Conv output reads it dequantized
        for i, name in enumerate(node.input):
            if name in outputs:
                node.input[i] = pairs[name][0]
    inputs = {vi.name for vi in graph.input}
    new_nodes = list(head)
    for tensor in plan.activations:  # activations fed by the caller: quantized first
        if tensor in inputs:
            new_nodes += pairs[tensor][1]
    for node in old_nodes:
        new_nodes.append(node)
        new_nodes += [n for out in node.output if out in pairs for n in pairs[out][1]]
    del graph.node[:]
    graph.node.extend(new_nodes)
    _drop_unread_weights(graph, {w.name for w in plan.weights.values()} | {*plan.biases.values()})
    return len(biases)


def _quantize_biases(graph, names, plan: Plan, nodes, params, weight_scales, initializers) -> list:
    """Point each planned bias input at an int32 bias's DequantizeLinear (scale x_scale *
    w_scale: per output channel on axis 0, or one; zero points 0); returns those nodes.
    `nodes` still read their float activations (the names `params` is keyed by);
    `initializers`: the model's float initializers by name."""
    made: dict[tuple, str] = {}
    dequantize = []
    for (index, i), name in plan.biases.items():
        x_scale, w_scale = params[nodes[index].input[0]][0], weight_scales[index, 1]
        key = (name, float(x_scale), w_scale.tobytes())
        if key not in made:
            bias = numpy_helper.to_array(initializers[name])
            quantized = bias_params(bias, x_scale, w_scale)
            if quantized is None:
                continue  # scales too small for int32 steps: the bias stays float
            axis = 0 if w_scale.ndim else None
            made[key], node = _dequantized(graph, names, name, quantized, axis)
            dequantize.append(node)
        nodes[index].input[i] = made[key]
    return dequantize


def _drop_unread_weights(graph: onnx.GraphProto, weights: set[str]) -> None:
    """Remove the float weights no node reads any more (a weight another op also reads, or a
    graph output, stays)."""
    read = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    read |= _subgraph_reads(graph)
    unread = weights - read
    kept = [t for t in graph.initializer if t.name not in unread]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    kept_inputs = [vi for vi in graph.input if vi.name not in unread]
    del graph.input[:]
    graph.input.extend(kept_inputs)


def _subgraph_reads(graph: onnx.GraphProto) -> set[str]:
    """Names read inside the subgraphs of If / Loop / Scan nodes (they may read outer names)."""
    read: set[str] = set()
    for node in graph.node:
        for attr in node.attribute:
            for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
                for inner in sub.node:
                    read.update(inner.input)
                read |= _subgraph_reads(sub)
    return read
