# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Calibration: the min and max of each activation to quantize over every sample, found by
running the float model with graphkiln (the cpu target, else ref) with those tensors made
extra graph outputs. Activations that are graph inputs are read from the samples."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx

from ..errors import CompileError

Ranges = dict[str, tuple[float, float]]


def _observing_model(
    model: onnx.ModelProto, names: list[str], infos: dict[str, onnx.ValueInfoProto]
) -> bytes:
    """The model with `names` as its only outputs (the rest of the graph is dead code), typed
    from `infos` (quantizable.value_infos)."""
    observing = onnx.ModelProto()
    observing.CopyFrom(model)
    del observing.graph.output[:]
    for name in names:
        # a type shape inference could not find: a float32 tensor of unknown shape
        vi = infos.get(name) or onnx.helper.make_tensor_value_info(
            name, onnx.TensorProto.FLOAT, None
        )
        observing.graph.output.append(vi)
    return observing.SerializeToString()


def _compile(data: bytes):
    from .. import parse_onnx_buffer
    from ..targets.registry import default_target

    target = default_target()
    try:
        return parse_onnx_buffer(data).compile(target)
    except CompileError:
        if target == "ref":
            raise
        return parse_onnx_buffer(data).compile("ref")


def _widen(ranges: Ranges, name: str, value: np.ndarray, sample: int) -> None:
    value = np.asarray(value)
    if value.size == 0:
        return
    if not np.isfinite(value).all():
        raise ValueError(
            f"calibration sample {sample}: tensor {name!r} holds NaN or infinity; "
            "calibration needs finite values (check the sample's inputs)"
        )
    low, high = float(value.min()), float(value.max())
    if name in ranges:
        old_low, old_high = ranges[name]
        low, high = min(low, old_low), max(high, old_high)
    ranges[name] = (low, high)


def collect_ranges(
    model: onnx.ModelProto,
    activations: list[str],
    samples: Sequence[dict],
    infos: dict[str, onnx.ValueInfoProto],
    progress: Callable[[int, int], None] | None = None,
) -> Ranges:
    """{activation: (min, max)} over the samples (feed dicts already checked against the
    model's inputs), `infos` the model's tensor types (quantizable.value_infos).
    `progress(done, total)` is called after each sample."""
    inputs = {vi.name for vi in model.graph.input}
    computed = [name for name in activations if name not in inputs]
    program = _compile(_observing_model(model, computed, infos)) if computed else None
    parameters = set(program.get_parameter_names()) if program is not None else set()
    ranges: Ranges = {}
    for index, feeds in enumerate(samples):
        for name in activations:
            if name in inputs:
                _widen(ranges, name, feeds[name], index)
        if program is not None:
            needed = {k: v for k, v in feeds.items() if k in parameters}
            try:
                values = program.run(needed)
            except ValueError as exc:
                raise ValueError(f"calibration sample {index}: {exc}") from None
            for name, value in zip(computed, values):
                _widen(ranges, name, value, index)
        if progress is not None:
            progress(index + 1, len(samples))
    missing = [name for name in activations if name not in ranges]
    if missing:  # empty in every sample: nothing to calibrate from
        raise ValueError(
            f"the tensors {', '.join(map(repr, missing))} were empty in every calibration "
            "sample; give samples where they hold values"
        )
    return ranges
