# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""LRN and MaxUnpool on cpu (src/cpu/lrn.cpp, max_unpool.cpp) against ref."""

import numpy as np
import pytest

import graphkiln as gk

from cpu_testing import check_cpu, node, onnx_model, rand


def _kernels(model: bytes) -> list[str]:
    program = gk.parse_onnx_buffer(model).compile("cpu")
    plans = list(program._executable._plans.values())
    return [step.kernel for segments in plans for s in segments for step in s.plan.steps]


# -- LRN -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape,attrs",
    [
        ((5, 5, 5, 5), {"size": 3}),
        ((2, 7, 4, 6), {"size": 3, "alpha": 2e-4, "beta": 0.5, "bias": 2.0}),
        ((2, 8, 3, 3), {"size": 4, "alpha": 0.1, "beta": 0.75, "bias": 1.0}),
        ((1, 6, 5), {"size": 5, "alpha": 0.3, "beta": 1.5, "bias": 0.5}),
        ((2, 3, 2, 3, 4), {"size": 2, "alpha": 0.5}),
        ((3, 4), {"size": 1, "alpha": 1.0, "beta": 0.3}),
        ((1, 3, 4, 4), {"size": 9, "alpha": 0.2}),  # window wider than the channels
    ],
)
def test_lrn(shape, attrs):
    model = onnx_model([node("LRN", ["x"], ["y"], **attrs)], {"x": shape}, {"y": shape})
    assert _kernels(model) == ["LRN"]
    check_cpu(model, {"x": rand(shape, 3, low=-3.0, high=3.0)})


# -- MaxUnpool -----------------------------------------------------------------------------


def _indices(x_shape, source, seed):
    """Distinct flat positions of the pooled input, one per pooled value."""
    rng = np.random.default_rng(seed)
    total = int(np.prod(source))
    count = int(np.prod(x_shape))
    return rng.choice(total, size=count, replace=False).reshape(x_shape).astype(np.int64)


def _unpool_model(x_shape, y_shape, attrs, dtype=np.float32, shape_input=None, inits=None):
    inputs = {"x": x_shape, "i": x_shape}
    names = ["x", "i"]
    dtypes = {"x": dtype, "i": np.int64, "y": dtype}
    if shape_input is not None:
        names.append("s")
        if shape_input == "input":
            inputs["s"] = (len(x_shape),)
            dtypes["s"] = np.int64
    nodes = [node("MaxUnpool", names, ["y"], **attrs)]
    return onnx_model(nodes, inputs, {"y": y_shape}, inits, dtypes=dtypes)


# x, source (the pooled input's dims), attrs
UNPOOL = [
    ((1, 1, 2, 2), (1, 1, 4, 4), {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ((2, 3, 3, 4), (2, 3, 6, 9), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 0, 0, 0]}),
    ((2, 2, 5), (2, 2, 6), {"kernel_shape": [2]}),
    ((1, 2, 2, 3, 2), (1, 2, 4, 6, 4), {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape,source,attrs", UNPOOL)
def test_max_unpool(x_shape, source, attrs, dtype):
    model = _unpool_model(x_shape, source, attrs, dtype)
    assert _kernels(model) == ["MaxUnpool"]
    feeds = {"x": rand(x_shape, 4, dtype=dtype), "i": _indices(x_shape, source, 5)}
    check_cpu(model, feeds)


@pytest.mark.parametrize("out", [(1, 2, 5, 6), (1, 2, 3, 4), (1, 2, 4, 6)])
def test_max_unpool_constant_output_shape(out):
    x_shape, source = (1, 2, 2, 3), (1, 2, 4, 6)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    inits = {"s": np.array(out, np.int64)}
    model = _unpool_model(x_shape, out, attrs, shape_input="constant", inits=inits)
    assert _kernels(model) == ["MaxUnpool"]
    check_cpu(model, {"x": rand(x_shape, 6), "i": _indices(x_shape, source, 7)})


def test_max_unpool_output_shape_as_input():
    """A graph input output_shape: planned on its value (Y's dims follow it)."""
    x_shape, source, out = (1, 1, 2, 2), (1, 1, 4, 4), (1, 1, 5, 5)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    model = _unpool_model(x_shape, None, attrs, shape_input="input")
    feeds = {
        "x": rand(x_shape, 8),
        "i": _indices(x_shape, source, 9),
        "s": np.array(out, np.int64),
    }
    (y,) = check_cpu(model, feeds)
    assert y.shape == out


def test_max_unpool_index_out_of_range_raises():
    x_shape = (1, 1, 2, 2)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    model = _unpool_model(x_shape, (1, 1, 4, 4), attrs)
    program = gk.parse_onnx_buffer(model).compile("cpu")
    bad = np.array([0, 3, 16, 5], np.int64).reshape(x_shape)
    with pytest.raises(Exception, match="MaxUnpool"):
        program.run({"x": rand(x_shape, 10), "i": bad})
