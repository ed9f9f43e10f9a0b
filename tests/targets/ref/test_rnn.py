# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels of RNN, GRU and LSTM, checked against step loops written out here."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.ir import DType, Graph, TensorType
from op_testing import random_normal, run_op


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def reference_rnn(x, w, r, b, h0, step, lens=None, reverse=False):
    """One direction, batch row by batch row: x [S, B, D]; `step(x_t, h_prev) -> h`.
    Returns Y [S, B, H] (zeros past a row's length) and the final state."""
    seq, batch = x.shape[:2]
    lens = [seq] * batch if lens is None else lens
    y = np.zeros((seq, batch, r.shape[-1]))
    finals = []
    for n in range(batch):
        h = h0[n] if not isinstance(h0, tuple) else tuple(s[n] for s in h0)
        order = range(lens[n] - 1, -1, -1) if reverse else range(lens[n])
        for t in order:
            h = step(x[t, n].astype(np.float64), h)
            y[t, n] = h[0] if isinstance(h, tuple) else h
        finals.append(h)
    return y, finals


def test_rnn_forward_with_bias_and_initial_state():
    S, B, D, H = 5, 3, 4, 6
    x = random_normal((S, B, D), 1)
    w = random_normal((1, H, D), 2, scale=0.5)
    r = random_normal((1, H, H), 3, scale=0.5)
    b, h0 = random_normal((1, 2 * H), 4), random_normal((1, B, H), 5)
    y, y_h = run_op("RNN", [x, w, r, b, None, h0], num_outputs=2, hidden_size=H)
    ref, finals = reference_rnn(
        x, w, r, b, h0[0], lambda xt, h: np.tanh(w[0] @ xt + r[0] @ h + b[0, :H] + b[0, H:])
    )
    np.testing.assert_allclose(y[:, 0], ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y_h[0], np.stack(finals), rtol=1e-5, atol=1e-5)


def test_rnn_activation_parameters_and_layout():
    S, B, D, H = 4, 2, 3, 5
    x = random_normal((S, B, D), 6)
    w = random_normal((1, H, D), 7)
    r = random_normal((1, H, H), 8, scale=0.3)
    y0, _ = run_op(
        "RNN", [x, w, r], num_outputs=2, activations=("LeakyRelu",), activation_alpha=(0.3,)
    )
    ref, _ = reference_rnn(
        x,
        w,
        r,
        None,
        np.zeros((B, H)),
        lambda xt, h: (lambda v: np.where(v >= 0, v, 0.3 * v))(w[0] @ xt + r[0] @ h),
    )
    np.testing.assert_allclose(y0[:, 0], ref, rtol=1e-5, atol=1e-5)
    # layout 1: batch first, same numbers
    y1, _ = run_op(
        "RNN",
        [np.swapaxes(x, 0, 1).copy(), w, r],
        num_outputs=2,
        layout=1,
        activations=("LeakyRelu",),
        activation_alpha=(0.3,),
    )
    np.testing.assert_allclose(y1, np.transpose(y0, (2, 0, 1, 3)), rtol=1e-6)


