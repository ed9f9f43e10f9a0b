# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of tensors from nothing or from shapes: Constant, ConstantOfShape, Range, EyeLike, random ops."""

from .. import infer
from ..dtypes import DType
from ..schema import REQUIRED, define
from ..types import TensorType


def _constant(ctx):
    value = ctx.attrs["value"]
    return [TensorType(DType.from_numpy(value.dtype), value.shape)]


# Constant always holds its data in `value` (the importer turns value_float(s)/int(s)/
# string(s)/sparse_value into an array).
define("Constant", (), ("output",), [("value", "tensor", REQUIRED)], _constant)
