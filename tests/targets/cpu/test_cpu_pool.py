# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool on the cpu target: every
window attribute (strides, pads, auto_pad, ceil_mode, dilations, count_include_pad), 1-D to
3-D, plain and channels-last inputs; the Indices output is refused."""

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.ir.ops.conv import window_geometry

from cpu_testing import check_concurrent_runs, check_cpu, node, onnx_model, rand


def pool_model(op, x_shape, **attrs):
    ceil = bool(attrs.get("ceil_mode", 0))
    kernel = attrs["kernel_shape"]
    _, _, out = window_geometry(
        x_shape[2:],
        kernel,
        attrs.get("strides"),
        attrs.get("dilations"),
        attrs.get("pads"),
        attrs.get("auto_pad", "NOTSET"),
        ceil,
    )
    y_shape = (*x_shape[:2], *out)
    return onnx_model([node(op, ["x"], ["y"], **attrs)], {"x": x_shape}, {"y": y_shape})


WINDOWS = [
    ((1, 8, 12, 12), {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ((2, 16, 15, 15), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((1, 8, 15, 14), {"kernel_shape": [3, 2], "strides": [2, 3], "pads": [0, 1, 1, 0]}),
    ((1, 8, 15, 15), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    (
        (1, 8, 16, 16),
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
    ),
    ((1, 8, 14, 14), {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 8, 14, 14), {"kernel_shape": [4, 4], "auto_pad": "SAME_LOWER"}),
    ((1, 8, 14, 14), {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "VALID"}),
    ((1, 8, 20), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    ((1, 4, 8, 8, 8), {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]}),
    ((1, 4, 7, 7, 7), {"kernel_shape": [3, 3, 3], "strides": [2, 2, 2], "pads": [1] * 6}),
    ((1, 3, 9, 9), {"kernel_shape": [3, 3]}),
]


@pytest.mark.parametrize("x_shape,attrs", WINDOWS)
def test_maxpool(x_shape, attrs):
    check_cpu(pool_model("MaxPool", x_shape, **attrs), {"x": rand(x_shape)})


@pytest.mark.parametrize("x_shape", [(1, 8, 15, 15), (1, 8, 12)])
def test_maxpool_dilations(x_shape):
    n = len(x_shape) - 2
    attrs = {
        "kernel_shape": [3] * n,
        "dilations": [2] * n,
        "strides": [1] * n,
        "pads": [1] * (2 * n),
    }
    check_cpu(pool_model("MaxPool", x_shape, **attrs), {"x": rand(x_shape)})


@pytest.mark.parametrize("x_shape,attrs", WINDOWS)
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_averagepool(x_shape, attrs, count_include_pad):
    model = pool_model("AveragePool", x_shape, count_include_pad=count_include_pad, **attrs)
    check_cpu(model, {"x": rand(x_shape)}, rtol=1e-5, atol=1e-6, fallback="ref")


def test_averagepool_ceil_with_count_include_pad_is_refused():
    x_shape = (1, 8, 16, 16)
    model = pool_model(
        "AveragePool",
        x_shape,
        kernel_shape=[3, 3],
        strides=[2, 2],
        pads=[1, 1, 1, 1],
        ceil_mode=1,
        count_include_pad=1,
    )
    with pytest.raises(Exception, match="AveragePool"):
        gk.parse_onnx_buffer(model).compile("cpu")
    check_cpu(model, {"x": rand(x_shape)}, fallback="ref")


def test_maxpool_indices_are_refused():
    model = onnx_model(
        [node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2])],
        {"x": (1, 2, 4, 4)},
        {"y": (1, 2, 3, 3), "i": (1, 2, 3, 3)},
        dtypes={"i": np.int64},
    )
    with pytest.raises(Exception, match="MaxPool"):
        gk.parse_onnx_buffer(model).compile("cpu")
    check_cpu(model, {"x": rand((1, 2, 4, 4))}, fallback="ref")


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("x_shape", [(2, 70, 7, 7), (1, 3, 5), (1, 130, 3, 4, 5), (3, 1, 9, 9)])
def test_global_pool_plain(op, x_shape):
    y_shape = (*x_shape[:2], *([1] * (len(x_shape) - 2)))
    model = onnx_model([node(op, ["x"], ["y"])], {"x": x_shape}, {"y": y_shape})
    check_cpu(model, {"x": rand(x_shape)})


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize(
    "channels,size,batch",
    [
        (16, 7, 2),
        (200, 14, 2),  # two channel groups: 128 | 72 = 2 x 32 + 8
        (3, 56, 2),
        (45, 40, 1),  # 32 + 8 + 5 single channels, pixels cut into ranges
        (32, 64, 1),  # a squeeze-and-excitation pool: few channels, many pixels, 1 image
        (130, 33, 3),  # three images, two groups, an odd pixel count
    ],
)
def test_global_pool_channels_last(op, channels, size, batch):
    """After a conv the input is channels-last; the kernel cuts it into channel groups and
    ranges of pixels and combines the ranges' partial results."""
    inits = {"w": rand((channels, 4, 3, 3), 1)}
    nodes = [node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), node(op, ["c"], ["y"])]
    model = onnx_model(nodes, {"x": (batch, 4, size, size)}, {"y": (batch, channels, 1, 1)}, inits)
    check_cpu(model, {"x": rand((batch, 4, size, size))}, rtol=1e-4, atol=1e-5)


def test_global_pool_concurrent_runs():
    """Each calling thread keeps its own partial results."""
    inits = {"w": rand((40, 4, 3, 3), 1)}
    nodes = [node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1])]
    nodes.append(node("GlobalAveragePool", ["c"], ["y"]))
    model = onnx_model(nodes, {"x": (1, 4, 48, 48)}, {"y": (1, 40, 1, 1)}, inits)
    check_concurrent_runs(model, [{"x": rand((1, 4, 48, 48), 50 + i)} for i in range(6)])


def test_pool_after_conv_channels_last():
    inits = {"w": rand((16, 4, 3, 3), 1)}
    nodes = [
        node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        node("MaxPool", ["c"], ["m"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        node("AveragePool", ["m"], ["y"], kernel_shape=[2, 2], pads=[1, 1, 1, 1]),
    ]
    model = onnx_model(nodes, {"x": (1, 4, 16, 16)}, {"y": (1, 16, 9, 9)}, inits)
    check_cpu(model, {"x": rand((1, 4, 16, 16))}, rtol=1e-4, atol=1e-5)
