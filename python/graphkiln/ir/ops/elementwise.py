# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of unary and binary math, comparisons, logic, bitwise, variadic (Sum/Max/...), Where,
Clip."""

from .. import infer
from ..dtypes import DType
from ..schema import REQUIRED, define
from ..types import TensorType

# Unary ops whose output has the input's type.
SAME_TYPE_UNARY = (
    "Abs",
    "Neg",
    "Exp",
    "Log",
    "Sqrt",
    "Reciprocal",
    "Floor",
    "Ceil",
    "Round",
    "Sign",
    "Sin",
    "Cos",
    "Tan",
    "Asin",
    "Acos",
    "Atan",
    "Sinh",
    "Cosh",
    "Asinh",
    "Acosh",
    "Atanh",
    "Erf",
    "Not",
    "BitwiseNot",
)
# computed in float32 under the gpu's fp16 / bf16 (their results overflow half easily)
_HALF_FP32 = ("Exp", "Log", "Reciprocal", "Pow")
for _name in SAME_TYPE_UNARY:
    define(
        _name,
        ("X",),
        ("Y",),
        (),
        infer.same_as(0),
        traits=("pointwise",) + (("half_fp32",) if _name in _HALF_FP32 else ()),
    )

define("IsNaN", ("X",), ("Y",), (), infer.elementwise(DType.bool), traits=("pointwise",))
define(
    "IsInf",
    ("X",),
    ("Y",),
    [("detect_negative", "int", 1), ("detect_positive", "int", 1)],
    infer.elementwise(DType.bool),
    traits=("pointwise",),
)

# Binary ops whose output has the type of input 0 (Pow: the base's type, whatever the exponent's).
SAME_TYPE_BINARY = (
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
    "And",
    "Or",
    "Xor",
)
for _name in SAME_TYPE_BINARY:
    define(
        _name,
        ("A", "B"),
        ("C",),
        (),
        infer.elementwise(),
        traits=("pointwise",) + (("half_fp32",) if _name in _HALF_FP32 else ()),
    )

define("Mod", ("A", "B"), ("C",), [("fmod", "int", 0)], infer.elementwise(), traits=("pointwise",))
define(
    "BitShift",
    ("X", "Y"),
    ("Z",),
    [("direction", "str", REQUIRED)],
    infer.elementwise(),
    traits=("pointwise",),
)

COMPARISONS = ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")
for _name in COMPARISONS:
    define(_name, ("A", "B"), ("C",), (), infer.elementwise(DType.bool), traits=("pointwise",))

VARIADIC = ("Sum", "Mean", "Max", "Min")
for _name in VARIADIC:
    define(_name, ("data_0*",), ("result",), (), infer.elementwise(), traits=("pointwise",))


def _where(ctx):
    dims = infer.broadcast_dims(*(ctx.tensor(i).dims for i in range(3)))
    return [TensorType(ctx.tensor(1).dtype, dims)]


define("Where", ("condition", "X", "Y"), ("output",), (), _where, traits=("pointwise",))

# Clip's bounds are inputs since opset 11; older attribute forms are converted on import.
define("Clip", ("input", "min?", "max?"), ("output",), (), infer.same_as(0), traits=("pointwise",))
