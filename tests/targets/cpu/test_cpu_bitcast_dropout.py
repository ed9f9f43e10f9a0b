# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""BitCast (the input's bytes read as another type of the same width) and Dropout in
inference (its output a view, its mask all true) on cpu, against ref and numpy."""

import numpy as np
import pytest
from onnx import TensorProto

import graphkiln as gk

from cpu_testing import check_cpu, node, onnx_model, rand


@pytest.mark.parametrize(
    "src, dst, onnx_dst",
    [
        (np.float32, np.int32, TensorProto.INT32),
        (np.int64, np.float64, TensorProto.DOUBLE),
        (np.uint16, np.int16, TensorProto.INT16),
    ],
)
@pytest.mark.parametrize("then_add", [False, True], ids=["graph_output", "read_by_add"])
def test_bitcast(src, dst, onnx_dst, then_add):
    x = (
        rand((3, 4), seed=1, low=-50, high=50)
        if np.dtype(src).kind == "f"
        else np.random.default_rng(2).integers(0, 30000, (3, 4))
    ).astype(src)
    nodes = [node("BitCast", ["x"], ["b"], to=onnx_dst)]
    if then_add:
        nodes.append(node("Add", ["b", "b"], ["y"]))
    else:
        nodes[0].output[0] = "y"
    model = onnx_model(nodes, {"x": (3, 4)}, {"y": (3, 4)}, opset=26, dtypes={"x": src, "y": dst})
    (y,) = check_cpu(model, {"x": x})
    expected = x.view(dst) * (2 if then_add else 1)
    np.testing.assert_array_equal(y, expected.astype(dst))


def test_dropout_in_inference_gives_the_input_and_a_true_mask():
    model = onnx_model(
        [node("Dropout", ["x", "ratio"], ["y", "mask"]), node("Relu", ["y"], ["z"])],
        {"x": (2, 5)},
        {"z": (2, 5), "mask": (2, 5)},
        {"ratio": np.array(0.3, np.float32)},
        dtypes={"mask": np.bool_},
    )
    x = rand((2, 5), seed=3)
    z, mask = check_cpu(model, {"x": x})
    np.testing.assert_array_equal(z, np.maximum(x, 0))
    assert mask.dtype == np.bool_ and mask.all()


def test_training_dropout_with_a_ratio_is_refused():
    model = onnx_model(
        [node("Dropout", ["x", "ratio", "training"], ["y"])],
        {"x": (2, 5)},
        {"y": (2, 5)},
        {"ratio": np.array(0.5, np.float32), "training": np.array(True)},
    )
    with pytest.raises(gk.CompileError, match="Dropout"):
        gk.parse_onnx_buffer(model).compile("cpu").run({"x": rand((2, 5), seed=4)})
