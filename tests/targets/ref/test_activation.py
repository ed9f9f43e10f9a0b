# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels of activations, checked against formulas written out here."""

import math

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.ir import DType, Graph, TensorType
from op_testing import random_array, run_op


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.log1p(np.exp(x))


_erf = np.vectorize(math.erf)

# (op, attributes, reference on float64)
CASES = [
    ("Relu", {}, lambda x: np.where(x > 0, x, 0)),
    ("LeakyRelu", {"alpha": 0.1}, lambda x: np.where(x > 0, x, 0.1 * x)),
    ("Elu", {"alpha": 0.7}, lambda x: np.where(x > 0, x, 0.7 * (np.exp(x) - 1))),
    (
        "Selu",
        {},
        lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (np.exp(x) - 1)),
    ),
    ("Celu", {"alpha": 2.0}, lambda x: np.maximum(0, x) + np.minimum(0, 2 * (np.exp(x / 2) - 1))),
    ("Sigmoid", {}, _sigmoid),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, lambda x: np.clip(0.3 * x + 0.4, 0, 1)),
    ("HardSwish", {}, lambda x: x * np.clip(x / 6 + 0.5, 0, 1)),
    ("Softplus", {}, _softplus),
    ("Softsign", {}, lambda x: x / (1 + np.abs(x))),
    ("Tanh", {}, np.tanh),
    ("ThresholdedRelu", {"alpha": 0.5}, lambda x: np.where(x > 0.5, x, 0)),
    (
        "Shrink",
        {"bias": 0.25, "lambd": 1.0},
        lambda x: np.where(x < -1, x + 0.25, np.where(x > 1, x - 0.25, 0)),
    ),
    ("Mish", {}, lambda x: x * np.tanh(_softplus(x))),
    ("Gelu", {}, lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    (
        "Gelu",
        {"approximate": "tanh"},
        lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
    ),
    ("Swish", {"alpha": 1.5}, lambda x: x * _sigmoid(1.5 * x)),
]


@pytest.mark.parametrize(
    "op,attrs,reference",
    CASES,
    ids=[f"{c[0]}{'-' + '-'.join(map(str, c[1].values())) if c[1] else ''}" for c in CASES],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activation_matches_formula(op, attrs, reference, dtype):
    x = random_array((4, 5), len(op), dtype=dtype, low=-4.0, high=4.0)
    y = run_op(op, [x], **attrs)
    assert y.dtype == dtype and y.shape == x.shape
    np.testing.assert_allclose(y, reference(x.astype(np.float64)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_narrow_floats_keep_their_dtype(dtype):
    x = random_array((8,), 3, dtype=dtype, low=-4.0, high=4.0)
    for op in ("Sigmoid", "Gelu", "Elu", "Relu"):
        y = run_op(op, [x])
        assert y.dtype == dtype
    np.testing.assert_allclose(
        run_op("Sigmoid", [x]).astype(np.float64), _sigmoid(x.astype(np.float64)), rtol=1e-2
    )


def test_sigmoid_and_softplus_are_stable_for_large_inputs():
    x = np.array([-1000.0, -30.0, 0.0, 30.0, 1000.0], np.float32)
    np.testing.assert_allclose(run_op("Sigmoid", [x]), [0, 9.357623e-14, 0.5, 1, 1], rtol=1e-5)
    np.testing.assert_allclose(
        run_op("Softplus", [x]), [0, 9.357623e-14, math.log(2), 30, 1000], rtol=1e-5
    )


def test_prelu_broadcasts_slope_and_handles_integers():
    x = random_array((2, 3, 4), 4, low=-4.0, high=4.0)
    slope = random_array((3, 1), 5, low=0.1, high=0.5)
    np.testing.assert_allclose(
        run_op("PRelu", [x, slope]), np.where(x < 0, x * slope, x), rtol=1e-6
    )
    i = np.array([-4, -1, 0, 5], np.int32)
    y = run_op("PRelu", [i, np.array([2], np.int32)])
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, [-8, -2, 0, 5])


def test_shrink_on_integers():
    x = np.array([-5, -1, 0, 1, 5], np.int8)
    y = run_op("Shrink", [x], bias=2.0, lambd=1.5)
    assert y.dtype == np.int8
    np.testing.assert_array_equal(y, [-3, 0, 0, 0, 3])


def test_shapes_pass_through_even_when_unknown():
    g = Graph()
    x = g.add_input("x", TensorType(DType.f16, ("N", 3)))
    u = g.add_input("u", TensorType(DType.f32, None))
    assert g.add("Gelu", x, approximate="tanh").type == TensorType(DType.f16, ("N", 3))
    assert g.add("PRelu", u, u).type == TensorType(DType.f32, None)
    assert g.add("Selu", u).type == TensorType(DType.f32, None)


def test_import_of_activation_attributes():
    model = make_model(
        [
            helper.make_node("LeakyRelu", ["x"], ["a"], alpha=0.2),
            helper.make_node("Gelu", ["a"], ["y"], approximate="tanh"),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        opset=20,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    assert [n.attrs for n in prog.graph.nodes if n.op in ("LeakyRelu", "Gelu")] == [
        {"alpha": pytest.approx(0.2)},
        {"approximate": "tanh"},
    ]
    x = random_array((2, 3), 6, low=-4.0, high=4.0)
    (y,) = prog.compile("ref").run({"x": x})
    a = np.where(x > 0, x, 0.2 * x).astype(np.float64)
    expected = 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a**3)))
    np.testing.assert_allclose(y, expected, rtol=1e-5)
