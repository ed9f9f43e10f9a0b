# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of signal processing: DFT, STFT, window functions, MelWeightMatrix.

Tensors of complex values are real tensors with a last axis of 2 (real, imaginary); a real
signal may come with a last axis of 1. Transforms run in complex128 and cast back."""

import numpy as np


def _as_complex(x: np.ndarray) -> np.ndarray:
    # float32 and narrower transform in complex64 (numpy >= 2 keeps that precision), which
    # gives the rounding the ONNX test data was made with; float64 in complex128
    real = np.float64 if x.dtype == np.float64 else np.float32
    data = x.astype(real)
    if x.shape[-1] == 1:
        return data[..., 0]
    return (data[..., 0] + 1j * data[..., 1]).astype(np.result_type(real, np.complex64))


def _split_complex(y: np.ndarray, dtype) -> np.ndarray:
    return np.stack([y.real, y.imag], axis=-1).astype(dtype)


def _scalar(a) -> int:
    return int(np.asarray(a).reshape(-1)[0])


def DFT(x, dft_length=None, axis=None, *, inverse, onesided):
    rank = x.ndim
    ax = -2 if axis is None else _scalar(axis)
    if not (-rank <= ax <= -2 or 0 <= ax <= rank - 2):
        raise ValueError(f"DFT: axis {ax} out of range for an input of rank {rank}")
    ax %= rank
    signal = _as_complex(x)
    irfft = bool(inverse and onesided)
    if dft_length is not None:
        n = _scalar(dft_length)
    else:
        n = 2 * (x.shape[ax] - 1) if irfft else x.shape[ax]
    if irfft:
        # the input holds bins 0..n//2 of a Hermitian spectrum; the result is real
        return np.fft.irfft(signal, n, axis=ax)[..., None].astype(x.dtype)
    y = np.fft.ifft(signal, n, axis=ax) if inverse else np.fft.fft(signal, n, axis=ax)
    if onesided:
        y = np.take(y, np.arange(n // 2 + 1), axis=ax)
    return _split_complex(y, x.dtype)


def STFT(signal, frame_step, window=None, frame_length=None, *, onesided):
    data = _as_complex(signal)  # (batch, length)
    length = data.shape[1]
    step = _scalar(frame_step)
    if frame_length is not None:
        frame = _scalar(frame_length)
    elif window is not None:
        frame = window.shape[0]
    else:
        frame = length
    if window is not None and window.shape[0] != frame:
        raise ValueError(f"STFT: window of length {window.shape[0]} for frames of {frame}")
    frames = (length - frame) // step + 1
    index = np.arange(frames)[:, None] * step + np.arange(frame)[None, :]
    chunks = data[:, index]  # (batch, frames, frame)
    if window is not None:
        chunks = chunks * window.astype(chunks.real.dtype)
    y = np.fft.fft(chunks, axis=-1)
    if onesided:
        y = y[..., : frame // 2 + 1]
    return _split_complex(y, signal.dtype)


def _cosine_window(size, periodic, coefficients, output_datatype):
    """sum_k c_k cos(2 pi k n / N), N = size when periodic, size - 1 when symmetric."""
    n = _scalar(size)
    period = n if periodic else n - 1
    if period <= 0:
        return np.ones(max(n, 0), dtype=output_datatype.numpy)
    phase = 2 * np.pi * np.arange(n, dtype=np.float64) / period
    w = sum(c * np.cos(k * phase) for k, c in enumerate(coefficients))
    return w.astype(output_datatype.numpy)


def HannWindow(size, *, periodic, output_datatype):
    return _cosine_window(size, periodic, (0.5, -0.5), output_datatype)


def HammingWindow(size, *, periodic, output_datatype):
    return _cosine_window(size, periodic, (25 / 46, -21 / 46), output_datatype)


def BlackmanWindow(size, *, periodic, output_datatype):
    return _cosine_window(size, periodic, (0.42, -0.5, 0.08), output_datatype)


def _hertz_to_mel(f):
    return 2595.0 * np.log10(1.0 + f / 700.0)


def _mel_to_hertz(m):
    return 700.0 * (10.0 ** (m / 2595.0) - 1.0)


def MelWeightMatrix(
    num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz, *, output_datatype
):
    bands, n_fft, rate = _scalar(num_mel_bins), _scalar(dft_length), _scalar(sample_rate)
    spectrum_bins = n_fft // 2 + 1
    low = _hertz_to_mel(float(np.asarray(lower_edge_hertz).reshape(-1)[0]))
    high = _hertz_to_mel(float(np.asarray(upper_edge_hertz).reshape(-1)[0]))
    # band edges: bands + 2 points stepped by (high - low) / (bands + 2) on the mel scale,
    # then snapped down to spectrum bins (this spacing is what the ONNX test data uses)
    mels = low + np.arange(bands + 2) * (high - low) / (bands + 2)
    edges = np.floor((n_fft + 1) * _mel_to_hertz(mels) / rate).astype(np.int64)
    left, center, right = edges[:-2], edges[1:-1], edges[2:]
    j = np.arange(spectrum_bins)[:, None]
    rising = (j - left) / np.maximum(center - left, 1)
    rising = np.where(center == left, (j == center).astype(np.float64), rising)
    falling = (right - j) / np.maximum(right - center, 1)
    out = np.where((j >= left) & (j <= center), rising, 0.0)
    out = np.where((j >= center) & (j < right), falling, out)
    return out.astype(output_datatype.numpy)


KERNELS = {
    "DFT": DFT,
    "STFT": STFT,
    "HannWindow": HannWindow,
    "HammingWindow": HammingWindow,
    "BlackmanWindow": BlackmanWindow,
    "MelWeightMatrix": MelWeightMatrix,
}
