# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of Softmax, LogSoftmax, Hardmax and the losses built on them."""

from ...errors import GraphError
from ..schema import define
from .. import infer
from ..types import TensorType

# The IR form is opset 13's: normalize along the single dimension `axis`. The importer
# rewrites the older "flatten to 2-D at axis" form into it (see frontends/onnx/softmax.py).
_TRAITS = {"Softmax": ("reduction",), "LogSoftmax": ("reduction",), "Hardmax": ("half_fp32",)}
for _op in ("Softmax", "LogSoftmax", "Hardmax"):
    define(
        _op, ("input",), ("output",), [("axis", "int", -1)], infer.same_as(0), traits=_TRAITS[_op]
    )

REDUCTIONS = ("none", "sum", "mean")


def _loss(with_log_prob: bool):
    """Loss per element of the target ([N, d1, ...]) for reduction 'none', else a scalar;
    SoftmaxCrossEntropyLoss may also give log_prob, shaped like the scores."""

    def infer_fn(ctx):
        scores, target = ctx.tensor(0), ctx.tensor(1)
        reduction = ctx.attrs["reduction"]
        if reduction not in REDUCTIONS:
            raise GraphError(f"{ctx.where}: reduction {reduction!r} is not one of {REDUCTIONS}")
        dims = target.dims if reduction == "none" else ()
        loss = TensorType(scores.dtype, dims)
        return [loss, scores] if with_log_prob else [loss]

    return infer_fn


define(
    "NegativeLogLikelihoodLoss",
    ("input", "target", "weight?"),
    ("loss",),
    [("ignore_index", "int", None), ("reduction", "str", "mean")],
    _loss(False),
    traits=("half_fp32",),
)
define(
    "SoftmaxCrossEntropyLoss",
    ("scores", "labels", "weights?"),
    ("output", "log_prob?"),
    [("ignore_index", "int", None), ("reduction", "str", "mean")],
    _loss(True),
    traits=("half_fp32",),
)
