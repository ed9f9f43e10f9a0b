# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels of pooling, checked against loop-per-output-pixel poolings written here."""

import itertools
import math

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.ir import DType, Graph, TensorType
from op_testing import random_array, run_op


def naive_pool(
    x,
    kernel,
    kind,
    strides=None,
    pads=None,
    dilations=None,
    ceil_mode=False,
    count_include_pad=False,
    p=2,
):
    """Every output pixel from the list of its window's taps; returns (values, flat indices)."""
    n = len(kernel)
    sizes = x.shape[2:]
    strides, dilations = strides or [1] * n, dilations or [1] * n
    pads = pads or [0] * (2 * n)
    out = []
    for i in range(n):
        span = sizes[i] + pads[i] + pads[i + n] - (kernel[i] - 1) * dilations[i] - 1
        count = (math.ceil(span / strides[i]) if ceil_mode else span // strides[i]) + 1
        if ceil_mode and (count - 1) * strides[i] >= sizes[i] + pads[i]:
            count -= 1
        out.append(count)
    y = np.zeros(x.shape[:2] + tuple(out))
    index = np.zeros(y.shape, np.int64)
    for nc in np.ndindex(*x.shape[:2]):
        for pos in np.ndindex(*out):
            taps = itertools.product(
                *(
                    [pos[i] * strides[i] - pads[i] + t * dilations[i] for t in range(kernel[i])]
                    for i in range(n)
                )
            )
            inside, padded = [], 0
            for tap in taps:
                if all(0 <= tap[i] < sizes[i] for i in range(n)):
                    inside.append(tap)
                if all(-pads[i] <= tap[i] < sizes[i] + pads[i + n] for i in range(n)):
                    padded += 1
            values = [float(x[nc + tap]) for tap in inside]
            if kind == "max":
                best = int(np.argmax(values))
                y[nc + pos] = values[best]
                index[nc + pos] = np.ravel_multi_index(nc + inside[best], x.shape)
            elif kind == "avg":
                y[nc + pos] = sum(values) / (padded if count_include_pad else len(inside))
            else:
                y[nc + pos] = sum(abs(v) ** p for v in values) ** (1 / p)
    return y, index


@pytest.mark.parametrize(
    "attrs",
    [
        {"kernel_shape": (3, 3)},
        {"kernel_shape": (3, 2), "strides": (2, 2), "pads": (1, 0, 1, 1)},
        {"kernel_shape": (3, 3), "strides": (2, 2), "pads": (1, 1, 1, 1), "count_include_pad": 1},
        {
            "kernel_shape": (2, 3),
            "strides": (2, 2),
            "ceil_mode": 1,
            "pads": (1, 1, 0, 0),
            "count_include_pad": 1,
        },
        {"kernel_shape": (2, 2), "dilations": (2, 3), "strides": (3, 1), "ceil_mode": 1},
    ],
)
@pytest.mark.parametrize("kind", ["avg", "max", "lp"])
def test_pool_2d_matches_naive(attrs, kind):
    x = random_array((2, 3, 7, 8), 1)
    op = {"avg": "AveragePool", "max": "MaxPool", "lp": "LpPool"}[kind]
    extra = {k: v for k, v in attrs.items() if kind == "avg" or k != "count_include_pad"}
    if kind == "lp":
        extra["p"] = 3
    want, want_index = naive_pool(
        x,
        attrs["kernel_shape"],
        kind,
        attrs.get("strides"),
        attrs.get("pads"),
        attrs.get("dilations"),
        attrs.get("ceil_mode", 0),
        attrs.get("count_include_pad", 0),
        p=3,
    )
    if kind == "max":
        got, index = run_op(op, [x], num_outputs=2, **extra)
        np.testing.assert_array_equal(index, want_index)
    else:
        got = run_op(op, [x], **extra)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_pool_1d_3d_and_same_padding():
    x1 = random_array((1, 2, 9), 2)
    want, _ = naive_pool(x1, (4,), "avg", [2], [1, 2])  # SAME_UPPER: 5 outputs, pads 1 / 2
    np.testing.assert_allclose(
        run_op("AveragePool", [x1], kernel_shape=(4,), strides=(2,), auto_pad="SAME_UPPER"),
        want,
        rtol=1e-6,
    )
    x3 = random_array((1, 1, 4, 5, 3), 3)
    want, _ = naive_pool(x3, (2, 3, 2), "max", [1, 2, 1], [1, 1, 1, 0, 1, 0])  # SAME_LOWER
    got = run_op("MaxPool", [x3], kernel_shape=(2, 3, 2), strides=(1, 2, 1), auto_pad="SAME_LOWER")
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_max_pool_integers_and_column_major_indices():
    x = np.random.default_rng(4).permutation(36).astype(np.uint8).reshape(1, 1, 6, 6)
    y, index = run_op(
        "MaxPool", [x], num_outputs=2, kernel_shape=(2, 2), strides=(2, 2), storage_order=1
    )
    assert y.dtype == np.uint8
    cols, rows = np.unravel_index(index, (1, 1, 6, 6))[2:]  # column-major: column first
    np.testing.assert_array_equal(x[0, 0, rows, cols], y)
    _, row_major = run_op("MaxPool", [x], num_outputs=2, kernel_shape=(2, 2), strides=(2, 2))
    np.testing.assert_array_equal(row_major, rows * 6 + cols)


def test_global_pools():
    x = random_array((2, 3, 4, 5), 5)
    np.testing.assert_allclose(
        run_op("GlobalAveragePool", [x]), x.mean(axis=(2, 3), keepdims=True), rtol=1e-6
    )
    np.testing.assert_array_equal(run_op("GlobalMaxPool", [x]), x.max(axis=(2, 3), keepdims=True))
    lp = np.sqrt((x.astype(np.float64) ** 2).sum(axis=(2, 3), keepdims=True))
    np.testing.assert_allclose(run_op("GlobalLpPool", [x]), lp, rtol=1e-6)
    half = x.astype(np.float16)
    assert run_op("GlobalAveragePool", [half]).dtype == np.float16


def test_max_unpool_puts_maxima_back():
    x = random_array((1, 2, 4, 4), 6)
    y, index = run_op("MaxPool", [x], num_outputs=2, kernel_shape=(2, 2), strides=(2, 2))
    back = run_op("MaxUnpool", [y, index], kernel_shape=(2, 2), strides=(2, 2))
    want = np.zeros(x.size, np.float32)
    want[index.reshape(-1)] = y.reshape(-1)
    np.testing.assert_array_equal(back, want.reshape(x.shape))
    bigger = run_op(
        "MaxUnpool", [y, index, np.array([1, 2, 5, 5])], kernel_shape=(2, 2), strides=(2, 2)
    )
    np.testing.assert_array_equal(bigger[:, :, :4, :4], back)


def bilinear(image, y, x):
    """One RoiAlign sample: 0 outside [-1, size]; edges clamp."""
    height, width = image.shape[1:]
    if y < -1 or y > height or x < -1 or x > width:
        return np.zeros(image.shape[0])
    y, x = min(max(y, 0), height - 1), min(max(x, 0), width - 1)
    y0, x0 = int(y), int(x)
    y1, x1 = min(y0 + 1, height - 1), min(x0 + 1, width - 1)
    ly, lx = y - y0, x - x0
    return (
        (1 - ly) * (1 - lx) * image[:, y0, x0]
        + (1 - ly) * lx * image[:, y0, x1]
        + ly * (1 - lx) * image[:, y1, x0]
        + ly * lx * image[:, y1, x1]
    )


def test_roi_align_average_matches_naive():
    x = random_array((2, 3, 8, 9), 7)
    rois = np.array([[0.5, 1.0, 6.0, 7.5], [2.0, 0.0, 8.5, 4.0], [1.0, 1.0, 1.5, 2.0]], np.float32)
    batch = np.array([0, 1, 1], np.int64)
    got = run_op(
        "RoiAlign",
        [x, rois, batch],
        output_height=3,
        output_width=2,
        sampling_ratio=2,
        spatial_scale=0.9,
    )
    want = np.zeros((3, 3, 3, 2))
    for r in range(3):
        x1, y1, x2, y2 = rois[r].astype(np.float64) * 0.9 - 0.5
        bin_h, bin_w = (y2 - y1) / 3, (x2 - x1) / 2
        for ph, pw in np.ndindex(3, 2):
            samples = [
                bilinear(
                    x[batch[r]].astype(np.float64),
                    y1 + ph * bin_h + (iy + 0.5) * bin_h / 2,
                    x1 + pw * bin_w + (ix + 0.5) * bin_w / 2,
                )
                for iy in range(2)
                for ix in range(2)
            ]
            want[r, :, ph, pw] = np.mean(samples, axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_max_roi_pool_matches_naive():
    x = random_array((1, 2, 6, 7), 8)
    rois = np.array([[0, 1, 0, 5, 4], [0, 0.4, 2.2, 3.6, 5.1]], np.float32)
    got = run_op("MaxRoiPool", [x, rois], pooled_shape=(2, 3), spatial_scale=1.0)
    want = np.zeros((2, 2, 2, 3), np.float32)
    for r in range(2):
        x1, y1, x2, y2 = (int(round(float(v))) for v in rois[r, 1:])
        h, w = y2 - y1 + 1, x2 - x1 + 1
        for ph, pw in np.ndindex(2, 3):
            rows = slice(y1 + math.floor(ph * h / 2), y1 + math.ceil((ph + 1) * h / 2))
            cols = slice(x1 + math.floor(pw * w / 3), x1 + math.ceil((pw + 1) * w / 3))
            want[r, :, ph, pw] = x[0, :, rows, cols].max(axis=(1, 2))
    np.testing.assert_array_equal(got, want)


def test_shape_inference():
    g = Graph()
    x = g.add_input("x", TensorType(DType.f32, ("N", 3, 7, "W")))
    y = g.add_node(
        "MaxPool", [x], {"kernel_shape": (2, 2), "strides": (2, 2), "ceil_mode": 1}, num_outputs=2
    )
    assert y.outputs[0].type.dims[:3] == ("N", 3, 4)
    assert y.outputs[1].type.dtype == DType.i64
    assert g.add("GlobalAveragePool", x).type.dims == ("N", 3, 1, 1)
    unknown = g.add_input("u", TensorType(DType.f16, None))
    assert g.add("AveragePool", unknown, kernel_shape=(3,)).type.rank == 3
    rois = g.add_input("rois", TensorType(DType.f32, ("R", 4)))
    idx = g.add_input("idx", TensorType(DType.i64, ("R",)))
    assert g.add("RoiAlign", x, rois, idx, output_height=5).type.dims == ("R", 3, 5, 1)


def test_import_roi_align_opset_10_has_no_half_pixel_shift():
    node = helper.make_node(
        "RoiAlign", ["x", "rois", "idx"], ["y"], output_height=2, output_width=2
    )
    model = make_model(
        [node],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6, 6]),
            helper.make_tensor_value_info("rois", TensorProto.FLOAT, [1, 4]),
            helper.make_tensor_value_info("idx", TensorProto.INT64, [1]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        opset=10,
    )
    x = random_array((1, 1, 6, 6), 9)
    rois = np.array([[1.0, 1.0, 4.0, 5.0]], np.float32)
    idx = np.zeros(1, np.int64)
    (got,) = (
        graphkiln.parse_onnx_buffer(model.SerializeToString())
        .compile("ref")
        .run({"x": x, "rois": rois, "idx": idx})
    )
    want = run_op(
        "RoiAlign",
        [x, rois, idx],
        output_height=2,
        output_width=2,
        coordinate_transformation_mode="output_half_pixel",
    )
    np.testing.assert_array_equal(got, want)
    assert not np.allclose(
        want, run_op("RoiAlign", [x, rois, idx], output_height=2, output_width=2)
    )
