# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of recurrent layers: RNN, GRU, LSTM."""

import numpy as np

# Activation name -> (function of (x, alpha, beta), default alpha, default beta). A None
# default marks a parameter the activation does not take (it consumes no list entry).
_ACTIVATIONS = {
    "relu": (lambda x, a, b: np.maximum(x, 0), None, None),
    "tanh": (lambda x, a, b: np.tanh(x), None, None),
    "sigmoid": (lambda x, a, b: 1.0 / (1.0 + np.exp(-x)), None, None),
    "affine": (lambda x, a, b: a * x + b, 1.0, 0.0),
    "leakyrelu": (lambda x, a, b: np.where(x >= 0, x, a * x), 0.01, None),
    "thresholdedrelu": (lambda x, a, b: np.where(x > a, x, 0), 1.0, None),
    "scaledtanh": (lambda x, a, b: a * np.tanh(b * x), 1.0, 1.0),
    "hardsigmoid": (lambda x, a, b: np.clip(a * x + b, 0, 1), 0.2, 0.5),
    "elu": (lambda x, a, b: np.where(x >= 0, x, a * (np.exp(np.minimum(x, 0)) - 1)), 1.0, None),
    "softsign": (lambda x, a, b: x / (1 + np.abs(x)), None, None),
    "softplus": (lambda x, a, b: np.logaddexp(0, x), None, None),
}


def _activations(names, alphas, betas, defaults, num_dirs):
    """Per direction, a list of unary functions. `activation_alpha`/`beta` values are
    consumed in order by the activations that take that parameter."""
    names = list(names) if names else list(defaults) * num_dirs
    if len(names) == len(defaults) and num_dirs == 2:
        names = names * 2
    alphas, betas = list(alphas or ()), list(betas or ())
    funcs = []
    for name in names:
        key = name.lower()
        if key not in _ACTIVATIONS:
            raise ValueError(f"unknown recurrent activation {name!r}")
        fn, alpha, beta = _ACTIVATIONS[key]
        if alpha is not None and alphas:
            alpha = alphas.pop(0)
        if beta is not None and betas:
            beta = betas.pop(0)
        funcs.append(lambda x, fn=fn, a=alpha, b=beta: fn(x, a, b))
    per_dir = len(defaults)
    return [funcs[d * per_dir : (d + 1) * per_dir] for d in range(num_dirs)]


def _run(
    cell,
    x,
    states,
    sequence_lens,
    layout,
    direction,
    params,
    act_names,
    alphas,
    betas,
    defaults,
    clip,
):
    """Shared driver: `cell(x_t, states, params_of_dir, acts, clip) -> new states`; the
    first state is the hidden state that forms Y. Returns (Y, final states...)."""
    out_dtype = x.dtype
    work = np.float64 if out_dtype == np.float64 else np.float32
    if layout == 1:
        x = np.swapaxes(x, 0, 1)
    x = x.astype(work)
    seq_len, batch = x.shape[0], x.shape[1]
    num_dirs = 2 if direction == "bidirectional" else 1
    acts = _activations(act_names, alphas, betas, defaults, num_dirs)
    lens = (
        np.full(batch, seq_len, np.int64)
        if sequence_lens is None
        else np.asarray(sequence_lens).astype(np.int64)
    )
    hidden = states[0].shape[-1]
    y = np.zeros((seq_len, num_dirs, batch, hidden), work)
    finals = [np.empty_like(s) for s in states]
    for d in range(num_dirs):
        reverse = direction == "reverse" or d == 1
        cur = [s[d].astype(work) for s in states]
        p = [None if a is None else a[d].astype(work) for a in params]
        for step in range(seq_len):
            # each batch row walks its own valid length, backwards for a reverse pass
            t = np.where(lens > step, (lens - 1 - step) if reverse else step, -1)
            active = t >= 0
            if not active.any():
                break
            rows = np.where(active, t, 0)
            x_t = x[rows, np.arange(batch)]
            new = cell(x_t, cur, p, acts[d], clip)
            cur = [np.where(active[:, None], n, c) for n, c in zip(new, cur)]
            y[rows[active], d, np.nonzero(active)[0]] = cur[0][active]
        for f, c in zip(finals, cur):
            f[d] = c
    if layout == 1:
        y = np.transpose(y, (2, 0, 1, 3))
        finals = [np.swapaxes(f, 0, 1) for f in finals]
    return (y.astype(out_dtype), *(f.astype(out_dtype) for f in finals))


def _initial(state, num_dirs, batch, hidden, layout, dtype):
    if state is None:
        return np.zeros((num_dirs, batch, hidden), dtype)
    return np.swapaxes(state, 0, 1) if layout == 1 else state


