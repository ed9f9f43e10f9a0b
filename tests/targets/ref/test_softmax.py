# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels, shape inference and importers of Softmax, LogSoftmax, Hardmax,
NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss."""

from functools import partial

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.ir import DType, Graph, TensorType
import op_testing

# every output dim of these ops is inferred statically: check the inferred shapes exactly
run_op = partial(op_testing.run_op, exact=True)


@pytest.fixture
def x():
    return np.random.default_rng(31).standard_normal((2, 3, 4)).astype(np.float32) * 3


def _softmax_along(x, axis):
    """exp(x) / sum(exp(x)) along one axis, in float64, no shifting (small inputs)."""
    e = np.exp(x.astype(np.float64))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_log_softmax_hardmax(axis, x):
    np.testing.assert_allclose(
        run_op("Softmax", [x], axis=axis), _softmax_along(x, axis), rtol=1e-5
    )
    np.testing.assert_allclose(
        run_op("LogSoftmax", [x], axis=axis), np.log(_softmax_along(x, axis)), rtol=1e-5, atol=1e-6
    )
    hard = run_op("Hardmax", [x], axis=axis)
    assert hard.sum() == x.size // x.shape[axis]
    assert (
        np.take_along_axis(x, np.expand_dims(np.argmax(x, axis=axis), axis), axis)
        == np.max(x, axis=axis, keepdims=True)
    ).all()
    assert ((hard == 1) == (x == np.max(x, axis=axis, keepdims=True))).all()


def test_softmax_is_stable_and_half_keeps_dtype():
    big = np.array([[1000.0, 1001.0, -np.inf]], np.float32)
    np.testing.assert_allclose(
        run_op("Softmax", [big]), [[1 / (1 + np.e), np.e / (1 + np.e), 0]], rtol=1e-6
    )
    half = np.random.default_rng(32).standard_normal((3, 50)).astype(np.float16)
    got = run_op("Softmax", [half])
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, _softmax_along(half, -1), rtol=5e-3, atol=1e-4)
    tie = np.array([[2, 5, 5]], np.float16)
    np.testing.assert_array_equal(run_op("Hardmax", [tie]), [[0, 1, 0]])


def _nll(log_p, target, weight, ignore_index, reduction):
    """The loss written out per element, independent of the kernel's gather."""
    n, c = log_p.shape[:2]
    loss = np.zeros(target.shape, np.float64)
    used = np.zeros(target.shape, np.float64)
    for index in np.ndindex(*target.shape):
        t = int(target[index])
        if t == ignore_index:
            continue
        w = 1.0 if weight is None else float(weight[t])
        loss[index] = -float(log_p[(index[0], t) + index[1:]]) * w
        used[index] = w
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / used.sum()


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_and_cross_entropy(reduction, weighted):
    rng = np.random.default_rng(33)
    scores = rng.standard_normal((3, 5, 2)).astype(np.float32)
    target = rng.integers(0, 5, (3, 2)).astype(np.int64)
    target[1, 0] = -100  # ignored, and outside [0, C)
    weight = rng.uniform(0.5, 2, 5).astype(np.float32) if weighted else None
    log_p = np.log(_softmax_along(scores, 1))
    want = _nll(log_p, target, weight, -100, reduction)
    got = run_op(
        "NegativeLogLikelihoodLoss",
        [log_p.astype(np.float32), target, weight],
        reduction=reduction,
        ignore_index=-100,
    )
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    loss, log_prob = run_op(
        "SoftmaxCrossEntropyLoss",
        [scores, target, weight],
        num_outputs=2,
        reduction=reduction,
        ignore_index=-100,
    )
    np.testing.assert_allclose(loss, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(log_prob, log_p, rtol=1e-5, atol=1e-6)


def test_loss_inference():
    g = Graph()
    scores = g.add_input("s", TensorType(DType.f16, ("N", 10, "D")))
    labels = g.add_input("l", TensorType(DType.i32, ("N", "D")))
    loss, log_prob = g.add_node(
        "SoftmaxCrossEntropyLoss", [scores, labels], {"reduction": "none"}, 2
    ).outputs
    assert loss.type == TensorType(DType.f16, ("N", "D"))
    assert log_prob.type == scores.type
    assert g.add("NegativeLogLikelihoodLoss", scores, labels).type == TensorType(DType.f16, ())
    unknown = g.add_input("u", TensorType(DType.f32, None))
    assert g.add("Softmax", unknown).type == TensorType(DType.f32, None)


def _old_softmax_model(op, dims, axis):
    node = helper.make_node(op, ["x"], ["y"], **({} if axis is None else {"axis": axis}))
    return make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        opset=11,
    )


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
def test_import_opset_11_flattens_at_axis(op, x):
    # the old default axis=1 on [2, 3, 4] normalizes over the 12 values of each batch row
    flat = x.reshape(2, 12)
    if op == "Hardmax":
        want = (flat == flat.max(axis=1, keepdims=True)).astype(np.float32)
    else:
        want = _softmax_along(flat, 1)
        want = np.log(want) if op == "LogSoftmax" else want
    for dims in ([2, 3, 4], ["N", 3, 4]):  # static: Reshapes; symbolic: Flatten + Shape
        prog = graphkiln.parse_onnx_buffer(
            _old_softmax_model(op, dims, None).SerializeToString(), default_dim=None
        )
        assert op in [n.op for n in prog.graph.nodes]
        (y,) = prog.compile("ref").run({"x": x})
        np.testing.assert_allclose(y, want.reshape(x.shape), rtol=1e-5, atol=1e-6)


def test_import_opset_11_single_wide_axis_needs_no_reshape():
    x = np.random.default_rng(34).standard_normal((2, 6, 1, 1)).astype(np.float32)
    prog = graphkiln.parse_onnx_buffer(
        _old_softmax_model("Softmax", [2, 6, 1, 1], 1).SerializeToString()
    )
    (node,) = [n for n in prog.graph.nodes]
    assert node.op == "Softmax" and node.attrs["axis"] == 1
    (y,) = prog.compile("ref").run({"x": x})
    np.testing.assert_allclose(y, _softmax_along(x, 1), rtol=1e-5)
