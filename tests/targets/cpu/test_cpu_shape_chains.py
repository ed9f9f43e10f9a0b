# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Shape computations of a model with symbolic dims (Shape -> Gather -> Cast / Div / Mul ->
Concat -> Reshape / Expand / ConstantOfShape / Range / Resize sizes), as exporters write
them: the plan per input shape folds them all to constants, so only data ops are lowered
and the cpu target runs the model natively (no fallback) at every shape, matching ref."""

import numpy as np
import onnx
from onnx import TensorProto, helper

import graphkiln as gk

from cpu_testing import rand


def _model() -> bytes:
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["s"]),
        n("Gather", ["s", "zero"], ["b"], axis=0),  # batch
        n("Gather", ["s", "two"], ["h"], axis=0),  # height
        n("Gather", ["s", "three"], ["w"], axis=0),  # width
        n("Cast", ["h"], ["hf"], to=TensorProto.FLOAT),  # pointwise shape arithmetic
        n("Mul", ["hf", "half"], ["hh"]),
        n("Cast", ["hh"], ["h2"], to=TensorProto.INT64),
        n("Div", ["w", "two_s"], ["w2"]),
        n("Concat", ["b", "c4", "h2", "w2"], ["pooled_shape"], axis=0),
        n("AveragePool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        n("Reshape", ["p", "pooled_shape"], ["p2"]),
        # upsample back to the input's size: Resize sizes from the input's Shape
        n("Resize", ["p2", "", "", "s"], ["up"], mode="linear"),
        n(
            "ConstantOfShape",
            ["s"],
            ["ones"],
            value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5]),
        ),
        n("Add", ["up", "ones"], ["y0"]),
        # a per-column ramp from Range(0, w), broadcast to the input by Expand
        n("Squeeze", ["w", "zero"], ["w_scalar"]),
        n("Range", ["zero_s", "w_scalar", "one_s"], ["cols"]),
        n("Cast", ["cols"], ["colsf"], to=TensorProto.FLOAT),
        n("Expand", ["colsf", "s"], ["ramp"]),
        n("Mul", ["y0", "ramp"], ["y"]),
    ]
    inits = [
        helper.make_tensor("zero", TensorProto.INT64, [1], [0]),
        helper.make_tensor("two", TensorProto.INT64, [1], [2]),
        helper.make_tensor("three", TensorProto.INT64, [1], [3]),
        helper.make_tensor("half", TensorProto.FLOAT, [1], [0.5]),
        helper.make_tensor("two_s", TensorProto.INT64, [], [2]),
        helper.make_tensor("zero_s", TensorProto.INT64, [], [0]),
        helper.make_tensor("one_s", TensorProto.INT64, [], [1]),
        helper.make_tensor("c4", TensorProto.INT64, [1], [4]),
    ]
    graph = helper.make_graph(
        nodes,
        "shape_chains",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, "H", "W"])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


def test_shape_chains_fold_and_run_natively_at_several_shapes():
    model = _model()
    ref = gk.parse_onnx_buffer(model, default_dim=None).compile("ref")
    prog = gk.parse_onnx_buffer(model, default_dim=None).compile("cpu")  # no fallback
    for seed, shape in enumerate([(1, 4, 6, 8), (2, 4, 10, 6), (3, 4, 4, 12)]):
        x = rand(shape, seed)
        (want,) = ref.run({"x": x})
        (got,) = prog.run({"x": x})
        assert got.shape == shape
        assert np.abs(want).max() > 0.1  # not all zeros
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
