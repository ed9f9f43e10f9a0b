# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""RoiAlign on cpu (src/cpu/roi_align.cpp) against ref: avg and max, half_pixel and
output_half_pixel (and opset 10's implied output_half_pixel), adaptive and fixed sampling,
spatial_scale, boxes reaching past the image, float64, int32 batch indices, a batch index out
of range raising."""

import numpy as np
import pytest

import graphkiln as gk

from cpu_testing import check_cpu, node, onnx_model, rand


def _rois(count, seed, extent=10.0):
    """Boxes (x1, y1, x2, y2) over roughly [-2, extent + 2], some degenerate or tiny."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-2.0, extent + 2.0, size=(count, 2))
    b = a + rng.uniform(0.0, extent * 0.8, size=(count, 2))
    rois = np.concatenate([a, b], axis=1)
    rois[0] = [1.0, 1.0, 1.2, 1.1]  # smaller than a bin
    return rois


def _check(x, rois, batch, opset=16, rtol=1e-5, **attrs):
    out = (rois.shape[0], x.shape[1], attrs.get("output_height", 1), attrs.get("output_width", 1))
    dtypes = {"x": x.dtype, "rois": rois.dtype, "b": batch.dtype, "y": x.dtype}
    model = onnx_model(
        [node("RoiAlign", ["x", "rois", "b"], ["y"], **attrs)],
        {"x": x.shape, "rois": rois.shape, "b": batch.shape},
        {"y": out},
        opset=opset,
        dtypes=dtypes,
    )
    return model, check_cpu(model, {"x": x, "rois": rois, "b": batch}, rtol=rtol)


@pytest.mark.parametrize("sampling_ratio", [0, 2])
@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align(mode, transform, sampling_ratio):
    x = rand((2, 3, 12, 10), seed=1, low=-2, high=2)
    rois = _rois(6, seed=2, extent=20.0).astype(np.float32)
    batch = np.array([0, 1, 1, 0, 1, 0], np.int64)
    _check(
        x,
        rois,
        batch,
        mode=mode,
        coordinate_transformation_mode=transform,
        output_height=3,
        output_width=4,
        sampling_ratio=sampling_ratio,
        spatial_scale=0.5,
    )


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_opset10(mode):
    x = rand((1, 2, 8, 9), seed=3, low=0.5, high=2)
    rois = _rois(4, seed=4, extent=8.0).astype(np.float32)
    batch = np.zeros(4, np.int64)
    _check(x, rois, batch, opset=10, mode=mode, output_height=2, output_width=2)


def test_roi_align_float64_int32():
    x = rand((2, 2, 7, 6), seed=5, dtype=np.float64, low=-2, high=2)
    rois = _rois(3, seed=6, extent=6.0)
    batch = np.array([1, 0, 1], np.int32)
    _check(x, rois, batch, rtol=1e-12, mode="avg", output_height=3, output_width=2)


def test_roi_align_large_parallel():
    x = rand((2, 32, 24, 24), seed=7, low=-2, high=2)
    rois = _rois(8, seed=8, extent=90.0).astype(np.float32)
    batch = (np.arange(8) % 2).astype(np.int64)
    for mode in ("avg", "max"):
        _check(x, rois, batch, mode=mode, output_height=5, output_width=5, spatial_scale=0.25)


def test_roi_align_batch_index_out_of_range():
    x = rand((1, 1, 4, 4), seed=9)
    rois = np.array([[0, 0, 2, 2]], np.float32)
    model, _ = _check(x, rois, np.zeros(1, np.int64), output_height=2, output_width=2)
    exe = gk.parse_onnx_buffer(model).compile("cpu")
    with pytest.raises(Exception, match="batch index 3 out of range"):
        exe.run({"x": x, "rois": rois, "b": np.array([3], np.int64)})
