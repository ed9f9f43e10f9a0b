# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""What int8 quantization touches in a model's top-level graph: the float activation inputs
of Conv, MatMul and Gemm (tensors computed at run time or fed by the caller), their float
weight initializers with the axis of their output channels, their float biases (stored as
int32), and each Conv's output (or that of the Relu / Clip after it), which a target's
fold_quantized pass needs quantized to run the Conv on integer kernels."""

from __future__ import annotations

from dataclasses import dataclass, field

import onnx

QUANTIZED_OPS = ("Conv", "MatMul", "Gemm")
# the inputs of each op that may be an activation or a weight: (activation inputs, weight input)
_OPERANDS = {"Conv": ((0,), 1), "MatMul": ((0, 1), 1), "Gemm": ((0, 1), 1)}


@dataclass(frozen=True)
class Weight:
    name: str  # the float initializer
    axis: int | None  # its output-channel axis (None: quantized per tensor)


@dataclass
class Plan:
    activations: list[str] = field(default_factory=list)  # in graph order, each once
    # (node index, input index) -> the weight quantized for that input
    weights: dict[tuple[int, int], Weight] = field(default_factory=dict)
    # (node index, input index) of each activation input to requantize
    activation_uses: list[tuple[int, int]] = field(default_factory=list)
    # the activations every reader reads dequantized (Conv outputs), a subset of activations
    outputs: list[str] = field(default_factory=list)
    # (node index, input index) -> the float bias initializer to store as int32
    biases: dict[tuple[int, int], str] = field(default_factory=dict)


def _weight_axis(node: onnx.NodeProto, rank: int) -> int | None:
    """The axis of a weight's output channels: Conv W is [M, C/group, k...]; Gemm B is [K, N]
    ([N, K] with transB); MatMul B is [..., K, N]."""
    if node.op_type == "Conv":
        return 0
    if node.op_type == "Gemm":
        trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
        return 0 if trans_b else 1
    return rank - 1 if rank >= 2 else None


def _conv_output(conv: onnx.NodeProto, readers: dict, outputs: set, fuse: bool) -> str | None:
    """The tensor to quantize after a Conv: the output of the Relu / Clip that is its only
    reader when `fuse` (quantized from 0 up, the activation folds into the integer Conv),
    else its own output; None for a graph output (it stays float)."""
    out = conv.output[0]
    after = readers.get(out, [])
    if fuse and len(after) == 1 and out not in outputs:
        if after[0].op_type in ("Relu", "Clip") and after[0].input[0] == out:
            out = after[0].output[0]
    return None if out in outputs else out


def find(
    graph: onnx.GraphProto,
    float_types: dict[str, bool],
    per_channel: bool,
    fuse_activations: bool = True,
) -> Plan:
    """The activations, weights and biases to quantize. `float_types[name]` says whether a
    tensor is float32 (missing: unknown, taken as float32 when it is an activation).
    `fuse_activations`: quantize a Relu / Clip after a Conv instead of the Conv's output
    (for uint8 activations, whose zero point is then 0)."""
    initializers = {t.name: t for t in graph.initializer}
    constants = {out for n in graph.node if n.op_type == "Constant" for out in n.output}
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in dict.fromkeys(node.input):
            readers.setdefault(name, []).append(node)
    outputs = {o.name for o in graph.output}
    plan = Plan()
    seen: set[str] = set()
    for index, node in enumerate(graph.node):
        if node.domain not in ("", "ai.onnx") or node.op_type not in _OPERANDS:
            continue
        activation_inputs, weight_input = _OPERANDS[node.op_type]
        for i, name in enumerate(node.input):
            if not name:
                continue
            tensor = initializers.get(name)
            if tensor is not None:
                if i == weight_input and tensor.data_type == onnx.TensorProto.FLOAT:
                    axis = _weight_axis(node, len(tensor.dims)) if per_channel else None
                    plan.weights[(index, i)] = Weight(name, axis)
                continue
            if i not in activation_inputs or name in constants:
                continue
            if not float_types.get(name, True):
                continue
            plan.activation_uses.append((index, i))
            if name not in seen:
                seen.add(name)
                plan.activations.append(name)
        _plan_bias(plan, node, index, initializers)
        if node.op_type == "Conv" and (index, 1) in plan.weights:
            out = _conv_output(node, readers, outputs, fuse_activations)
            if out is not None and float_types.get(out, True) and out not in plan.outputs:
                plan.outputs.append(out)
    plan.activations += [name for name in plan.outputs if name not in seen]
    return plan


def _plan_bias(plan: Plan, node: onnx.NodeProto, index: int, initializers: dict) -> None:
    """The float bias of a Conv / Gemm whose activation and weight are quantized, as int32:
    one value per output channel (Conv B; Gemm C of shape [N])."""
    if len(node.input) < 3 or not node.input[2] or (index, 1) not in plan.weights:
        return
    if (index, 0) not in plan.activation_uses or node.op_type not in ("Conv", "Gemm"):
        return
    bias, weight = initializers.get(node.input[2]), initializers[plan.weights[index, 1].name]
    axis = _weight_axis(node, len(weight.dims))
    if bias is None or bias.data_type != onnx.TensorProto.FLOAT or axis is None:
        return
    if list(bias.dims) == [weight.dims[axis]]:
        plan.biases[(index, 2)] = bias.name


def value_infos(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    """name -> type of every tensor that shape inference (or, where it fails, the model)
    declares; computed once per quantization (float_tensor_types and calibration read it)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError):
        inferred = model.graph  # what the model declares is all there is
    return {vi.name: vi for vi in (*inferred.input, *inferred.value_info, *inferred.output)}


def float_tensor_types(infos: dict[str, onnx.ValueInfoProto]) -> dict[str, bool]:
    """name -> whether it is float32, for every tensor of `infos` with a tensor type."""
    types = {}
    for name, vi in infos.items():
        if vi.type.WhichOneof("value") == "tensor_type" and vi.type.tensor_type.elem_type:
            types[name] = vi.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    return types
