# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of sequence and optional values: Sequence*, SplitToSequence, ConcatFromSequence,
Optional*.

A sequence is a Python list of arrays and an empty optional is None. A kernel returning a
sequence returns it inside a 1-tuple, since a bare list would read as several outputs; kernels
build new lists and never change the ones they are given."""

import numpy as np


def _position(position, length: int, allow_end: bool = False) -> int:
    """position as an index into a list of `length` (negative counts from the end)."""
    p = int(np.asarray(position).reshape(-1)[0])
    high = length if allow_end else length - 1
    if not -length <= p <= high:
        raise IndexError(f"position {p} is out of range for a sequence of {length}")
    return p + length if p < 0 else p


def SequenceConstruct(*inputs):
    return ([np.asarray(x) for x in inputs],)


def SequenceEmpty(*, dtype):
    return ([],)


def SequenceAt(sequence, position):
    return sequence[_position(position, len(sequence))]


def SequenceInsert(sequence, tensor, position=None):
    result = list(sequence)
    if position is None:
        result.append(tensor)
    else:
        result.insert(_position(position, len(sequence), allow_end=True), tensor)
    return (result,)


def SequenceErase(sequence, position=None):
    result = list(sequence)
    del result[-1 if position is None else _position(position, len(sequence))]
    return (result,)


def SequenceLength(sequence):
    return np.array(len(sequence), dtype=np.int64)


def SplitToSequence(x, split=None, *, axis, keepdims):
    x = np.asarray(x)
    axis = axis % x.ndim
    length = x.shape[axis]
    if split is None:
        parts = [
            np.take(x, [i], axis=axis) if keepdims else np.take(x, i, axis=axis)
            for i in range(length)
        ]
        return (parts,)
    split = np.asarray(split).astype(np.int64)
    if split.ndim == 0:
        size = int(split)
        if size <= 0:
            raise ValueError(f"split must be positive, got {size}")
        cuts = list(range(size, length, size))
    else:
        if split.sum() != length or (split < 0).any():
            raise ValueError(f"split {split.tolist()} does not add up to the axis length {length}")
        cuts = np.cumsum(split)[:-1].tolist()
    return (np.split(x, cuts, axis=axis),)


def ConcatFromSequence(sequence, *, axis, new_axis):
    if not sequence:
        raise ValueError("ConcatFromSequence of an empty sequence")
    arrays = [np.asarray(x) for x in sequence]
    if new_axis:
        return np.stack(arrays, axis=axis)
    return np.concatenate(arrays, axis=axis)


def SequenceMap(sequence, *additional, body):
    for extra in additional:
        if isinstance(extra, list) and len(extra) != len(sequence):
            raise ValueError(f"SequenceMap sequences have lengths {len(sequence)} and {len(extra)}")
    results = [[] for _ in range(body.num_outputs)]
    for i, item in enumerate(sequence):
        args = [extra[i] if isinstance(extra, list) else extra for extra in additional]
        for collected, y in zip(results, body(item, *args)):
            collected.append(np.asarray(y))
    return tuple(results)


def Optional(value=None, *, type=None):
    return (value,)


def OptionalHasElement(value=None):
    return np.array(value is not None)


def OptionalGetElement(value):
    if value is None:
        raise ValueError("OptionalGetElement of an empty optional")
    return (value,)


KERNELS = {
    "SequenceConstruct": SequenceConstruct,
    "SequenceEmpty": SequenceEmpty,
    "SequenceAt": SequenceAt,
    "SequenceInsert": SequenceInsert,
    "SequenceErase": SequenceErase,
    "SequenceLength": SequenceLength,
    "SplitToSequence": SplitToSequence,
    "ConcatFromSequence": ConcatFromSequence,
    "SequenceMap": SequenceMap,
    "Optional": Optional,
    "OptionalHasElement": OptionalHasElement,
    "OptionalGetElement": OptionalGetElement,
}
