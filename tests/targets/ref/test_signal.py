# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels of signal ops (DFT, STFT, windows, MelWeightMatrix), checked against DFT
sums and window formulas written out here."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from op_testing import random_array, run_op, run_op_typed


def dft_matrix(n_out, n_in, inverse=False):
    """W[k, t] = exp(-+2 pi i k t / N) with N = n_in (scaled by 1/N when inverse)."""
    k, t = np.meshgrid(np.arange(n_out), np.arange(n_in), indexing="ij")
    sign = 1 if inverse else -1
    w = np.exp(sign * 2j * np.pi * k * t / n_in)
    return w / n_in if inverse else w


def as_pairs(z):
    return np.stack([z.real, z.imag], axis=-1)


def test_dft_complex_along_axis_with_padding():
    x = random_array((2, 5, 3, 2), 1)
    y, t = run_op_typed("DFT", [x, np.array(7, np.int64), np.array(1, np.int64)], consts=(1, 2))
    assert y.shape == (2, 7, 3, 2) and t.dims == (2, 7, 3, 2)
    z = x[..., 0] + 1j * x[..., 1]
    padded = np.concatenate([z, np.zeros((2, 2, 3))], axis=1).astype(np.complex128)
    expected = np.einsum("kt,btc->bkc", dft_matrix(7, 7), padded)
    np.testing.assert_allclose(y, as_pairs(expected), rtol=1e-4, atol=1e-5)


def test_dft_onesided_real_and_inverse():
    x = random_array((3, 8, 1), 2)
    y, t = run_op_typed("DFT", [x], onesided=1)  # default axis -2
    assert y.shape == (3, 5, 2) and t.dims == (3, 5, 2)
    expected = np.einsum("kt,bt->bk", dft_matrix(5, 8), x[..., 0].astype(np.float64))
    np.testing.assert_allclose(y, as_pairs(expected), rtol=1e-4, atol=1e-5)
    back, t2 = run_op_typed("DFT", [y], inverse=1, onesided=1)  # IRFFT: length 2 * (5 - 1)
    assert back.shape == (3, 8, 1) and t2.dims == (3, 8, 1)
    np.testing.assert_allclose(back, x, rtol=1e-4, atol=1e-5)
    full = run_op("DFT", [as_pairs(expected).astype(np.float64)], inverse=1)
    assert full.dtype == np.float64 and full.shape == (3, 5, 2)
    np.testing.assert_allclose(
        full, as_pairs(np.einsum("kt,bt->bk", dft_matrix(5, 5, inverse=True), expected)), atol=1e-10
    )


def test_dft_opset17_axis_attribute_imports_as_input():
    x = random_array((2, 3, 4, 1), 3)
    node = helper.make_node("DFT", ["x"], ["y"], axis=2)
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        opset=17,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    dft = [n for n in prog.graph.nodes if n.op == "DFT"][0]
    assert len(dft.inputs) == 3 and int(dft.inputs[2].constant) == 2
    assert prog.graph.outputs[0].type.dims == (2, 3, 4, 2)
    (y,) = prog.compile("ref").run({"x": x})
    expected = np.einsum("kt,abt->abk", dft_matrix(4, 4), x[..., 0].astype(np.float64))
    np.testing.assert_allclose(y, as_pairs(expected), rtol=1e-4, atol=1e-5)


def test_stft_with_window():
    signal = random_array((2, 20, 1), 4)
    window = np.hanning(6).astype(np.float32)
    y, t = run_op_typed("STFT", [signal, np.array(4, np.int64), window], consts=(1,))
    frames = (20 - 6) // 4 + 1
    assert y.shape == (2, frames, 4, 2) and t.dims == (2, frames, 4, 2)
    for f in range(frames):
        chunk = signal[:, 4 * f : 4 * f + 6, 0].astype(np.float64) * window
        expected = np.einsum("kt,bt->bk", dft_matrix(4, 6), chunk)
        np.testing.assert_allclose(y[:, f], as_pairs(expected), rtol=1e-4, atol=1e-5)


def test_stft_two_sided_without_window():
    signal = random_array((1, 9, 2), 5)
    y = run_op("STFT", [signal, np.array(3, np.int64), None, np.array(4, np.int64)], onesided=0)
    z = signal[0, :, 0] + 1j * signal[0, :, 1]
    for f in range(2):
        expected = dft_matrix(4, 4) @ z[3 * f : 3 * f + 4]
        np.testing.assert_allclose(y[0, f], as_pairs(expected), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "op, coefficients",
    [
        ("HannWindow", (0.5, -0.5)),
        ("HammingWindow", (25 / 46, -21 / 46)),
        ("BlackmanWindow", (0.42, -0.5, 0.08)),
    ],
)
@pytest.mark.parametrize("periodic", [0, 1])
def test_windows(op, coefficients, periodic):
    size = 10
    y, t = run_op_typed(op, [np.array(size, np.int32)], consts=(0,), periodic=periodic)
    assert y.dtype == np.float32 and t.dims == (size,)
    denominator = size if periodic else size - 1
    n = np.arange(size)
    expected = sum(c * np.cos(2 * np.pi * k * n / denominator) for k, c in enumerate(coefficients))
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def test_window_output_datatype_code_is_converted():
    node = helper.make_node(
        "HannWindow", ["n"], ["y"], output_datatype=TensorProto.DOUBLE, periodic=0
    )
    model = make_model(
        [node],
        [helper.make_tensor_value_info("n", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)],
        opset=17,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    (y,) = prog.compile("ref").run({"n": np.array(5, np.int64)})
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, [0, 0.5, 1, 0.5, 0], atol=1e-12)


def test_mel_weight_matrix_triangles():
    args = [np.array(v, np.int64) for v in (6, 64, 16000)] + [
        np.array(v, np.float32) for v in (100.0, 6000.0)
    ]
    y, t = run_op_typed("MelWeightMatrix", args, consts=(0, 1))
    assert y.shape == (33, 6) and t.dims == (33, 6)
    assert np.all(y >= 0) and np.allclose(y.max(axis=0), 1.0)
    # every band is one triangle: it rises to its peak, then falls
    for band in y.T:
        nonzero = np.flatnonzero(band)
        peak = np.argmax(band)
        assert np.all(np.diff(band[nonzero[0] : peak + 1]) >= 0)
        assert np.all(np.diff(band[peak : nonzero[-1] + 1]) <= 0)
    # the peaks move up the spectrum, spaced evenly in mel
    peaks = np.argmax(y, axis=0)
    assert np.all(np.diff(peaks) > 0)
