# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of normalizations: BatchNormalization, LayerNormalization, InstanceNormalization,
GroupNormalization, RMSNormalization, LRN, MeanVarianceNormalization, LpNormalization."""

from .. import infer
from ..dtypes import DType
from ..schema import REQUIRED, define
from ..types import TensorType

EPSILON = ("epsilon", "float", 1e-5)
STASH = ("stash_type", "int", 1)  # an ONNX element type code; 1 is float32


def _batch_norm(ctx):
    x, mean = ctx.tensor(0), ctx.tensor(3)
    return [x, mean, ctx.tensor(4)]


def _stats(ctx):
    """Y like X; Mean and InvStdDev in the stash type, kept dims 1 from `axis` on."""
    x = ctx.tensor(0)
    stash = DType.from_onnx(ctx.attrs["stash_type"])
    if x.dims is None:
        stats = infer.unknown(stash, None)
    else:
        axis = infer.normalize_axis(ctx.attrs["axis"], len(x.dims), ctx.where)
        stats = TensorType(stash, tuple(x.dims[:axis]) + (1,) * (len(x.dims) - axis))
    return [x, stats, stats]


define(
    "BatchNormalization",
    ("X", "scale", "B", "input_mean", "input_var"),
    ("Y", "running_mean?", "running_var?"),
    [EPSILON, ("momentum", "float", 0.9), ("training_mode", "int", 0)],
    _batch_norm,
    traits=("half_fp32",),
)
define(
    "InstanceNormalization",
    ("input", "scale", "B"),
    ("output",),
    [EPSILON],
    infer.same_as(0),
    traits=("half_fp32",),
)
define(
    "LayerNormalization",
    ("X", "Scale", "B?"),
    ("Y", "Mean?", "InvStdDev?"),
    [("axis", "int", -1), EPSILON, STASH],
    _stats,
    traits=("reduction",),
)
define(
    "GroupNormalization",
    ("X", "scale", "bias"),
    ("Y",),
    [EPSILON, ("num_groups", "int", REQUIRED), STASH],
    infer.same_as(0),
    traits=("half_fp32",),
)
define(
    "RMSNormalization",
    ("X", "scale"),
    ("Y",),
    [("axis", "int", -1), EPSILON, STASH],
    infer.same_as(0),
)
define(
    "LRN",
    ("X",),
    ("Y",),
    [
        ("alpha", "float", 1e-4),
        ("beta", "float", 0.75),
        ("bias", "float", 1.0),
        ("size", "int", REQUIRED),
    ],
    infer.same_as(0),
)
define("MeanVarianceNormalization", ("X",), ("Y",), [("axes", "ints", (0, 2, 3))], infer.same_as(0))
define(
    "LpNormalization",
    ("input",),
    ("output",),
    [("axis", "int", -1), ("p", "int", 2)],
    infer.same_as(0),
    traits=("half_fp32",),
)
