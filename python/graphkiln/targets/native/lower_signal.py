# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""DFT, STFT -> kernels of the same names (src/cpu/dft.cpp), MelWeightMatrix -> kernel
"MelWeightMatrix" (src/cpu/mel_weight.cpp): cpu only, with ref's semantics
(targets/ref/signal.py), computed in double.

DFT (the IR form is opset 20's; the importer turns opset 17's attribute into a constant
input): float32 / float64 signals, real (last dim 1) or complex (last dim 2); `axis` and
`dft_length` must be constants at lowering (graph inputs of them are planned per value:
cpu/target.py), resolved here into the kernel's `axis` / `length`. STFT: frame_step and
frame_length constants, the window a run-time input of the signal's dtype. MelWeightMatrix:
num_mel_bins, dft_length and sample_rate constants, the band edges read at run time.
`refusal(node)` says why the kernels cannot run a node (None when they can)."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node
from .lower import LoweringContext, LoweringError, node_label
from .lower_support import supports

_FLOATS = (DType.f32, DType.f64)


def _input(node: Node, i: int):
    return node.inputs[i] if len(node.inputs) > i else None


def _constant_scalar(value, what: str) -> tuple[int | None, str | None]:
    """(the integer value of a one-element constant, None) or (None, why not)."""
    if value.constant is None:
        return None, f"{what} is not a constant at lowering"
    array = np.asarray(value.constant)
    if array.size != 1 or array.dtype.kind not in "iu":
        return None, f"{what} must be one integer"
    return int(array.reshape(-1)[0]), None


