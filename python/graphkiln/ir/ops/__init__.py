# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Op schemas, one module per family; importing this package registers them all.

The family names below are also the module names of the ONNX importers
(frontends/onnx/<family>.py) and of the ref kernels (targets/ref/<family>.py)."""

from importlib import import_module

# Families of ops that come from models, in the order they are registered.
MODEL_FAMILIES = (
    "elementwise",
    "activation",
    "cast",
    "tensor",
    "indexing",
    "generate",
    "conv",
    "pool",
    "normalization",
    "image",
    "reduce",
    "linalg",
    "softmax",
    "quantize",
    "attention",
    "rnn",
    "signal",
    "control",
    "sequence",
    "text",
)
# Families of ops only the compiler makes.
COMPILER_FAMILIES = ("fused",)

FAMILIES = tuple(import_module(f".{name}", __name__) for name in MODEL_FAMILIES + COMPILER_FAMILIES)
