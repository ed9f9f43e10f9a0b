# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels of convolutions, checked against loop-per-output-pixel convolutions written here."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.ir import DType, Graph, TensorType
from op_testing import random_array, run_op


def naive_conv(x, w, b=None, strides=None, pads=None, dilations=None, group=1):
    n = x.ndim - 2
    strides, dilations = strides or [1] * n, dilations or [1] * n
    pads = pads or [0] * (2 * n)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(pads[i], pads[i + n]) for i in range(n)])
    kernel = w.shape[2:]
    out = [
        (xp.shape[2 + i] - (kernel[i] - 1) * dilations[i] - 1) // strides[i] + 1 for i in range(n)
    ]
    m_total, per_group = w.shape[0], x.shape[1] // group
    y = np.zeros((x.shape[0], m_total, *out))
    for m in range(m_total):
        g = m // (m_total // group)
        for pos in np.ndindex(*out):
            window = tuple(
                slice(
                    pos[i] * strides[i],
                    pos[i] * strides[i] + (kernel[i] - 1) * dilations[i] + 1,
                    dilations[i],
                )
                for i in range(n)
            )
            patch = xp[(slice(None), slice(g * per_group, (g + 1) * per_group)) + window]
            y[(slice(None), m) + pos] = (patch * w[m]).reshape(x.shape[0], -1).sum(axis=1)
    if b is not None:
        y += b.reshape((-1,) + (1,) * n)
    return y


@pytest.mark.parametrize(
    "x_shape, w_shape, attrs",
    [
        ((2, 4, 7, 6), (6, 4, 3, 3), {}),
        ((1, 4, 9, 8), (6, 2, 3, 2), {"group": 2, "strides": (2, 1), "pads": (1, 0, 2, 1)}),
        ((1, 3, 11, 10), (5, 3, 3, 3), {"dilations": (2, 3), "pads": (2, 2, 2, 2)}),
        ((1, 6, 8, 8), (6, 1, 7, 7), {"group": 6, "pads": (3, 3, 3, 3)}),  # depthwise 7x7
        ((1, 3, 8, 8), (6, 1, 3, 3), {"group": 3, "strides": (2, 2)}),  # channel multiplier 2
        ((2, 4, 9), (3, 4, 4), {"strides": (2,), "pads": (1, 2)}),  # 1d
        ((1, 2, 5, 6, 4), (3, 2, 2, 3, 2), {"pads": (1, 0, 1, 0, 1, 0)}),  # 3d
        ((1, 8, 5, 5), (16, 8, 1, 1), {}),  # pointwise
    ],
)
def test_conv_matches_naive(x_shape, w_shape, attrs):
    x, w, b = random_array(x_shape, 1), random_array(w_shape, 2), random_array((w_shape[0],), 3)
    got = run_op("Conv", [x, w, b], **attrs)
    want = naive_conv(
        x,
        w,
        b,
        attrs.get("strides"),
        attrs.get("pads"),
        attrs.get("dilations"),
        attrs.get("group", 1),
    )
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "auto_pad, pads",
    [("SAME_UPPER", (0, 0, 1, 1)), ("SAME_LOWER", (1, 1, 0, 0)), ("VALID", (0, 0, 0, 0))],
)
def test_conv_auto_pad(auto_pad, pads):
    # 6x5 input, 3x2 kernel, stride 2x1: SAME wants 3x5 outputs, so one row and one column of
    # padding, at the end for SAME_UPPER and at the beginning for SAME_LOWER
    x, w = random_array((1, 2, 6, 5), 4), random_array((3, 2, 3, 2), 5)
    got = run_op("Conv", [x, w], auto_pad=auto_pad, strides=(2, 1))
    np.testing.assert_allclose(
        got, naive_conv(x, w, strides=[2, 1], pads=list(pads)), rtol=1e-5, atol=1e-6
    )


def test_conv_float16_stays_float16():
    x = random_array((1, 3, 6, 6), 6, dtype=np.float16)
    w = random_array((4, 3, 3, 3), 7, dtype=np.float16)
    got = run_op("Conv", [x, w], pads=(1, 1, 1, 1))
    assert got.dtype == np.float16
    np.testing.assert_allclose(
        got.astype(np.float64), naive_conv(x, w, pads=[1, 1, 1, 1]), rtol=1e-2, atol=1e-2
    )


