# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The com.microsoft domain (onnxruntime's contrib ops, as its transformer optimizer writes
them): op name -> importer, from microsoft_activation.py, microsoft_norm.py,
microsoft_attention.py, microsoft_group_query_attention.py, microsoft_quantized.py,
microsoft_gather_quantized.py and microsoft_fused.py (and the rest below).
Each importer writes its op as IR ops, so every target runs it.
Opset 1 of the domain is imported; other ops of it are refused by name."""

from __future__ import annotations

from collections.abc import Callable

from . import microsoft_activation, microsoft_attention, microsoft_matmul_nbits, microsoft_norm
from . import microsoft_fused, microsoft_gather_quantized, microsoft_group_query_attention
from . import microsoft_quantized
from .microsoft_common import DOMAIN

OPSET = 1  # the com.microsoft opset version imported


def _table() -> dict[str, Callable]:
    table: dict[str, Callable] = {}
    for family in (
        microsoft_activation,
        microsoft_norm,
        microsoft_attention,
        microsoft_group_query_attention,
        microsoft_matmul_nbits,
        microsoft_gather_quantized,
        microsoft_quantized,
        microsoft_fused,
    ):
        for op, converter in family.OPS.items():
            if op in table:
                raise ValueError(f"com.microsoft op {op} is handled twice")
            table[op] = converter
    return table


TABLE = _table()

# ops onnxruntime registers in the default ONNX domain although ONNX does not define them
# (its transformer optimizer writes SimplifiedLayerNormalization there, e.g. for T5 and
# Llama RMS norms): imported with the com.microsoft converter of the same name
DEFAULT_DOMAIN_OPS = frozenset({"SimplifiedLayerNormalization"})


def find_microsoft_converter(op: str, version: int | None) -> tuple[Callable | None, str]:
    """(converter, "") for `op` of com.microsoft at opset `version`, else (None, why not)."""
    if version != OPSET:
        got = "no opset" if version is None else f"opset {version}"
        return None, f"graphkiln imports opset {OPSET} of {DOMAIN}; the model imports {got}"
    converter = TABLE.get(op)
    if converter is None:
        return None, f"graphkiln imports these {DOMAIN} ops only: {', '.join(sorted(TABLE))}"
    return converter, ""


def find_default_domain_extension(op: str) -> Callable | None:
    """The converter of an onnxruntime op written in the default domain, else None."""
    return TABLE[op] if op in DEFAULT_DOMAIN_OPS else None


def supported_microsoft_ops() -> list[str]:
    return sorted(TABLE)
