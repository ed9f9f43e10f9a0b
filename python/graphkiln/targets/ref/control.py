# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of control flow with subgraphs: If, Loop, Scan."""

import numpy as np

from ...ir import TensorType


def _truth(x, what: str) -> bool:
    x = np.asarray(x)
    if x.size != 1:
        raise ValueError(f"{what} must hold one element, got shape {list(x.shape)}")
    return bool(x.reshape(-1)[0])


def _stack(items: list, axis: int, value_type):
    """Per-iteration values stacked along a new `axis`; with no iterations, an empty tensor
    shaped from the body output's type (unknown dims count as 0)."""
    if items:
        arrays = [np.asarray(x) for x in items]
        return np.stack(arrays, axis=axis % (arrays[0].ndim + 1))
    if isinstance(value_type, TensorType) and value_type.dims is not None:
        dims = [d if isinstance(d, int) else 0 for d in value_type.dims]
        dims.insert(axis % (len(dims) + 1), 0)
        return np.zeros(dims, dtype=value_type.dtype.numpy)
    return np.zeros((0,), dtype=np.float32)


def If(cond, *, then_branch, else_branch):
    branch = then_branch if _truth(cond, "If's cond") else else_branch
    return tuple(branch())


def Loop(max_trip_count=None, keep_going=None, *initial, body):
    if max_trip_count is None and keep_going is None:
        raise ValueError("Loop has neither a trip count nor a condition: it would never end")
    limit = None if max_trip_count is None else int(np.asarray(max_trip_count).reshape(-1)[0])
    going = True if keep_going is None else _truth(keep_going, "Loop's cond")
    carried = list(initial)
    body_scan_outputs = body.graph.outputs[1 + len(carried) :]
    scans = [[] for _ in body_scan_outputs]
    i = 0
    while going and (limit is None or i < limit):
        outs = body(np.array(i, dtype=np.int64), np.array(going), *carried)
        if keep_going is not None:  # without a cond input the body's cond is ignored
            going = _truth(outs[0], "Loop body's cond output")
        carried = list(outs[1 : 1 + len(carried)])
        for items, x in zip(scans, outs[1 + len(carried) :]):
            items.append(x)
        i += 1
    stacked = [_stack(items, 0, v.type) for items, v in zip(scans, body_scan_outputs)]
    return tuple(carried + stacked)


def Scan(
    *states_and_inputs,
    body,
    num_scan_inputs,
    scan_input_axes=None,
    scan_input_directions=None,
    scan_output_axes=None,
    scan_output_directions=None,
):
    num_states = len(states_and_inputs) - num_scan_inputs
    states = list(states_and_inputs[:num_states])
    xs = [np.asarray(x) for x in states_and_inputs[num_states:]]
    in_axes = [a % x.ndim for a, x in zip(scan_input_axes or (0,) * len(xs), xs)]
    in_reverse = scan_input_directions or (0,) * len(xs)
    lengths = {x.shape[a] for x, a in zip(xs, in_axes)}
    if len(lengths) > 1:
        raise ValueError(f"Scan inputs have different sequence lengths {sorted(lengths)}")
    length = lengths.pop() if lengths else 0
    body_scan_outputs = body.graph.outputs[num_states:]
    scans = [[] for _ in body_scan_outputs]
    for t in range(length):
        slices = [
            np.take(x, length - 1 - t if rev else t, axis=a)
            for x, a, rev in zip(xs, in_axes, in_reverse)
        ]
        outs = body(*states, *slices)
        states = list(outs[:num_states])
        for items, y in zip(scans, outs[num_states:]):
            items.append(y)
    out_axes = scan_output_axes or (0,) * len(scans)
    out_reverse = scan_output_directions or (0,) * len(scans)
    stacked = [
        _stack(items[::-1] if rev else items, axis, v.type)
        for items, axis, rev, v in zip(scans, out_axes, out_reverse, body_scan_outputs)
    ]
    return tuple(states + stacked)


KERNELS = {
    "If": If,
    "Loop": Loop,
    "Scan": Scan,
}
