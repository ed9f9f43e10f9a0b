# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels of image ops (Resize, Upsample, GridSample, AffineGrid, CenterCropPad,
NonMaxSuppression), checked against element-by-element loops written out here."""

import itertools
import math

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.ir import DType, Graph, TensorType
from op_testing import random_array, run_op, run_op_typed


# -- Resize -------------------------------------------------------------------------------


def _coordinate(x, mode, scale, in_len):
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "asymmetric":
        return x / scale
    if mode == "align_corners":
        # length_resized = in * scale, fractional with scales (as in ONNX's test data)
        return x * (in_len - 1) / (in_len * scale - 1)
    raise AssertionError(mode)


def _taps_1d(coord, in_len, mode, a=-0.75):
    """[(index, weight)] of one output sample along one axis (edge-clamped indices)."""

    def clamp(i):
        return min(max(i, 0), in_len - 1)

    def keys(d):
        d = abs(d)
        if d <= 1:
            return (a + 2) * d**3 - (a + 3) * d**2 + 1
        return a * d**3 - 5 * a * d**2 + 8 * a * d - 4 * a if d < 2 else 0.0

    if mode == "nearest":
        return [(clamp(math.ceil(coord - 0.5)), 1.0)]
    base = math.floor(coord)
    t = coord - base
    if mode == "linear":
        return [(clamp(base), 1 - t), (clamp(base + 1), t)]
    return [(clamp(base + k), keys(k - t)) for k in (-1, 0, 1, 2)]


def _resize_2d_loop(x, out_h, out_w, scale_h, scale_w, mode, coord_mode):
    n, c, h, w = x.shape
    y = np.zeros((n, c, out_h, out_w))
    for i, j in itertools.product(range(out_h), range(out_w)):
        rows = _taps_1d(_coordinate(i, coord_mode, scale_h, h), h, mode)
        cols = _taps_1d(_coordinate(j, coord_mode, scale_w, w), w, mode)
        for (r, wr), (q, wq) in itertools.product(rows, cols):
            y[:, :, i, j] += wr * wq * x[:, :, r, q]
    return y


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("coord_mode", ["half_pixel", "asymmetric", "align_corners"])
def test_resize_scales_matches_loop(mode, coord_mode):
    x = random_array((2, 3, 5, 6), 1, low=-2.0, high=2.0)
    scales = np.array([1, 1, 1.6, 0.5], np.float32)
    y, t = run_op_typed(
        "Resize",
        [x, None, scales],
        consts=(2,),
        mode=mode,
        coordinate_transformation_mode=coord_mode,
    )
    assert t.dims == (2, 3, 8, 3)
    expected = _resize_2d_loop(x.astype(np.float64), 8, 3, 1.6, 0.5, mode, coord_mode)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


def test_resize_sizes_axes_and_aspect_policy():
    x = random_array((1, 2, 4, 6), 2, low=-2.0, high=2.0)
    y, t = run_op_typed(
        "Resize",
        [x, None, None, np.array([8, 9], np.int64)],
        consts=(3,),
        mode="nearest",
        axes=(2, 3),
        keep_aspect_ratio_policy="not_larger",
    )
    # common scale min(8/4, 9/6) = 1.5 -> (6, 9)
    assert y.shape == (1, 2, 6, 9) and t.dims == (1, 2, 6, 9)
    rows = np.clip(np.ceil((np.arange(6) + 0.5) / 1.5 - 1.0), 0, 3).astype(int)
    cols = np.clip(np.ceil((np.arange(9) + 0.5) / 1.5 - 1.0), 0, 5).astype(int)
    np.testing.assert_array_equal(y, x[:, :, rows][:, :, :, cols])


def test_resize_antialias_linear_downsample():
    x = random_array((1, 1, 1, 12), 3, low=-2.0, high=2.0)
    y = run_op(
        "Resize",
        [x, None, np.array([1, 1, 1, 0.25], np.float32)],
        consts=(2,),
        mode="linear",
        antialias=1,
    )
    # a triangle filter stretched 4x, normalized, over edge-clamped samples
    expected = []
    for j in range(3):
        center = (j + 0.5) / 0.25 - 0.5
        taps = range(math.floor(center) - 4, math.floor(center) + 6)
        weights = np.array([max(0.0, 1 - abs(k - center) * 0.25) for k in taps])
        samples = np.array([x[0, 0, 0, min(max(k, 0), 11)] for k in taps])
        expected.append((weights * samples).sum() / weights.sum())
    np.testing.assert_allclose(y.reshape(-1), expected, rtol=1e-5)


def test_resize_tf_crop_and_resize_extrapolates():
    x = random_array((1, 1, 4, 4), 4, low=-2.0, high=2.0)
    roi = np.array([0, 0, -0.5, 0.25, 1, 1, 0.5, 0.75], np.float32)
    y = run_op(
        "Resize",
        [x, roi, None, np.array([1, 1, 3, 3], np.int64)],
        consts=(1, 3),
        mode="linear",
        coordinate_transformation_mode="tf_crop_and_resize",
        extrapolation_value=7.0,
    )
    # rows sample -1.5, 0, 1.5 -> row 0 extrapolates; columns 0.75, 1.5, 2.25
    np.testing.assert_allclose(y[0, 0, 0], 7.0)
    expected_row1 = np.interp([0.75, 1.5, 2.25], np.arange(4), x[0, 0, 0])
    np.testing.assert_allclose(y[0, 0, 1], expected_row1, rtol=1e-5)


def test_resize_uint8_and_shape_inference():
    x = np.random.default_rng(5).integers(0, 256, (1, 1, 3, 3)).astype(np.uint8)
    y, t = run_op_typed(
        "Resize", [x, None, np.array([1, 1, 2, 2], np.float32)], consts=(2,), mode="linear"
    )
    assert y.dtype == np.uint8 and t.dims == (1, 1, 6, 6)
    g = Graph()
    v = g.add_input("x", TensorType(DType.f32, ("N", 3, 10, 10)))
    out = g.add("Resize", v, None, g.constant(np.array([1, 1, 0.5, 0.5], np.float32)))
    assert out.type.dims == ("N", 3, 5, 5)
    unknown = g.add(
        "Resize",
        g.add_input("z", TensorType(DType.f32, None)),
        None,
        g.add_input("s", TensorType(DType.f32, (4,))),
    )
    assert unknown.type.dims is None


@pytest.mark.parametrize("opset", [7, 9, 10])
def test_upsample_and_old_resize_import_as_resize(opset):
    x = random_array((1, 2, 2, 3), 6, low=-2.0, high=2.0)
    scales = [1.0, 1.0, 2.0, 3.0]
    if opset == 7:
        node = helper.make_node("Upsample", ["x"], ["y"], scales=scales)
        inits = []
    else:
        op = "Upsample" if opset == 9 else "Resize"
        node = helper.make_node(op, ["x", "s"], ["y"])
        inits = [helper.make_tensor("s", TensorProto.FLOAT, [4], scales)]
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
        opset,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    assert [n.op for n in prog.graph.nodes if n.op != "Constant"] == ["Resize"]
    (y,) = prog.compile("ref").run({"x": x})
    np.testing.assert_array_equal(y, np.repeat(np.repeat(x, 2, axis=2), 3, axis=3))


def test_resize_opset11_empty_scales_with_sizes():
    x = random_array((1, 1, 4, 4), 7, low=-2.0, high=2.0)
    node = helper.make_node("Resize", ["x", "roi", "scales", "sizes"], ["y"], mode="nearest")
    inits = [
        helper.make_tensor("roi", TensorProto.FLOAT, [0], []),
        helper.make_tensor("scales", TensorProto.FLOAT, [0], []),
        helper.make_tensor("sizes", TensorProto.INT64, [4], [1, 1, 2, 2]),
    ]
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
        11,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    assert prog.graph.outputs[0].type.dims == (1, 1, 2, 2)
    (y,) = prog.compile("ref").run({"x": x})
    # half_pixel: rows 0.5 and 2.5, rounded half down
    np.testing.assert_array_equal(y, x[:, :, 0::2, 0::2])


# -- GridSample / AffineGrid -------------------------------------------------------------


def _grid_sample_loop(x, grid, align_corners):
    """Bilinear, zero padding."""
    n, c, h, w = x.shape
    _, oh, ow, _ = grid.shape
    y = np.zeros((n, c, oh, ow))
    for b, i, j in itertools.product(range(n), range(oh), range(ow)):
        gx, gy = grid[b, i, j]
        if align_corners:
            px, py = (gx + 1) / 2 * (w - 1), (gy + 1) / 2 * (h - 1)
        else:
            px, py = ((gx + 1) * w - 1) / 2, ((gy + 1) * h - 1) / 2
        x0, y0 = math.floor(px), math.floor(py)
        for yy, xx in itertools.product((y0, y0 + 1), (x0, x0 + 1)):
            if 0 <= yy < h and 0 <= xx < w:
                y[b, :, i, j] += (1 - abs(px - xx)) * (1 - abs(py - yy)) * x[b, :, yy, xx]
    return y


@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample_bilinear_zeros(align_corners):
    x = random_array((2, 3, 4, 5), 8, low=-2.0, high=2.0)
    grid = random_array((2, 3, 6, 2), 9, low=-1.3, high=1.3)
    y, t = run_op_typed("GridSample", [x, grid], align_corners=align_corners)
    assert t.dims == (2, 3, 3, 6)
    np.testing.assert_allclose(
        y, _grid_sample_loop(x.astype(np.float64), grid, align_corners), rtol=1e-5, atol=1e-6
    )


def test_grid_sample_nearest_border_3d():
    x = random_array((1, 2, 3, 4, 5), 10, low=-2.0, high=2.0)
    grid = random_array((1, 2, 3, 4, 3), 11, low=-1.5, high=1.5)
    y = run_op("GridSample", [x, grid], mode="nearest", padding_mode="border", align_corners=1)
    sizes = (5, 4, 3)  # grid[..., 0] indexes the innermost axis
    idx = [
        np.clip(np.rint((grid[..., k] + 1) / 2 * (sizes[k] - 1)), 0, sizes[k] - 1).astype(int)
        for k in range(3)
    ]
    expected = x[0][:, idx[2][0], idx[1][0], idx[0][0]]
    np.testing.assert_array_equal(y[0], expected)


def test_grid_sample_cubic_border_clamps_taps():
    # cubic with border padding keeps the point where it is and clamps each tap (PyTorch)
    x = random_array((1, 1, 4, 5), 12, low=-2.0, high=2.0).astype(np.float64)
    grid = random_array((1, 2, 3, 2), 13, low=-1.5, high=1.5).astype(np.float64)
    y = run_op("GridSample", [x, grid], mode="cubic", padding_mode="border", align_corners=0)

    def cubic(t, a=-0.75):
        t = abs(t)
        if t <= 1:
            return ((a + 2) * t - (a + 3)) * t * t + 1
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a if t < 2 else 0.0

    expected = np.zeros((2, 3))
    for i, j in itertools.product(range(2), range(3)):
        gx, gy = grid[0, i, j]
        px, py = ((gx + 1) * 5 - 1) / 2, ((gy + 1) * 4 - 1) / 2
        bx, by = math.floor(px), math.floor(py)
        for dy, dx in itertools.product(range(-1, 3), range(-1, 3)):
            r, c = min(max(by + dy, 0), 3), min(max(bx + dx, 0), 4)
            expected[i, j] += x[0, 0, r, c] * cubic(by + dy - py) * cubic(bx + dx - px)
    np.testing.assert_allclose(y[0, 0], expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("align_corners", [0, 1])
def test_affine_grid_identity_then_grid_sample(align_corners):
    theta = np.tile(np.array([[1, 0, 0], [0, 1, 0]], np.float32), (2, 1, 1))
    size = np.array([2, 3, 4, 5], np.int64)
    grid, t = run_op_typed("AffineGrid", [theta, size], consts=(1,), align_corners=align_corners)
    assert grid.shape == (2, 4, 5, 2) and t.dims == (2, 4, 5, 2)
    xs = np.linspace(-1, 1, 5) if align_corners else (2 * np.arange(5) + 1) / 5 - 1
    np.testing.assert_allclose(grid[1, 2, :, 0], xs, rtol=1e-6)
    x = random_array((2, 3, 4, 5), 12, low=-2.0, high=2.0)
    y = run_op("GridSample", [x, grid], align_corners=align_corners)
    np.testing.assert_allclose(y, x, rtol=1e-5, atol=1e-6)


def test_affine_grid_3d_translation():
    theta = np.array([[[1, 0, 0, 0.5], [0, 2, 0, 0], [0, 0, 1, -0.25]]], np.float64)
    grid = run_op("AffineGrid", [theta, np.array([1, 1, 2, 3, 4], np.int64)], align_corners=1)
    assert grid.shape == (1, 2, 3, 4, 3) and grid.dtype == np.float64
    np.testing.assert_allclose(grid[0, 1, 2, 3], [1 + 0.5, 2 * 1, 1 - 0.25])


# -- CenterCropPad / NonMaxSuppression ---------------------------------------------------


def test_center_crop_pad():
    x = np.arange(5 * 4 * 2).reshape(5, 4, 2).astype(np.int32)
    y, t = run_op_typed("CenterCropPad", [x, np.array([2, 7], np.int64)], consts=(1,), axes=(0, -2))
    assert y.shape == (2, 7, 2) and t.dims == (2, 7, 2)
    # crop rows 1..2; pad columns 1 before, 2 after
    np.testing.assert_array_equal(y[:, 1:5], x[1:3])
    assert not y[:, 0].any() and not y[:, 5:].any()


def test_non_max_suppression():
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 5, 1, 6], [1, 1, 0, 0]]], np.float32)
    scores = np.array([[[0.9, 0.95, 0.5, 0.3], [0.1, 0.2, 0.3, 0.4]]], np.float32)
    y, t = run_op_typed(
        "NonMaxSuppression",
        [
            boxes,
            scores,
            np.array(3, np.int64),
            np.array(0.5, np.float32),
            np.array(0.15, np.float32),
        ],
    )
    # class 0: box 1 wins, boxes 0 and 3 overlap it (IoU 0.82); box 2 is apart
    # class 1: box 0 is under the score threshold; 3 then 2 then 1 (1 vs 3: IoU 0.82)
    np.testing.assert_array_equal(y, [[0, 0, 1], [0, 0, 2], [0, 1, 3], [0, 1, 2]])
    assert y.dtype == np.int64 and t.rank == 2