def dft_geometry(node: Node) -> tuple[dict | None, str | None]:
    """(the DFT kernel's attrs, None), or (None, why the kernel cannot run `node`)."""
    x, y = node.inputs[0], node.outputs[0]
    if x.type.dtype not in _FLOATS or y.type.dtype != x.type.dtype:
        return None, f"the input is {x.type.dtype.name}; the kernel takes f32 and f64"
    dims = x.type.dims
    rank = len(dims)
    if rank < 2 or dims[-1] not in (1, 2):
        return None, "the input must have a last dim of 1 (real) or 2 (complex)"
    axis = -2
    if _input(node, 2) is not None:
        axis, why = _constant_scalar(node.inputs[2], "axis")
        if why:
            return None, why
    if not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
        return None, f"axis {axis} out of range for an input of rank {rank}"
    axis %= rank
    inverse, onesided = int(node.attrs.get("inverse", 0)), int(node.attrs.get("onesided", 0))
    irfft = bool(inverse and onesided)
    if _input(node, 1) is not None:
        length, why = _constant_scalar(node.inputs[1], "dft_length")
        if why:
            return None, why
    else:
        length = 2 * (dims[axis] - 1) if irfft else dims[axis]
    if length < 1:
        return None, f"the transform length {length} is not positive"
    expected = list(dims)
    expected[axis] = length if irfft else (length // 2 + 1 if onesided else length)
    expected[-1] = 1 if irfft else 2
    if tuple(y.type.dims) != tuple(expected):
        return None, f"the output dims {y.type.dims} are not the transform's {tuple(expected)}"
    attrs = {"axis": axis, "length": length, "inverse": int(bool(inverse))}
    attrs["onesided"] = int(bool(onesided))
    return attrs, None


def stft_geometry(node: Node) -> tuple[dict | None, str | None]:
    """(the STFT kernel's attrs, None), or (None, why the kernel cannot run `node`)."""
    x, y = node.inputs[0], node.outputs[0]
    if x.type.dtype not in _FLOATS or y.type.dtype != x.type.dtype:
        return None, f"the signal is {x.type.dtype.name}; the kernel takes f32 and f64"
    dims = x.type.dims
    if len(dims) != 3 or dims[2] not in (1, 2):
        return None, "the signal must be [batch, length, 1 or 2]"
    step, why = _constant_scalar(node.inputs[1], "frame_step")
    if why:
        return None, why
    window, frame_value = _input(node, 2), _input(node, 3)
    if window is not None and (window.type.dtype != x.type.dtype or len(window.type.dims) != 1):
        return None, "the window must be 1-D, of the signal's dtype"
    if frame_value is not None:
        frame, why = _constant_scalar(frame_value, "frame_length")
        if why:
            return None, why
    else:
        frame = window.type.dims[0] if window is not None else dims[1]
    if window is not None and window.type.dims[0] != frame:
        return None, f"a window of length {window.type.dims[0]} for frames of {frame}"
    if step < 1 or not 1 <= frame <= dims[1]:
        return None, f"frame_step {step} / frame_length {frame} outside the signal"
    onesided = int(bool(node.attrs.get("onesided", 1)))
    bins = frame // 2 + 1 if onesided else frame
    expected = (dims[0], (dims[1] - frame) // step + 1, bins, 2)
    if tuple(y.type.dims) != expected:
        return None, f"the output dims {y.type.dims} are not the frames' {expected}"
    return {"frame_step": step, "frame_length": frame, "onesided": onesided}, None


def mel_geometry(node: Node) -> tuple[dict | None, str | None]:
    """(the MelWeightMatrix kernel's attrs, None), or (None, why the kernel cannot run it)."""
    attrs = {}
    for i, name in enumerate(("num_mel_bins", "dft_length", "sample_rate")):
        attrs[name], why = _constant_scalar(node.inputs[i], name)
        if why:
            return None, why
        if attrs[name] < 1:
            return None, f"{name} {attrs[name]} is not positive"
    for edge in node.inputs[3:5]:
        if edge.type.dtype not in _FLOATS or int(np.prod(edge.type.dims)) != 1:
            return None, f"{edge.name!r} must be an f32 / f64 scalar"
    y = node.outputs[0]
    if y.type.dtype not in _FLOATS:
        return None, f"output_datatype {y.type.dtype.name}; the kernel writes f32 / f64"
    return attrs, None


_GEOMETRY = {"DFT": dft_geometry, "STFT": stft_geometry, "MelWeightMatrix": mel_geometry}


def refusal(node: Node) -> str | None:
    """Why src/cpu/dft.cpp / mel_weight.cpp cannot run `node`, or None."""
    return _GEOMETRY[node.op](node)[1]


def _signal_ok(node: Node, ctx=None) -> bool:
    return refusal(node) is None


def _attrs(node: Node, ctx: LoweringContext) -> dict:
    attrs, why = _GEOMETRY[node.op](node)
    if why:
        raise LoweringError(
            f"the {ctx.target} target cannot run {node.op} {node_label(node)!r}: {why}"
        )
    return attrs


@supports(_signal_ok)
def lower_dft(node: Node, ctx: LoweringContext) -> None:
    attrs = _attrs(node, ctx)
    ctx.emit("DFT", [ctx.input(node.inputs[0])], [ctx.output(node.outputs[0])], attrs, node.name)


@supports(_signal_ok)
def lower_stft(node: Node, ctx: LoweringContext) -> None:
    attrs = _attrs(node, ctx)
    ins = [ctx.input(node.inputs[0]), ctx.input(_input(node, 2))]
    ctx.emit("STFT", ins, [ctx.output(node.outputs[0])], attrs, node.name)


@supports(_signal_ok)
def lower_mel_weight_matrix(node: Node, ctx: LoweringContext) -> None:
    attrs = _attrs(node, ctx)
    ins = [ctx.input(node.inputs[3]), ctx.input(node.inputs[4])]
    ctx.emit("MelWeightMatrix", ins, [ctx.output(node.outputs[0])], attrs, node.name)


LOWERINGS = {
    "DFT": lower_dft,
    "STFT": lower_stft,
    "MelWeightMatrix": lower_mel_weight_matrix,
}
