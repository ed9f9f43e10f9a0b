# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels of normalizations, checked against formulas written out here in float64."""

from functools import partial

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.ir import DType, Graph, TensorType
from op_testing import random_array, run_op

# test data: uniform in [-2, 2) unless a test says otherwise
rand = partial(random_array, low=-2.0, high=2.0)


def channel(p, ndim):
    return p.astype(np.float64).reshape((-1,) + (1,) * (ndim - 2))


def test_batch_norm_inference_and_training():
    x, scale, bias = rand((3, 4, 5, 2), 1), rand((4,), 2), rand((4,), 3)
    mean, var = rand((4,), 4), rand((4,), 5, low=0.5, high=2.0)
    xd = x.astype(np.float64)
    want = (xd - channel(mean, 4)) / np.sqrt(channel(var, 4) + 1e-3) * channel(scale, 4) + channel(
        bias, 4
    )
    got = run_op("BatchNormalization", [x, scale, bias, mean, var], epsilon=1e-3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

    y, running_mean, running_var = run_op(
        "BatchNormalization",
        [x, scale, bias, mean, var],
        num_outputs=3,
        training_mode=1,
        momentum=0.8,
    )
    batch_mean, batch_var = xd.mean(axis=(0, 2, 3)), xd.var(axis=(0, 2, 3))
    want = (xd - channel(batch_mean, 4)) / np.sqrt(channel(batch_var, 4) + 1e-5) * channel(
        scale, 4
    ) + channel(bias, 4)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(running_mean, 0.8 * mean + 0.2 * batch_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(running_var, 0.8 * var + 0.2 * batch_var, rtol=1e-5, atol=1e-6)

    half = run_op("BatchNormalization", [a.astype(np.float16) for a in (x, scale, bias, mean, var)])
    assert half.dtype == np.float16
    np.testing.assert_allclose(half, got, rtol=1e-2, atol=1e-2)


def test_instance_and_group_norm():
    x, scale, bias = rand((2, 6, 3, 4), 6), rand((6,), 7), rand((6,), 8)
    xd = x.astype(np.float64)
    mean, var = xd.mean(axis=(2, 3), keepdims=True), xd.var(axis=(2, 3), keepdims=True)
    want = (xd - mean) / np.sqrt(var + 1e-5) * channel(scale, 4) + channel(bias, 4)
    np.testing.assert_allclose(
        run_op("InstanceNormalization", [x, scale, bias]), want, rtol=1e-5, atol=1e-5
    )

    grouped = xd.reshape(2, 3, -1)
    normalized = (
        (grouped - grouped.mean(axis=2, keepdims=True))
        / np.sqrt(grouped.var(axis=2, keepdims=True) + 1e-4)
    ).reshape(x.shape)
    want = normalized * channel(scale, 4) + channel(bias, 4)
    got = run_op("GroupNormalization", [x, scale, bias], num_groups=3, epsilon=1e-4)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_layer_norm_outputs_and_stats(axis):
    x = rand((2, 3, 4), 9)
    norm_shape = x.shape[axis % 3 :]
    scale, bias = rand(norm_shape, 10), rand(norm_shape, 11)
    y, mean, inv_std = run_op("LayerNormalization", [x, scale, bias], num_outputs=3, axis=axis)
    axes = tuple(range(axis % 3, 3))
    xd = x.astype(np.float64)
    want_mean = xd.mean(axis=axes, keepdims=True)
    want_inv = 1 / np.sqrt(xd.var(axis=axes, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, (xd - want_mean) * want_inv * scale + bias, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mean, want_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(inv_std, want_inv, rtol=1e-5)
    assert mean.dtype == np.float32 and mean.shape == want_mean.shape


def test_layer_and_rms_norm_float16():
    x, scale = rand((3, 8), 12, dtype=np.float16), rand((8,), 13, dtype=np.float16)
    xd = x.astype(np.float64)
    y, mean = run_op("LayerNormalization", [x, scale], num_outputs=2)
    assert y.dtype == np.float16 and mean.dtype == np.float32
    want = (xd - xd.mean(-1, keepdims=True)) / np.sqrt(xd.var(-1, keepdims=True) + 1e-5) * scale
    np.testing.assert_allclose(y, want, rtol=1e-2, atol=1e-2)
    rms = run_op("RMSNormalization", [x, scale], epsilon=1e-6)
    assert rms.dtype == np.float16
    want = xd / np.sqrt((xd**2).mean(-1, keepdims=True) + 1e-6) * scale
    np.testing.assert_allclose(rms, want, rtol=1e-2, atol=1e-2)
    x32 = rand((2, 3, 4), 14)
    got = run_op("RMSNormalization", [x32, rand((4,), 15)], axis=1)
    xd = x32.astype(np.float64)
    np.testing.assert_allclose(
        got,
        xd / np.sqrt((xd**2).mean(axis=(1, 2), keepdims=True) + 1e-5) * rand((4,), 15),
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.parametrize("size", [3, 4])
def test_lrn_matches_naive(size):
    x = rand((2, 5, 3, 2), 16)
    got = run_op("LRN", [x], size=size, alpha=0.01, beta=0.6, bias=1.5)
    want = np.zeros(x.shape)
    for c in range(5):
        low, high = max(0, c - (size - 1) // 2), min(4, c + size // 2)
        square_sum = (x[:, low : high + 1].astype(np.float64) ** 2).sum(axis=1)
        want[:, c] = x[:, c] / (1.5 + 0.01 / size * square_sum) ** 0.6
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_mean_variance_and_lp_normalization():
    x = rand((2, 3, 4, 5), 17)
    xd = x.astype(np.float64)
    for axes in [(0, 2, 3), (1,)]:
        mean = xd.mean(axis=axes, keepdims=True)
        want = (xd - mean) / (np.sqrt(xd.var(axis=axes, keepdims=True)) + 1e-9)
        np.testing.assert_allclose(
            run_op("MeanVarianceNormalization", [x], axes=axes), want, rtol=1e-4, atol=1e-5
        )
    np.testing.assert_allclose(
        run_op("LpNormalization", [x], axis=1, p=1),
        xd / np.abs(xd).sum(axis=1, keepdims=True),
        rtol=1e-5,
    )
    np.testing.assert_allclose(
        run_op("LpNormalization", [x]), xd / np.sqrt((xd**2).sum(axis=-1, keepdims=True)), rtol=1e-5
    )
    zeros = np.zeros((2, 3), np.float32)
    np.testing.assert_array_equal(run_op("LpNormalization", [zeros]), zeros)


def test_shape_inference():
    g = Graph()
    x = g.add_input("x", TensorType(DType.bf16, ("B", "T", 16)))
    scale = g.add_input("s", TensorType(DType.bf16, (16,)))
    node = g.add_node("LayerNormalization", [x, scale], {"axis": -1}, num_outputs=3)
    assert node.outputs[0].type == x.type
    assert node.outputs[1].type == TensorType(DType.f32, ("B", "T", 1))
    stats = (
        g.add_node("LayerNormalization", [x, scale], {"axis": 1, "stash_type": 11}, num_outputs=3)
        .outputs[2]
        .type
    )
    assert stats == TensorType(DType.f64, ("B", 1, 1))
    m = g.add_input("m", TensorType(DType.f32, (16,)))
    bn = g.add_node(
        "BatchNormalization", [x, scale, scale, m, m], {"training_mode": 1}, num_outputs=3
    )
    assert bn.outputs[1].type == TensorType(DType.f32, (16,))


def test_import_old_forms():
    # opset 18 GroupNormalization scales per group; opset 7 BatchNormalization has `spatial`
    x = rand((1, 4, 3, 3), 18)
    group_scale, group_bias = np.array([2.0, -1.0], np.float32), np.array([0.5, 0.25], np.float32)
    nodes = [
        helper.make_node("GroupNormalization", ["x", "gs", "gb"], ["g"], num_groups=2),
        helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], spatial=1),
    ]
    params = [
        helper.make_tensor(name, TensorProto.FLOAT, a.shape, a.reshape(-1))
        for name, a in [
            ("gs", group_scale),
            ("gb", group_bias),
            ("s", np.ones(4, np.float32)),
            ("b", np.zeros(4, np.float32)),
            ("m", np.full(4, 0.5, np.float32)),
            ("v", np.full(4, 4.0, np.float32)),
        ]
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 3, 3])]
    model = make_model(
        nodes[:1],
        inputs,
        [helper.make_tensor_value_info("g", TensorProto.FLOAT, None)],
        params[:2],
        opset=18,
    )
    (g,) = graphkiln.parse_onnx_buffer(model.SerializeToString()).compile("ref").run({"x": x})
    grouped = x.astype(np.float64).reshape(1, 2, -1)
    normalized = (grouped - grouped.mean(2, keepdims=True)) / np.sqrt(
        grouped.var(2, keepdims=True) + 1e-5
    )
    want = normalized * group_scale[:, None] + group_bias[:, None]
    np.testing.assert_allclose(g, want.reshape(x.shape), rtol=1e-5, atol=1e-5)

    bn_model = make_model(
        nodes[1:],
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        params[2:],
        opset=7,
    )
    (y,) = graphkiln.parse_onnx_buffer(bn_model.SerializeToString()).compile("ref").run({"x": x})
    np.testing.assert_allclose(y, (x - 0.5) / np.sqrt(4.0 + 1e-5), rtol=1e-5, atol=1e-6)


def test_import_batch_norm_opset_9_training_outputs():
    # before opset 14, asking for the statistics outputs meant training mode
    x = rand((4, 2, 3), 19)
    node = helper.make_node(
        "BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], momentum=0.5
    )
    params = [
        helper.make_tensor(n, TensorProto.FLOAT, [2], v)
        for n, v in [("s", [1, 1]), ("b", [0, 0]), ("m", [0, 0]), ("v", [1, 1])]
    ]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "rm", "rv")]
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2, 3])],
        outputs,
        params,
        opset=9,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    assert prog.get_output_names() == ["y", "rm", "rv"]
    y, running_mean, running_var = prog.compile("ref").run({"x": x})
    xd = x.astype(np.float64)
    np.testing.assert_allclose(running_mean, 0.5 * xd.mean(axis=(0, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(running_var, 0.5 + 0.5 * xd.var(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_allclose(
        y,
        (xd - xd.mean(axis=(0, 2), keepdims=True))
        / np.sqrt(xd.var(axis=(0, 2), keepdims=True) + 1e-5),
        rtol=1e-4,
        atol=1e-5,
    )
