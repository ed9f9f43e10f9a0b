# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`graphkiln quantize --calibrate DATA`: calibration samples read from numpy files, never
through pickle. DATA is one .npz whose arrays are named after the model's inputs, each with
a leading sample axis (sample i feeds arr[i]), or a folder of .npz files, one sample each
(read in name order)."""

from __future__ import annotations

import os

import numpy as np

from .input_files import ZIP_MAGICS, NumpyFileError, load_npz

ACCEPTED = (
    "one .npz file whose arrays are named after the model's inputs, each with a leading "
    "sample axis (sample i = array[i]), or a folder of .npz files, one sample each"
)


def _read_npz(path: str) -> dict[str, np.ndarray]:
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as exc:
        raise ValueError(f"--calibrate: cannot read {path}: {exc.strerror}") from None
    if not head.startswith(ZIP_MAGICS):
        raise ValueError(f"--calibrate: {path} is not a numpy .npz file; accepted: {ACCEPTED}")
    try:
        return load_npz(path)
    except NumpyFileError as exc:
        raise ValueError(f"--calibrate: {exc}") from None


def _matching(path: str, arrays: dict, inputs: list[str]) -> dict[str, np.ndarray]:
    """The arrays named after an input; an error when none is."""
    found = {name: arrays[name] for name in inputs if name in arrays}
    if not found:
        held = ", ".join(map(repr, sorted(arrays))) or "no arrays"
        raise ValueError(
            f"--calibrate: {path} holds {held}, none named after an input of the model "
            f"({', '.join(map(repr, inputs))}); accepted: {ACCEPTED}"
        )
    return found


def _split_samples(path: str, arrays: dict[str, np.ndarray]) -> list[dict]:
    """One feed dict per index of the arrays' leading axis (the same length in each)."""
    counts = {name: (a.shape[0] if a.ndim else None) for name, a in arrays.items()}
    if None in counts.values() or len(set(counts.values())) != 1:
        sizes = ", ".join(f"{k}: {list(a.shape)}" for k, a in arrays.items())
        raise ValueError(
            f"--calibrate: the arrays of {path} must share a leading sample axis of one "
            f"length ({sizes})"
        )
    count = next(iter(counts.values()))
    return [{name: a[i] for name, a in arrays.items()} for i in range(count)]


def read_calibration(data: str, inputs: list[str]) -> list[dict]:
    """The samples of DATA as feed dicts (only the arrays named after `inputs`)."""
    if os.path.isdir(data):
        files = sorted(f for f in os.listdir(data) if f.endswith(".npz"))
        samples = [
            _matching(os.path.join(data, f), _read_npz(os.path.join(data, f)), inputs)
            for f in files
        ]
    elif os.path.exists(data):
        samples = _split_samples(data, _matching(data, _read_npz(data), inputs))
    else:
        raise ValueError(f"--calibrate: {data} does not exist; expected {ACCEPTED}")
    if not samples:
        raise ValueError(f"--calibrate: {data} holds 0 samples; expected {ACCEPTED}")
    return samples
