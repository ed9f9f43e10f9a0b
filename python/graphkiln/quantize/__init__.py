# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Post-training static int8 quantization with calibration: `quantize_int8` writes the QDQ
form of a float ONNX model (activations u8 per tensor from calibrated ranges, weights i8
per output channel), which every graphkiln target runs and the cpu target's int8 option
folds into integer kernels (passes/fold_quantized.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import onnx

from . import calibrate, opset, quantizable, rewrite_qdq, samples


@dataclass(frozen=True)
class Summary:
    # activation tensors given a QuantizeLinear -> DequantizeLinear pair (inputs of the
    # quantized ops, outputs of the Conv or of their Relu / Clip)
    activations: int
    weights: int  # float weights stored as int8
    biases: int  # float biases stored as int32
    samples: int  # calibration samples run
    opset: int  # the quantized model's default-domain opset


def quantize_model(
    model,
    calibration,
    *,
    per_channel: bool = True,
    symmetric_activations: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[onnx.ModelProto, Summary]:
    """`quantize_int8`'s work: the QDQ ModelProto and what was quantized."""
    from ..frontends.onnx.importer import read_model

    source = read_model(model)
    checked = samples.check_samples(source.graph, calibration)
    copy = onnx.ModelProto()
    copy.CopyFrom(source)
    work = opset.at_least_13(copy)
    infos = quantizable.value_infos(work)
    types = quantizable.float_tensor_types(infos)
    # u8 activations quantize a Relu / Clip after a Conv from 0 up: it folds into the Conv
    plan = quantizable.find(work.graph, types, per_channel, not symmetric_activations)
    if not plan.activations and not plan.weights:
        ops = sorted({n.op_type for n in work.graph.node})
        raise ValueError(
            "nothing to quantize: int8 quantization rewrites the float activations and "
            f"weights of {', '.join(quantizable.QUANTIZED_OPS)} nodes of the top-level graph; "
            f"this model's nodes are {', '.join(ops) or 'none'}"
        )
    ranges = calibrate.collect_ranges(work, plan.activations, checked, infos, progress)
    biases = rewrite_qdq.rewrite(work, plan, ranges, symmetric_activations)
    onnx.checker.check_model(work)
    weights = len({w.name for w in plan.weights.values()})
    summary = Summary(
        len(plan.activations), weights, biases, len(checked), opset.default_opset(work)
    )
    return work, summary


def quantize_int8(
    model,
    calibration,
    *,
    per_channel: bool = True,
    symmetric_activations: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> bytes:
    """Post-training static int8 quantization of a float ONNX model; returns the serialized
    QDQ model (parse it with `graphkiln.parse_onnx_buffer`, or write it to a .onnx file).

    `model`: a path, the serialized model or an onnx.ModelProto (not changed).
    `calibration`: a non-empty list of feed dicts {input name: numpy array}, every input of
    the model in each, with the model's dtypes; representative inputs, since activation
    ranges are their min and max over these samples (the float model is run on each with
    graphkiln's cpu target, else ref). `progress(done, total)` is called after each sample.

    Quantized: the float activation inputs of the top-level graph's Conv, MatMul and Gemm
    nodes (QuantizeLinear -> DequantizeLinear, uint8 asymmetric per tensor, the range widened
    to include 0; int8 symmetric with `symmetric_activations=True`) and their float weight
    initializers (int8 symmetric, one scale per output channel: Conv axis 0, Gemm axis 0 or
    1 by transB, MatMul the last axis; one per tensor with `per_channel=False`), their biases
    (Conv B, Gemm C of one value per output: int32 at scale x_scale * w_scale) and each
    Conv's output, or that of the Relu / Clip reading it (with uint8 activations), read
    dequantized by every reader: the cpu target's int8 option then runs the Conv on integer
    kernels. Every other node stays float. A model below opset 13 is converted to opset 13
    first.

    A ValueError / TypeError names bad calibration data (empty list, missing or unknown input
    names, wrong dtype, non-finite values) or a model with nothing to quantize."""
    quantized, _ = quantize_model(
        model,
        calibration,
        per_channel=per_channel,
        symmetric_activations=symmetric_activations,
        progress=progress,
    )
    return quantized.SerializeToString()


__all__ = ["Summary", "quantize_int8", "quantize_model"]