def naive_conv_transpose(x, w, b, strides, dilations, pads, output_padding, group):
    n = x.ndim - 2
    kernel, m_per_group = w.shape[2:], w.shape[1]
    per_group = x.shape[1] // group
    full = [
        (x.shape[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 + output_padding[i]
        for i in range(n)
    ]
    y = np.zeros((x.shape[0], m_per_group * group, *full))
    for c in range(x.shape[1]):
        g = c // per_group
        for pos in np.ndindex(*x.shape[2:]):
            for tap in np.ndindex(*kernel):
                at = tuple(pos[i] * strides[i] + tap[i] * dilations[i] for i in range(n))
                for m in range(m_per_group):
                    y[(slice(None), g * m_per_group + m) + at] += (
                        x[(slice(None), c) + pos] * w[(c, m) + tap]
                    )
    crop = tuple(slice(pads[i], full[i] - pads[i + n]) for i in range(n))
    return y[(slice(None), slice(None)) + crop] + b.reshape((-1,) + (1,) * n)


@pytest.mark.parametrize(
    "x_shape, w_shape, attrs",
    [
        ((1, 2, 3, 4), (2, 3, 3, 3), {}),
        ((2, 4, 3, 3), (4, 2, 3, 2), {"group": 2, "strides": (2, 3), "pads": (1, 0, 0, 1)}),
        (
            (1, 2, 4, 3),
            (2, 2, 2, 3),
            {"strides": (3, 2), "output_padding": (1, 1), "dilations": (2, 1)},
        ),
        ((1, 3, 5), (3, 2, 4), {"strides": (2,), "pads": (1, 2)}),
    ],
)
def test_conv_transpose_matches_naive(x_shape, w_shape, attrs):
    x, w = random_array(x_shape, 8), random_array(w_shape, 9)
    group = attrs.get("group", 1)
    b = random_array((w_shape[1] * group,), 10)
    n = len(x_shape) - 2
    got = run_op("ConvTranspose", [x, w, b], **attrs)
    want = naive_conv_transpose(
        x,
        w,
        b,
        attrs.get("strides", [1] * n),
        attrs.get("dilations", [1] * n),
        attrs.get("pads", [0] * 2 * n),
        attrs.get("output_padding", [0] * n),
        group,
    )
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv_transpose_output_shape_and_same():
    x, w = random_array((1, 2, 3, 3), 11), random_array((2, 1, 3, 3), 12)
    y = run_op("ConvTranspose", [x, w], strides=(2, 2), output_shape=(10, 8))
    assert y.shape == (1, 1, 10, 8)
    y = run_op("ConvTranspose", [x, w], strides=(2, 2), auto_pad="SAME_UPPER")
    assert y.shape == (1, 1, 6, 6)


def test_conv_integer_and_qlinear():
    rng = np.random.default_rng(13)
    x = rng.integers(0, 255, (1, 2, 5, 5)).astype(np.uint8)
    w = rng.integers(-20, 20, (3, 2, 3, 3)).astype(np.int8)
    x_zp, w_zp = np.array(7, np.uint8), np.array([1, -2, 0], np.int8)
    got = run_op("ConvInteger", [x, w, x_zp, w_zp], pads=(1, 1, 1, 1))
    centered_w = w.astype(np.int64) - w_zp.reshape(3, 1, 1, 1)
    want = naive_conv(x.astype(np.int64) - 7, centered_w, pads=[1, 1, 1, 1])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want.astype(np.int32))

    scales = np.array(0.02, np.float32), np.array([0.01, 0.03, 0.02], np.float32)
    y_scale, y_zp = np.array(9.0, np.float32), np.array(100, np.uint8)
    bias = np.array([50, -70, 10], np.int32)
    q = run_op(
        "QLinearConv",
        [x, scales[0], x_zp, w, scales[1], w_zp, y_scale, y_zp, bias],
        pads=(1, 1, 1, 1),
    )
    real = (want + bias.reshape(3, 1, 1)) * 0.02 * scales[1].astype(np.float64).reshape(3, 1, 1)
    expected = np.clip(np.rint(real / 9.0) + 100, 0, 255)
    assert q.dtype == np.uint8
    assert np.abs(q.astype(np.int64) - expected).max() <= 1  # float32 scales may flip a rounding


def test_deform_conv_offsets_shift_the_samples():
    x, w = random_array((1, 4, 6, 7), 14), random_array((4, 2, 3, 3), 15)
    offsets = np.zeros((1, 2 * 9 * 2, 4, 5), np.float32)  # 2 offset groups, zero offsets
    np.testing.assert_allclose(
        run_op("DeformConv", [x, w, offsets], group=2, offset_group=2),
        naive_conv(x, w, group=2),
        rtol=1e-5,
        atol=1e-5,
    )
    # every sample moved one column right == the conv of the input shifted one column left
    offsets.reshape(1, 2, 9, 2, 4, 5)[:, :, :, 1] = 1.0
    shifted = np.concatenate([x[..., 1:], np.zeros_like(x[..., :1])], axis=-1)
    mask = np.full((1, 2 * 9, 4, 5), 0.5, np.float32)
    b = random_array((4,), 16)
    got = run_op("DeformConv", [x, w, offsets, b, mask], group=2, offset_group=2)
    np.testing.assert_allclose(
        got, 0.5 * naive_conv(shifted, w, group=2) + b.reshape(4, 1, 1), rtol=1e-5, atol=1e-5
    )


def test_col2im_sums_overlapping_blocks():
    image, block, strides, pads = (5, 6), (2, 3), (1, 2), (1, 0, 0, 1)
    counts = [(5 + 1 + 0 - 2) // 1 + 1, (6 + 0 + 1 - 3) // 2 + 1]
    cols = random_array((2, 3 * 6, counts[0] * counts[1]), 17)
    got = run_op("Col2Im", [cols, np.array(image), np.array(block)], strides=strides, pads=pads)
    want = np.zeros((2, 3, 5 + 1, 6 + 1))
    blocks = cols.reshape(2, 3, 2, 3, *counts)
    for i, j in np.ndindex(*counts):
        want[:, :, i : i + 2, 2 * j : 2 * j + 3] += blocks[..., i, j]
    np.testing.assert_allclose(got, want[:, :, 1:6, 0:6], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("with_state", [False, True])
def test_causal_conv_with_state(with_state):
    x, w, b = random_array((2, 3, 5), 18), random_array((3, 1, 4), 19), random_array((3,), 20)
    state = random_array((2, 3, 3), 21) if with_state else None
    y, present = run_op("CausalConvWithState", [x, w, b, state], num_outputs=2, activation="silu")
    sequence = np.concatenate([state if with_state else np.zeros((2, 3, 3), np.float32), x], axis=2)
    linear = naive_conv(sequence, w, b, group=3)
    np.testing.assert_allclose(y, linear / (1 + np.exp(-linear)), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(present, sequence[:, :, -3:])


def test_shape_inference_with_symbolic_and_unknown_dims():
    g = Graph()
    x = g.add_input("x", TensorType(DType.f32, ("N", 3, 32, "W")))
    w = g.add_input("w", TensorType(DType.f32, (8, 3, 3, 3)))
    y = g.add("Conv", x, w, strides=(2, 2), pads=(1, 1, 1, 1))
    assert y.type.dims[:3] == ("N", 8, 16) and isinstance(y.type.dims[3], str)
    wt = g.add_input("wt", TensorType(DType.f32, (3, 4, 3, 3)))
    x2 = g.add_input("x2", TensorType(DType.f16, (1, 3, 5, 5)))
    t = g.add("ConvTranspose", x2, wt, strides=(2, 2), output_padding=(1, 1))
    assert t.type == TensorType(DType.f16, (1, 4, 12, 12))
    xu = g.add_input("xu", TensorType(DType.u8, None))
    wi = g.add_input("wi", TensorType(DType.i8, (8, 3, 3, 3)))
    integer = g.add("ConvInteger", xu, wi).type  # rank from the weights, dims unknown
    assert integer.dtype == DType.i32 and integer.rank == 4


def test_import_conv_with_inferred_kernel_and_same_padding():
    w = random_array((4, 2, 3, 3), 22)
    node = helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 7, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.reshape(-1))],
        opset=11,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    x = random_array((1, 2, 7, 7), 23)
    (y,) = prog.compile("ref").run({"x": x})
    # SAME_UPPER for 7 inputs, stride 2, kernel 3: 4 outputs, 2 padding split 1 / 1
    np.testing.assert_allclose(
        y, naive_conv(x, w, strides=[2, 2], pads=[1, 1, 1, 1]), rtol=1e-5, atol=1e-5
    )