@pytest.mark.parametrize("linear_before_reset", [0, 1])
def test_gru_bidirectional(linear_before_reset):
    S, B, D, H = 4, 2, 3, 5
    x = random_normal((S, B, D), 10)
    w = random_normal((2, 3 * H, D), 11, scale=0.5)
    r = random_normal((2, 3 * H, H), 12, scale=0.5)
    b = random_normal((2, 6 * H), 13)
    y, y_h = run_op(
        "GRU",
        [x, w, r, b],
        num_outputs=2,
        hidden_size=H,
        direction="bidirectional",
        linear_before_reset=linear_before_reset,
    )
    assert y.shape == (S, 2, B, H) and y_h.shape == (2, B, H)
    for d in range(2):
        W, R, Wb, Rb = w[d], r[d], b[d, : 3 * H], b[d, 3 * H :]

        def step(xt, h, W=W, R=R, Wb=Wb, Rb=Rb):  # this direction's weights, bound now
            z = sigmoid(W[:H] @ xt + R[:H] @ h + Wb[:H] + Rb[:H])
            rr = sigmoid(W[H : 2 * H] @ xt + R[H : 2 * H] @ h + Wb[H : 2 * H] + Rb[H : 2 * H])
            if linear_before_reset:
                n = np.tanh(W[2 * H :] @ xt + rr * (R[2 * H :] @ h + Rb[2 * H :]) + Wb[2 * H :])
            else:
                n = np.tanh(W[2 * H :] @ xt + R[2 * H :] @ (rr * h) + Rb[2 * H :] + Wb[2 * H :])
            return (1 - z) * n + z * h

        ref, finals = reference_rnn(x, W, R, None, np.zeros((B, H)), step, reverse=d == 1)
        np.testing.assert_allclose(y[:, d], ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(y_h[d], np.stack(finals), rtol=1e-5, atol=1e-5)


def _lstm_step(W, R, bias, P, H, input_forget=False):
    def step(xt, state):
        h, c = state
        g = W @ xt + R @ h + bias
        i = sigmoid(g[:H] + P[:H] * c)
        f = 1 - i if input_forget else sigmoid(g[2 * H : 3 * H] + P[2 * H :] * c)
        c = f * c + i * np.tanh(g[3 * H :])
        o = sigmoid(g[H : 2 * H] + P[H : 2 * H] * c)
        return o * np.tanh(c), c

    return step


@pytest.mark.parametrize("input_forget", [0, 1])
def test_lstm_reverse_peepholes_sequence_lens(input_forget):
    S, B, D, H = 5, 3, 2, 4
    x, b = random_normal((S, B, D), 20), random_normal((1, 8 * H), 23)
    w = random_normal((1, 4 * H, D), 21, scale=0.5)
    r = random_normal((1, 4 * H, H), 22, scale=0.5)
    h0, c0 = random_normal((1, B, H), 24), random_normal((1, B, H), 25)
    p = random_normal((1, 3 * H), 26)
    lens = np.array([5, 2, 3], np.int32)
    y, y_h, y_c = run_op(
        "LSTM",
        [x, w, r, b, lens, h0, c0, p],
        num_outputs=3,
        hidden_size=H,
        direction="reverse",
        input_forget=input_forget,
    )
    step = _lstm_step(w[0], r[0], b[0, : 4 * H] + b[0, 4 * H :], p[0], H, input_forget)
    ref, finals = reference_rnn(x, w, r, b, (h0[0], c0[0]), step, list(lens), reverse=True)
    np.testing.assert_allclose(y[:, 0], ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y_h[0], np.stack([f[0] for f in finals]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y_c[0], np.stack([f[1] for f in finals]), rtol=1e-5, atol=1e-5)


def test_lstm_clip_and_float64():
    S, B, D, H = 3, 2, 3, 2
    x = random_normal((S, B, D), 30, scale=4.0).astype(np.float64)
    w = random_normal((1, 4 * H, D), 31).astype(np.float64)
    r = random_normal((1, 4 * H, H), 32).astype(np.float64)
    y, _, _ = run_op("LSTM", [x, w, r], num_outputs=3, clip=0.5)
    assert y.dtype == np.float64

    def step(xt, state):
        h, c = state
        g = np.clip(w[0] @ xt + r[0] @ h, -0.5, 0.5)
        i, o, f, cc = (
            sigmoid(g[:H]),
            sigmoid(g[H : 2 * H]),
            sigmoid(g[2 * H : 3 * H]),
            np.tanh(g[3 * H :]),
        )
        c = f * c + i * cc
        return o * np.tanh(c), c

    ref, _ = reference_rnn(x, w, r, None, (np.zeros((B, H)), np.zeros((B, H))), step)
    np.testing.assert_allclose(y[:, 0], ref, rtol=1e-12)


def test_shape_inference_symbolic_and_layout():
    g = Graph()
    x = g.add_input("x", TensorType(DType.f16, ("S", "N", 8)))
    w = g.add_input("w", TensorType(DType.f16, (2, 16, 8)))
    r = g.add_input("r", TensorType(DType.f16, (2, 16, 4)))
    node = g.add_node("LSTM", [x, w, r], {"direction": "bidirectional"}, num_outputs=3)
    assert [v.type for v in node.outputs] == [
        TensorType(DType.f16, ("S", 2, "N", 4)),
        TensorType(DType.f16, (2, "N", 4)),
        TensorType(DType.f16, (2, "N", 4)),
    ]
    node = g.add_node(
        "GRU",
        [x, w, r],
        {"direction": "bidirectional", "hidden_size": 4, "layout": 1},
        num_outputs=2,
    )
    assert node.outputs[0].type == TensorType(DType.f16, ("S", "N", 2, 4))
    assert node.outputs[1].type == TensorType(DType.f16, ("S", 2, 4))
    unknown = g.add_input("u", TensorType(DType.f32, None))
    node = g.add_node("RNN", [unknown, w, r], {}, num_outputs=2)
    assert node.outputs[0].type.rank == 4 and node.outputs[1].type.rank == 3


def test_import_opset7_lstm_with_omitted_inputs():
    S, B, D, H = 3, 2, 3, 4
    x = random_normal((S, B, D), 40)
    w = random_normal((1, 4 * H, D), 41, scale=0.5)
    r = random_normal((1, 4 * H, H), 42, scale=0.5)
    model = make_model(
        [helper.make_node("LSTM", ["x", "w", "r", "", "", "h0"], ["", "y_h"], hidden_size=H)],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [S, B, D]),
            helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, B, H]),
        ],
        [helper.make_tensor_value_info("y_h", TensorProto.FLOAT, [1, B, H])],
        [
            helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel()),
            helper.make_tensor("r", TensorProto.FLOAT, r.shape, r.ravel()),
        ],
        opset=7,
    )
    h0 = random_normal((1, B, H), 43)
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    (y_h,) = prog.compile("ref").run({"x": x, "h0": h0})
    step = _lstm_step(w[0], r[0], np.zeros(4 * H), np.zeros(3 * H), H)
    _, finals = reference_rnn(x, w, r, None, (h0[0], np.zeros((B, H))), step)
    np.testing.assert_allclose(y_h[0], np.stack([f[0] for f in finals]), rtol=1e-5, atol=1e-5)