def _clip(v, clip):
    return v if clip is None else np.clip(v, -clip, clip)


def _setup(x, w, r, b, gates, layout):
    num_dirs, hidden = w.shape[0], r.shape[-1]
    batch = x.shape[0] if layout == 1 else x.shape[1]
    if b is None:
        b = np.zeros((num_dirs, 2 * gates * hidden), x.dtype)
    bias = b[:, : gates * hidden] + b[:, gates * hidden :].astype(np.float64)
    return num_dirs, hidden, batch, b, bias


def RNN(
    x,
    w,
    r,
    b=None,
    sequence_lens=None,
    initial_h=None,
    *,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="forward",
    hidden_size=None,
    layout=0,
):
    num_dirs, hidden, batch, _, bias = _setup(x, w, r, b, 1, layout)
    h0 = _initial(initial_h, num_dirs, batch, hidden, layout, x.dtype)

    def cell(x_t, states, p, acts, clip):
        wd, rd, bd = p
        return [acts[0](_clip(x_t @ wd.T + states[0] @ rd.T + bd, clip))]

    return _run(
        cell,
        x,
        [h0],
        sequence_lens,
        layout,
        direction,
        [w, r, bias],
        activations,
        activation_alpha,
        activation_beta,
        ["Tanh"],
        clip,
    )


def GRU(
    x,
    w,
    r,
    b=None,
    sequence_lens=None,
    initial_h=None,
    *,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="forward",
    hidden_size=None,
    layout=0,
    linear_before_reset=0,
):
    num_dirs, hidden, batch, b, _ = _setup(x, w, r, b, 3, layout)
    h0 = _initial(initial_h, num_dirs, batch, hidden, layout, x.dtype)
    wb, rb = b[:, : 3 * hidden], b[:, 3 * hidden :]
    H = hidden

    def cell(x_t, states, p, acts, clip):
        wd, rd, wbd, rbd = p
        f, g = acts
        h_prev = states[0]
        xw = x_t @ wd.T + wbd  # gate order z, r, h
        hr = h_prev @ rd[: 2 * H].T + rbd[: 2 * H]
        z = f(_clip(xw[:, :H] + hr[:, :H], clip))
        reset = f(_clip(xw[:, H : 2 * H] + hr[:, H:], clip))
        if linear_before_reset:
            cand = xw[:, 2 * H :] + reset * (h_prev @ rd[2 * H :].T + rbd[2 * H :])
        else:
            cand = xw[:, 2 * H :] + (reset * h_prev) @ rd[2 * H :].T + rbd[2 * H :]
        h_new = g(_clip(cand, clip))
        return [(1 - z) * h_new + z * h_prev]

    return _run(
        cell,
        x,
        [h0],
        sequence_lens,
        layout,
        direction,
        [w, r, wb, rb],
        activations,
        activation_alpha,
        activation_beta,
        ["Sigmoid", "Tanh"],
        clip,
    )


def LSTM(
    x,
    w,
    r,
    b=None,
    sequence_lens=None,
    initial_h=None,
    initial_c=None,
    p=None,
    *,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="forward",
    hidden_size=None,
    layout=0,
    input_forget=0,
):
    num_dirs, hidden, batch, _, bias = _setup(x, w, r, b, 4, layout)
    h0 = _initial(initial_h, num_dirs, batch, hidden, layout, x.dtype)
    c0 = _initial(initial_c, num_dirs, batch, hidden, layout, x.dtype)
    if p is None:
        p = np.zeros((num_dirs, 3 * hidden), x.dtype)
    H = hidden

    def cell(x_t, states, prm, acts, clip):
        wd, rd, bd, pd = prm
        f, g, h = acts
        h_prev, c_prev = states
        gates = x_t @ wd.T + h_prev @ rd.T + bd  # gate order i, o, f, c; peepholes i, o, f
        i = f(_clip(gates[:, :H] + pd[:H] * c_prev, clip))
        if input_forget:
            forget = 1 - i  # coupled input and forget gates
        else:
            forget = f(_clip(gates[:, 2 * H : 3 * H] + pd[2 * H :] * c_prev, clip))
        c_new = forget * c_prev + i * g(_clip(gates[:, 3 * H :], clip))
        o = f(_clip(gates[:, H : 2 * H] + pd[H : 2 * H] * c_new, clip))
        return [o * h(c_new), c_new]

    return _run(
        cell,
        x,
        [h0, c0],
        sequence_lens,
        layout,
        direction,
        [w, r, bias, p],
        activations,
        activation_alpha,
        activation_beta,
        ["Sigmoid", "Tanh", "Tanh"],
        clip,
    )


KERNELS = {
    "RNN": RNN,
    "GRU": GRU,
    "LSTM": LSTM,
}
