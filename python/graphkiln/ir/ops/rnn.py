# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Schemas of recurrent layers: RNN, GRU, LSTM."""

from ..schema import define
from ..types import TensorType
from .. import infer


def _recurrent(num_state_outputs: int):
    """Y: [seq, dirs, batch, hidden] (layout 0) or [batch, seq, dirs, hidden] (layout 1);
    each state output: [dirs, batch, hidden] or [batch, dirs, hidden]."""

    def infer_rnn(ctx):
        x = ctx.tensor(0)
        dirs = 2 if ctx.attrs["direction"] == "bidirectional" else 1
        hidden = ctx.attrs["hidden_size"]
        if hidden is None:
            r = ctx.tensor(2)
            hidden = r.dims[-1] if r.dims is not None else None
        if x.dims is None or len(x.dims) != 3 or hidden is None:
            return [infer.unknown(x.dtype, 4)] + [infer.unknown(x.dtype, 3)] * num_state_outputs
        if ctx.attrs["layout"] == 0:
            seq, batch = x.dims[0], x.dims[1]
            y = (seq, dirs, batch, hidden)
            state = (dirs, batch, hidden)
        else:
            batch, seq = x.dims[0], x.dims[1]
            y = (batch, seq, dirs, hidden)
            state = (batch, dirs, hidden)
        return [TensorType(x.dtype, y)] + [TensorType(x.dtype, state)] * num_state_outputs

    return infer_rnn


_COMMON_ATTRS = [
    ("activation_alpha", "floats", None),
    ("activation_beta", "floats", None),
    ("activations", "strs", None),
    ("clip", "float", None),
    ("direction", "str", "forward"),
    ("hidden_size", "int", None),
    ("layout", "int", 0),
]

define(
    "RNN",
    ("X", "W", "R", "B?", "sequence_lens?", "initial_h?"),
    ("Y?", "Y_h?"),
    _COMMON_ATTRS,
    _recurrent(1),
)
define(
    "GRU",
    ("X", "W", "R", "B?", "sequence_lens?", "initial_h?"),
    ("Y?", "Y_h?"),
    _COMMON_ATTRS + [("linear_before_reset", "int", 0)],
    _recurrent(1),
)
define(
    "LSTM",
    ("X", "W", "R", "B?", "sequence_lens?", "initial_h?", "initial_c?", "P?"),
    ("Y?", "Y_h?", "Y_c?"),
    _COMMON_ATTRS + [("input_forget", "int", 0)],
    _recurrent(2),
)
