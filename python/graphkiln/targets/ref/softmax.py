# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of Softmax, LogSoftmax, Hardmax and the losses built on them."""

import ml_dtypes
import numpy as np

_HALF = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def _wide(x):
    """Half-precision floats are computed in float32; the evaluator casts the result back."""
    return x.astype(np.float32) if x.dtype in _HALF else x


def _rounder(dtype):
    """ONNX defines Softmax / LogSoftmax by a function body whose every step (Sub, Exp,
    ReduceSum, Div / Log) yields the input type: for half types, round each step to it."""
    if dtype in _HALF:
        return lambda v: v.astype(dtype).astype(np.float32)
    return lambda v: v


def _shifted(x, axis):
    # subtracting the maximum keeps exp from overflowing; it cancels out in the ratio
    peak = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    return x - np.where(np.isfinite(peak), peak, 0)


def Softmax(input, *, axis):
    step = _rounder(input.dtype)
    exps = step(np.exp(step(_shifted(_wide(input), axis))))
    with np.errstate(invalid="ignore"):  # an all -inf slice is 0 / 0 = NaN, as in ONNX
        return exps / step(np.sum(exps, axis=axis, keepdims=True))


def log_softmax(x, axis):
    step = _rounder(x.dtype)
    shifted = step(_shifted(_wide(x), axis))
    with np.errstate(divide="ignore"):
        total = step(np.sum(step(np.exp(shifted)), axis=axis, keepdims=True))
        return shifted - step(np.log(total))


def LogSoftmax(input, *, axis):
    return log_softmax(input, axis)


def Hardmax(input, *, axis):
    # 1 at the first maximum along the axis, 0 elsewhere
    axis = axis % max(input.ndim, 1)
    result = np.zeros(input.shape, dtype=input.dtype)
    if input.size:
        first = np.expand_dims(np.argmax(_wide(input), axis=axis), axis)
        np.put_along_axis(result, first, np.ones((), dtype=input.dtype), axis=axis)
    return result


def NegativeLogLikelihoodLoss(input, target, weight=None, *, ignore_index, reduction):
    """loss[n, d...] = -input[n, target[n, d...], d...] * weight[target[n, d...]], zero where
    the target is ignore_index; 'mean' divides by the total weight of the targets kept."""
    x = _wide(input)
    target = target.astype(np.int64)
    kept = np.ones(target.shape, dtype=bool) if ignore_index is None else target != ignore_index
    # an ignored target may be out of range (e.g. -100): read class 0 there, then drop it
    classes = np.where(kept, target, 0)
    picked = np.take_along_axis(x, np.expand_dims(classes, 1), axis=1).squeeze(1)
    weights = np.ones(target.shape, dtype=x.dtype) if weight is None else _wide(weight)[classes]
    weights = np.where(kept, weights, np.zeros((), dtype=weights.dtype))
    loss = -picked * weights
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.sum(loss)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sum(loss) / np.sum(weights)


def SoftmaxCrossEntropyLoss(scores, labels, weights=None, *, ignore_index, reduction):
    log_prob = log_softmax(scores, 1)
    loss = NegativeLogLikelihoodLoss(
        log_prob, labels, weights, ignore_index=ignore_index, reduction=reduction
    )
    return loss, log_prob


KERNELS = {
    "Softmax": Softmax,
    "LogSoftmax": LogSoftmax,
    "Hardmax": Hardmax,
    "NegativeLogLikelihoodLoss": NegativeLogLikelihoodLoss,
    "SoftmaxCrossEntropyLoss": SoftmaxCrossEntropyLoss,
}
