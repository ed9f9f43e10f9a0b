# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Quantize a small CNN with onnxruntime's own quantizer and record onnxruntime's outputs,
so that CI compares graphkiln's int8 execution with onnxruntime without it
(tests/frontends/test_quantized_models.py):

- tests/frontends/data/small_cnn_<variant>.onnx: the float CNN of
  tests/frontends/ort_tool_models.py through `onnxruntime.quantization.quantize_static`,
  calibrated on seeded images; variants: qdq_u8 (QDQ, u8 activations, per-channel i8
  weights: the quantizer's usual output), qdq_s8 (QDQ, i8 activations), qop (QOperator:
  QLinearConv, QLinearAdd, ...);
- small_cnn_<variant>.npz: onnxruntime's outputs on seeded inputs (keys "input", "output");
- bert_tiny_<variant>.onnx / .npz: tests/models/dynamic/bert_tiny.onnx quantized by
  quantize_dynamic (dynamic: DynamicQuantizeLinear + MatMulInteger) and by quantize_static
  (qdq: QDQ; qop: QOperator, QLinearMatMul and the QLinear* ops; u8 activations, i8
  weights, calibrated on seeded sentences of shape (2, 12)),
  with onnxruntime's outputs on other seeded sentences (keys "input:<name>",
  "output:<name>");
- lstm_<direction>_<per>.onnx / .npz: a one-layer LSTM (forward with per-direction weight
  scales, bidirectional with per-row scales) through quantize_dynamic (DynamicQuantizeLSTM),
  with onnxruntime's outputs on a seeded sequence (keys "input:x", "output:<name>").

onnxruntime is no dependency of graphkiln (the test extra has it); without it installed, run:
    pip install --target /tmp/ortsite onnxruntime
    PYTHONPATH=/tmp/ortsite:python python tools/record_quantized_models.py
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "frontends", "data")
sys.path.insert(0, os.path.join(ROOT, "tests", "frontends"))
from ort_tool_models import float_cnn, images  # noqa: E402  (the tests' float CNN)


def main() -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([{"input": x} for x in images(1, 8)])

        def get_next(self):
            return next(self.feeds, None)

    variants = {
        "qdq_u8": (QuantFormat.QDQ, QuantType.QUInt8),
        "qdq_s8": (QuantFormat.QDQ, QuantType.QInt8),
        "qop": (QuantFormat.QOperator, QuantType.QUInt8),
    }
    feeds = images(2, 1)[0]
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "small_cnn.onnx")
        onnx.save(float_cnn(), source)
        for name, (fmt, activations) in variants.items():
            path = os.path.join(DATA, f"small_cnn_{name}.onnx")
            quantize_static(
                source,
                path,
                Reader(),
                quant_format=fmt,
                per_channel=True,
                activation_type=activations,
                weight_type=QuantType.QInt8,
            )
            session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            (logits,) = session.run(None, {"input": feeds})
            np.savez_compressed(
                os.path.join(DATA, f"small_cnn_{name}.npz"), input=feeds, output=logits
            )
            print(f"{path}: {os.path.getsize(path)} bytes, onnxruntime {ort.__version__}")


def bert_feeds(seed: int) -> dict:
    import sys

    sys.path.insert(0, os.path.join(ROOT, "tools"))
    from more_dynamic_models_2 import make_inputs_2

    shapes = {name: (2, 12) for name in ("input_ids", "token_type_ids", "attention_mask")}
    return make_inputs_2("bert_tiny", shapes, np.random.default_rng(seed))


def record_bert() -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType
    from onnxruntime.quantization import quantize_dynamic, quantize_static

    class Sentences(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([bert_feeds(seed) for seed in range(10, 14)])

        def get_next(self):
            return next(self.feeds, None)

    source = os.path.join(ROOT, "tests", "models", "dynamic", "bert_tiny.onnx")
    feeds = bert_feeds(20)
    for name in ("dynamic", "qdq", "qop"):
        path = os.path.join(DATA, f"bert_tiny_{name}.onnx")
        if name == "dynamic":
            quantize_dynamic(source, path, weight_type=QuantType.QInt8)
        else:
            quantize_static(
                source,
                path,
                Sentences(),
                quant_format=QuantFormat.QDQ if name == "qdq" else QuantFormat.QOperator,
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
            )
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        outputs = dict(zip(names, session.run(names, feeds)))
        arrays = {f"input:{k}": v for k, v in feeds.items()}
        arrays.update({f"output:{k}": v for k, v in outputs.items()})
        np.savez_compressed(os.path.join(DATA, f"bert_tiny_{name}.npz"), **arrays)
        print(f"{path}: {os.path.getsize(path)} bytes")


def float_lstm(direction: str, seed: int = 3) -> onnx.ModelProto:
    steps, batch, inputs, hidden = LSTM_SHAPE
    d = 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(seed)
    weights = {
        "W": rng.standard_normal((d, 4 * hidden, inputs)) * 0.3,
        "R": rng.standard_normal((d, 4 * hidden, hidden)) * 0.3,
        "B": rng.standard_normal((d, 8 * hidden)) * 0.1,
    }
    lstm = helper.make_node(
        "LSTM", ["x", "W", "R", "B"], ["y", "y_h", "y_c"], hidden_size=hidden, direction=direction
    )
    outputs = [
        helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "y_h", "y_c")
    ]
    graph = helper.make_graph(
        [lstm],
        "lstm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [steps, batch, inputs])],
        outputs,
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model


LSTM_SHAPE = (7, 2, 12, 16)  # steps, batch, input size, hidden size


def record_lstm() -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    x = np.random.default_rng(4).standard_normal(LSTM_SHAPE[:3]).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        for direction, per_channel in (("forward", False), ("bidirectional", True)):
            source = os.path.join(tmp, "lstm.onnx")
            onnx.save(float_lstm(direction), source)
            name = f"lstm_{direction}_{'rows' if per_channel else 'directions'}"
            path = os.path.join(DATA, f"{name}.onnx")
            quantize_dynamic(
                source,
                path,
                weight_type=QuantType.QInt8,
                per_channel=per_channel,
                op_types_to_quantize=["LSTM"],
            )
            session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            names = [o.name for o in session.get_outputs()]
            outputs = dict(zip(names, session.run(names, {"x": x})))
            arrays = {"input:x": x, **{f"output:{k}": v for k, v in outputs.items()}}
            np.savez_compressed(os.path.join(DATA, f"{name}.npz"), **arrays)
            print(f"{path}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
    record_bert()
    record_lstm()
