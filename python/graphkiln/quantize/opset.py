# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The opset a QDQ model needs: DequantizeLinear's `axis` (per-channel scales) came with
opset 13. A model of an older default-domain opset is converted by onnx's version converter;
one it cannot convert is refused, naming the opset."""

from __future__ import annotations

import onnx

MIN_OPSET = 13


def default_opset(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    raise ValueError(
        "the model imports no default-domain (ai.onnx) opset, so it has no Conv, MatMul or "
        "Gemm to quantize"
    )


def at_least_13(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` itself when its default opset is 13 or newer, else a converted copy."""
    version = default_opset(model)
    if version >= MIN_OPSET:
        return model
    try:
        converted = onnx.version_converter.convert_version(model, MIN_OPSET)
        onnx.checker.check_model(converted)
    except Exception as exc:  # noqa: BLE001 - the converter raises several kinds
        raise ValueError(
            f"the model uses opset {version}; int8 quantization writes opset {MIN_OPSET} "
            f"(DequantizeLinear with a per-channel axis), and onnx's version converter could "
            f"not bring this model to opset {MIN_OPSET} ({type(exc).__name__}: {exc}); "
            f"export the model at opset {MIN_OPSET} or newer"
        ) from None
    return converted
