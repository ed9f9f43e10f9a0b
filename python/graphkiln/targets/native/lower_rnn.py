# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""RNN, GRU, LSTM -> kernels "RNN", "GRU", "LSTM" (src/cpu/rnn.cpp): float32 or float64,
every direction, layout 0 and 1, sequence_lens (int32), initial states, peepholes, clip,
input_forget, linear_before_reset, the ONNX activation list. The activations are resolved
here (names -> codes of src/cpu/rnn_cell.hpp, alpha / beta with the ONNX defaults) and the
outputs the node uses are named by `outputs` (0 = Y, 1 = Y_h, 2 = Y_c).

`refusal(node)` says why the kernels cannot run a node (None when they can); the `supports`
predicate is its negation and the lowering raises it as a LoweringError."""

from __future__ import annotations

from ...ir import DType, Node
from .lower import LoweringContext, LoweringError, node_label
from .lower_support import supports

# ONNX activation name (lower case) -> (code in src/cpu/rnn_cell.hpp's RnnAct, default alpha,
# default beta); None where the activation takes no such parameter (it consumes no entry of
# activation_alpha / activation_beta).
ACTIVATIONS = {
    "relu": (0, None, None),
    "tanh": (1, None, None),
    "sigmoid": (2, None, None),
    "affine": (3, 1.0, 0.0),
    "leakyrelu": (4, 0.01, None),
    "thresholdedrelu": (5, 1.0, None),
    "scaledtanh": (6, 1.0, 1.0),
    "hardsigmoid": (7, 0.2, 0.5),
    "elu": (8, 1.0, None),
    "softsign": (9, None, None),
    "softplus": (10, None, None),
}
DEFAULT_ACTIVATIONS = {
    "RNN": ("Tanh",),
    "GRU": ("Sigmoid", "Tanh"),
    "LSTM": ("Sigmoid", "Tanh", "Tanh"),
}
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DIRECTIONS = ("forward", "reverse", "bidirectional")
_FLOATS = (DType.f32, DType.f64)


def _dims(v):
    return None if v is None else tuple(v.type.dims)


def _dtype(v):
    return None if v is None else getattr(v.type, "dtype", None)


def _name(dtype) -> str:
    return getattr(dtype, "value", str(dtype))


def resolve_activations(node: Node) -> tuple[list[int], list[float], list[float]]:
    """Per activation of every direction: its code, alpha and beta. The list defaults to the
    op's; a bidirectional node given one direction's list uses it for both; alpha / beta
    values go, in order, to the activations that take that parameter (ONNX, onnxruntime)."""
    defaults = DEFAULT_ACTIVATIONS[node.op]
    dirs = 2 if node.attrs.get("direction", "forward") == "bidirectional" else 1
    names = list(node.attrs.get("activations") or ()) or list(defaults) * dirs
    if dirs == 2 and len(names) == len(defaults):
        names = names * 2
    if len(names) != len(defaults) * dirs:
        raise ValueError(
            f"activations lists {len(names)} functions; {node.op} takes {len(defaults)} per "
            f"direction ({len(defaults) * dirs} here)"
        )
    alphas = [float(a) for a in node.attrs.get("activation_alpha") or ()]
    betas = [float(b) for b in node.attrs.get("activation_beta") or ()]
    codes, alpha_out, beta_out = [], [], []
    for name in names:
        entry = ACTIVATIONS.get(str(name).lower())
        if entry is None:
            raise ValueError(f"unknown activation {name!r}")
        code, alpha, beta = entry
        if alpha is not None and alphas:
            alpha = alphas.pop(0)
        if beta is not None and betas:
            beta = betas.pop(0)
        codes.append(code)
        alpha_out.append(0.0 if alpha is None else alpha)
        beta_out.append(0.0 if beta is None else beta)
    return codes, alpha_out, beta_out


def _hidden(node: Node) -> int | None:
    r = _dims(node.inputs[2])
    return None if r is None or len(r) != 3 else r[2]


def refusal(node: Node) -> str | None:
    """Why src/cpu/rnn.cpp cannot run `node`, or None."""
    inputs = list(node.inputs) + [None] * 8
    x, w, r, b, lens, init_h = inputs[:6]
    init_c, peep = (inputs[6], inputs[7]) if node.op == "LSTM" else (None, None)
    if x is None or w is None or r is None:
        return "X, W and R are required"
    dtype = _dtype(x)
    if dtype not in _FLOATS:
        return f"X is {_name(dtype)}; the kernel takes float32 and float64"
    for v in (w, r, b, init_h, init_c, peep, *node.outputs):
        if v is not None and _dtype(v) != dtype:
            return f"{v.name!r} is {_name(_dtype(v))}, not X's {_name(dtype)}"
    if lens is not None and _dtype(lens) != DType.i32:
        return f"sequence_lens is {_name(_dtype(lens))}; ONNX and the kernel take int32"
    direction = node.attrs.get("direction", "forward")
    if direction not in DIRECTIONS:
        return f"direction {direction!r} is none of {', '.join(DIRECTIONS)}"
    layout = int(node.attrs.get("layout", 0))
    if layout not in (0, 1):
        return f"layout {layout} is neither 0 nor 1"
    clip = node.attrs.get("clip")
    if clip is not None and not float(clip) > 0:
        return f"clip {clip} is not positive"
    x_dims, hidden = _dims(x), _hidden(node)
    if len(x_dims) != 3 or hidden is None:
        return "X and R must be 3-D"
    size = node.attrs.get("hidden_size")
    if size is not None and int(size) != hidden:
        return f"hidden_size {size} differs from R's {hidden}"
    dirs = 2 if direction == "bidirectional" else 1
    gh = GATES[node.op] * hidden
    batch = x_dims[1] if layout == 0 else x_dims[0]
    state = (dirs, batch, hidden) if layout == 0 else (batch, dirs, hidden)
    expected = {
        "W": (w, (dirs, gh, x_dims[2])),
        "R": (r, (dirs, gh, hidden)),
        "B": (b, (dirs, 2 * gh)),
        "sequence_lens": (lens, (batch,)),
        "initial_h": (init_h, state),
        "initial_c": (init_c, state),
        "P": (peep, (dirs, 3 * hidden)),
    }
    for what, (v, dims) in expected.items():
        if v is not None and _dims(v) != dims:
            return f"{what} has dims {_dims(v)}, expected {dims}"
    try:
        resolve_activations(node)
    except ValueError as exc:
        return str(exc)
    return None


def _rnn_ok(node: Node, ctx=None) -> bool:
    return refusal(node) is None


@supports(_rnn_ok)
def lower_rnn(node: Node, ctx: LoweringContext) -> None:
    reason = refusal(node)
    if reason:
        raise LoweringError(
            f"the {ctx.target} target cannot run {node.op} {node_label(node)!r}: {reason}"
        )
    used = [(k, v) for k, v in enumerate(node.outputs) if v is not None]
    if not used:
        return
    n_inputs = 8 if node.op == "LSTM" else 6
    inputs = (list(node.inputs) + [None] * n_inputs)[:n_inputs]
    codes, alphas, betas = resolve_activations(node)
    attrs = {
        "direction": node.attrs.get("direction", "forward"),
        "hidden": _hidden(node),
        "layout": int(node.attrs.get("layout", 0)),
        "outputs": [k for k, _ in used],
        "activations": codes,
        "activation_alpha": alphas,
        "activation_beta": betas,
    }
    if node.attrs.get("clip") is not None:
        attrs["clip"] = float(node.attrs["clip"])
    if node.op == "LSTM" and node.attrs.get("input_forget"):
        attrs["input_forget"] = 1
    if node.op == "GRU" and node.attrs.get("linear_before_reset"):
        attrs["linear_before_reset"] = 1
    ctx.emit(
        node.op,
        [ctx.input(v) for v in inputs],
        [ctx.output(v) for _, v in used],
        attrs,
        node.name,
    )


LOWERINGS = {"RNN": lower_rnn, "GRU": lower_rnn, "LSTM": lower_rnn}
