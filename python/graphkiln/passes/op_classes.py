# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Which IR ops the fusion passes treat alike."""

# One output element from the same-position elements of the (broadcast) inputs.
POINTWISE = frozenset({
    "Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Sign",
    "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
    "Erf", "IsNaN", "IsInf", "Not", "BitwiseNot", "Add", "Sub", "Mul", "Div", "Pow", "Mod",
    "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "And", "Or", "Xor", "Equal", "Less",
    "LessOrEqual", "Greater", "GreaterOrEqual", "Sum", "Mean", "Max", "Min", "Where", "Clip",
    "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Celu", "Sigmoid", "HardSigmoid", "HardSwish",
    "Softplus", "Softsign", "Tanh", "ThresholdedRelu", "Shrink", "Mish", "Gelu", "Swish", "Cast",
})

# Ops that lead a fused node with a pointwise epilogue, and the kind they give it.
EPILOGUE_ANCHORS = {"Conv": "conv", "ConvTranspose": "conv", "Gemm": "gemm", "MatMul": "matmul"}

# Reductions that take a pointwise prologue and epilogue.
REDUCTIONS = frozenset({
    "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
    "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "Softmax", "LogSoftmax",
    "LayerNormalization",
})

# Ops that only reinterpret the shape of contiguous data: no kernel runs.
VIEWS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
