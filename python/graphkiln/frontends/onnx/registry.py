# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The ONNX importer modules, one per op family (the families are listed in ir/ops)."""

from importlib import import_module

from ...ir.ops import MODEL_FAMILIES

FAMILIES = tuple(import_module(f".{name}", __package__) for name in MODEL_FAMILIES)
