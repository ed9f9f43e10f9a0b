# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""GridSample on cpu (src/cpu/grid_sample.cpp) against ref: every mode x padding x
align_corners in 2-D (opset 20 names and opset 16's bilinear / bicubic), a subset in 3-D,
1-D, float64, grids reaching past [-1, 1] and hitting nearest's half-way points, a grid large
enough for the parallel loop; float16 refused."""

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.targets.cpu.table import SUPPORT
from graphkiln.targets.native.lower_support import node_supported

from cpu_testing import check_cpu, node, onnx_model, rand

MODES = ["linear", "nearest", "cubic"]
PADDINGS = ["zeros", "border", "reflection"]


def _model(x_shape, grid_shape, opset=20, dtypes=None, **attrs):
    y_shape = tuple(x_shape[:2]) + tuple(grid_shape[1:-1])
    return onnx_model(
        [node("GridSample", ["x", "grid"], ["y"], **attrs)],
        {"x": x_shape, "grid": grid_shape},
        {"y": y_shape},
        opset=opset,
        dtypes=dtypes,
    )


def _check(x, grid, opset=20, rtol=1e-5, **attrs):
    dtypes = {"x": x.dtype, "grid": grid.dtype, "y": x.dtype}
    model = _model(x.shape, grid.shape, opset, dtypes, **attrs)
    check_cpu(model, {"x": x, "grid": grid}, rtol=rtol)


def _half_way_grid(shape, seed):
    """Random points in [-1.4, 1.4) with every third one replaced by a coordinate that lands
    exactly between two pixels (sizes 4 and 5: -0.5, 0.25 / -0.75, 0.25, 0.75)."""
    grid = rand(shape, seed=seed, low=-1.4, high=1.4)
    special = np.array([-0.5, 0.25, -0.75, 0.75, 0.0, 1.0, -1.0, 1.25, -1.25], np.float32)
    flat = grid.reshape(-1)
    flat[::3] = special[np.arange(flat[::3].size) % special.size]
    return grid


@pytest.mark.parametrize("align_corners", [0, 1])
@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_2d(mode, padding_mode, align_corners):
    x = rand((2, 3, 4, 5), seed=1, low=-2, high=2)
    grid = _half_way_grid((2, 6, 7, 2), seed=2)
    _check(x, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest"])
@pytest.mark.parametrize("padding_mode", PADDINGS)
def test_grid_sample_opset16(mode, padding_mode):
    x = rand((1, 2, 5, 4), seed=3, low=-2, high=2)
    grid = rand((1, 3, 5, 2), seed=4, low=-1.3, high=1.3)
    _check(x, grid, opset=16, mode=mode, padding_mode=padding_mode, align_corners=1)


@pytest.mark.parametrize(
    "mode, padding_mode, align_corners",
    [
        ("linear", "zeros", 0),
        ("linear", "border", 1),
        ("linear", "reflection", 0),
        ("nearest", "zeros", 1),
        ("nearest", "reflection", 0),
        ("nearest", "border", 0),
        ("cubic", "reflection", 1),
    ],
)
def test_grid_sample_3d(mode, padding_mode, align_corners):
    x = rand((2, 2, 3, 4, 5), seed=5, low=-2, high=2)
    grid = _half_way_grid((2, 2, 3, 4, 3), seed=6)
    _check(x, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)


@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_1d(mode):
    x = rand((2, 3, 7), seed=7, low=-2, high=2)
    grid = _half_way_grid((2, 9, 1), seed=8)
    _check(x, grid, mode=mode, padding_mode="reflection", align_corners=0)


@pytest.mark.parametrize("grid_dtype", [np.float32, np.float64])
def test_grid_sample_float64(grid_dtype):
    x = rand((1, 3, 6, 5), seed=9, dtype=np.float64, low=-2, high=2)
    grid = rand((1, 4, 4, 2), seed=10, dtype=grid_dtype, low=-1.3, high=1.3)
    _check(x, grid, rtol=1e-12, mode="cubic", padding_mode="border", align_corners=0)


def test_grid_sample_single_pixel_axis():
    x = rand((1, 2, 1, 5), seed=11, low=-2, high=2)
    grid = rand((1, 3, 3, 2), seed=12, low=-1.5, high=1.5)
    for align in (0, 1):
        for pad in PADDINGS:
            _check(x, grid, mode="linear", padding_mode=pad, align_corners=align)


def test_grid_sample_large_parallel():
    x = rand((2, 16, 32, 32), seed=13, low=-2, high=2)
    grid = rand((2, 40, 48, 2), seed=14, low=-1.2, high=1.2)
    _check(x, grid, mode="cubic", padding_mode="zeros", align_corners=0)
    _check(x, grid, mode="linear", padding_mode="reflection", align_corners=1)


def test_grid_sample_float16_refused():
    model = _model((1, 1, 3, 3), (1, 2, 2, 2), dtypes={"x": np.float16, "y": np.float16})
    graph = gk.parse_onnx_buffer(model)
    (gs,) = [n for n in graph.graph.nodes if n.op == "GridSample"]
    assert not node_supported(gs, SUPPORT)
