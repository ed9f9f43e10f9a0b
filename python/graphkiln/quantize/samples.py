# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Checks of the calibration samples against the model's inputs, before anything runs: a
list (or other sequence) of at least one {input name: numpy array} dict, every input of the
model present, float32 inputs given as float32."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

ACCEPTED = "a non-empty list of feed dicts {input name: numpy array}, one per sample"


def model_inputs(graph: onnx.GraphProto) -> dict[str, int]:
    """The inputs the caller feeds (initializers excluded) -> their ONNX element type (0 when
    the model does not say)."""
    initializers = {t.name for t in graph.initializer}
    found = {}
    for vi in graph.input:
        if vi.name not in initializers:
            kind = vi.type.WhichOneof("value")
            found[vi.name] = vi.type.tensor_type.elem_type if kind == "tensor_type" else 0
    return found


def check_samples(graph: onnx.GraphProto, samples) -> list[dict]:
    """The samples as a list of dicts of numpy arrays; a ValueError / TypeError naming the
    sample and the problem otherwise."""
    if isinstance(samples, dict) or not isinstance(samples, Sequence):
        raise TypeError(f"calibration must be {ACCEPTED}; got {type(samples).__name__}")
    if len(samples) == 0:
        raise ValueError(f"the calibration list is empty; expected {ACCEPTED}")
    inputs = model_inputs(graph)
    checked = []
    for index, feeds in enumerate(samples):
        if not isinstance(feeds, dict):
            raise TypeError(
                f"calibration sample {index} is a {type(feeds).__name__}; expected a dict "
                f"{{input name: numpy array}} (the model's inputs: {', '.join(inputs)})"
            )
        missing = [name for name in inputs if name not in feeds]
        unknown = [name for name in feeds if name not in inputs]
        if missing or unknown:
            parts = [f"missing {', '.join(map(repr, missing))}"] if missing else []
            parts += [f"unknown {', '.join(map(repr, unknown))}"] if unknown else []
            raise ValueError(
                f"calibration sample {index}: {'; '.join(parts)}; the model's inputs are "
                f"{', '.join(map(repr, inputs))}"
            )
        arrays = {name: np.asarray(value) for name, value in feeds.items()}
        for name, array in arrays.items():
            want = inputs[name]
            expected = onnx.helper.tensor_dtype_to_np_dtype(want) if want else None
            if expected is not None and array.dtype != expected:
                raise ValueError(
                    f"calibration sample {index}: input {name!r} is {array.dtype}, the "
                    f"model's input is {expected}; convert it, e.g. array.astype(numpy."
                    f"{expected})"
                )
        checked.append(arrays)
    return checked
