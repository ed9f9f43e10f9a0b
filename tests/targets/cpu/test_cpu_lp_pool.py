# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""LpPool on cpu (src/cpu/lp_pool.cpp) against ref: 1-3 spatial dims, p, strides,
dilations, pads, auto_pad, ceil_mode."""

import pytest

from graphkiln.targets.ref.pool import LpPool

from cpu_testing import check_cpu, node, onnx_model, rand


def _check(x_shape, **attrs):
    x = rand(x_shape, seed=1, low=-2, high=2)
    full = {
        "auto_pad": "NOTSET",
        "ceil_mode": 0,
        "dilations": None,
        "pads": None,
        "strides": None,
        "p": 2,
        **attrs,
    }
    y_shape = LpPool(x, **full).shape  # output dims as ref computes them
    model = onnx_model(
        [node("LpPool", ["x"], ["y"], **attrs)], {"x": x_shape}, {"y": y_shape}, opset=22
    )
    check_cpu(model, {"x": x}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pool_2d(p):
    _check((2, 3, 9, 8), kernel_shape=[3, 2], p=p)


@pytest.mark.parametrize(
    "attrs",
    [
        {"kernel_shape": [3], "strides": [2]},
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
        {"kernel_shape": [2, 2], "dilations": [2, 2]},
        {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]},
        {"kernel_shape": [3, 3], "auto_pad": "SAME_LOWER"},
        {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
        {"kernel_shape": [2, 2, 2]},
    ],
)
def test_lp_pool_geometry(attrs):
    rank = len(attrs["kernel_shape"])
    _check((1, 2) + (7, 8, 5)[:rank], **attrs)
