# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""RNN, GRU and LSTM on cpu (src/cpu/rnn.cpp) against ref: directions, sequence_lens,
initial states, peepholes, clip, layout 1, linear_before_reset, activation lists, optional
outputs, streaming (batch 1, one step, state fed back), a 2-layer bidirectional LSTM and a
symbolic batch / sequence model run at two shapes."""

import numpy as np
import pytest

import graphkiln as gk
from cpu_testing import check_cpu, node, onnx_model, rand
from graphkiln.ir import DType, Node, TensorType, Value
from graphkiln.targets.native.lower_rnn import refusal

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
TOL = {"rtol": 1e-4, "atol": 1e-5}


def _dirs(direction):
    return 2 if direction == "bidirectional" else 1


def recurrent_model(
    op,
    *,
    seq=5,
    batch=3,
    inp=4,
    hidden=6,
    direction="forward",
    layout=0,
    lens=False,
    initial=True,
    peepholes=False,
    bias=True,
    outputs=("Y", "Y_h", "Y_c"),
    weights_as_inputs=False,
    dtype=np.float32,
    seed=0,
    **attrs,
):
    """A one-node model and its feeds: random weights (initializers unless
    `weights_as_inputs`), X, and where asked sequence_lens (mixed) and initial states."""
    d, g = _dirs(direction), GATES[op]
    x_dims = (seq, batch, inp) if layout == 0 else (batch, seq, inp)
    state = (d, batch, hidden) if layout == 0 else (batch, d, hidden)
    y_dims = (seq, d, batch, hidden) if layout == 0 else (batch, seq, d, hidden)
    consts = {
        "w": rand((d, g * hidden, inp), seed + 1, dtype, -0.7, 0.7),
        "r": rand((d, g * hidden, hidden), seed + 2, dtype, -0.7, 0.7),
    }
    if bias:
        consts["b"] = rand((d, 2 * g * hidden), seed + 3, dtype, -0.5, 0.5)
    if peepholes:
        consts["p"] = rand((d, 3 * hidden), seed + 4, dtype, -0.5, 0.5)
    feeds = {"x": rand(x_dims, seed + 5, dtype, -2, 2)}
    inputs = {"x": x_dims}
    dtypes = {"x": dtype}
    if lens:
        lengths = (np.arange(batch) * 2 % seq + 1).astype(np.int32)  # mixed, 1..seq
        lengths[0] = seq
        feeds["lens"], inputs["lens"], dtypes["lens"] = lengths, (batch,), np.int32
    if initial:
        feeds["h0"], inputs["h0"] = rand(state, seed + 6, dtype), state
        if op == "LSTM":
            feeds["c0"], inputs["c0"] = rand(state, seed + 7, dtype), state
    if weights_as_inputs:
        for k, v in consts.items():
            feeds[k], inputs[k] = v, v.shape
        consts = {}
    for k in inputs:
        dtypes.setdefault(k, dtype)
    names = ["x", "w", "r", "b" if bias else "", "lens" if lens else "", "h0" if initial else ""]
    if op == "LSTM":
        names += ["c0" if initial else "", "p" if peepholes else ""]
    while names[-1] == "":
        names.pop()
    out_dims = {"Y": y_dims, "Y_h": state, "Y_c": state}
    wanted = [o for o in ("Y", "Y_h", "Y_c") if o in outputs and (op == "LSTM" or o != "Y_c")]
    out_names = [o if o in wanted else "" for o in ("Y", "Y_h", "Y_c")[: 3 if op == "LSTM" else 2]]
    while out_names[-1] == "":
        out_names.pop()
    for o in wanted:
        dtypes[o] = dtype
    n = node(op, names, out_names, hidden_size=hidden, direction=direction, layout=layout, **attrs)
    model = onnx_model([n], inputs, {o: out_dims[o] for o in wanted}, consts, 22, dtypes)
    return model, feeds


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("lens", [False, True])
def test_directions_and_sequence_lens(op, direction, lens):
    model, feeds = recurrent_model(op, direction=direction, lens=lens, seed=len(direction))
    out = check_cpu(model, feeds, **TOL)
    if lens:  # Y past a sequence's length is zero
        y = out[0]
        row = int(np.argmin(feeds["lens"]))
        assert feeds["lens"][row] < y.shape[0]
        assert not y[feeds["lens"][row] :, :, row].any() and y[0, :, row].any()


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_layout_1(op, direction):
    model, feeds = recurrent_model(op, direction=direction, layout=1, lens=True, batch=4)
    check_cpu(model, feeds, **TOL)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_no_bias_no_initial_state(op):
    model, feeds = recurrent_model(op, bias=False, initial=False, direction="bidirectional")
    check_cpu(model, feeds, **TOL)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_peepholes(direction):
    model, feeds = recurrent_model("LSTM", direction=direction, peepholes=True, lens=True)
    check_cpu(model, feeds, **TOL)


@pytest.mark.parametrize("peepholes", [False, True])
def test_lstm_input_forget(peepholes):
    model, feeds = recurrent_model("LSTM", input_forget=1, peepholes=peepholes)
    check_cpu(model, feeds, **TOL)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_clip(op):
    model, feeds = recurrent_model(op, clip=0.4, peepholes=op == "LSTM", lens=True)
    feeds["x"] = feeds["x"] * 3
    out = check_cpu(model, feeds, **TOL)
    unclipped, _ = recurrent_model(op, peepholes=op == "LSTM", lens=True)
    ref = gk.parse_onnx_buffer(unclipped).compile("ref").run(feeds)
    assert not np.allclose(out[0], ref[0], atol=1e-3)  # the clip changed the result


@pytest.mark.parametrize("lbr", [0, 1])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_gru_linear_before_reset(lbr, direction):
    model, feeds = recurrent_model(
        "GRU", direction=direction, linear_before_reset=lbr, lens=direction != "forward"
    )
    check_cpu(model, feeds, **TOL)


ALL_ACTIVATIONS = [
    ("Relu", None, None),
    ("Tanh", None, None),
    ("Sigmoid", None, None),
    ("Affine", 0.7, -0.2),
    ("LeakyRelu", 0.3, None),
    ("ThresholdedRelu", 0.2, None),
    ("ScaledTanh", 1.5, 0.6),
    ("HardSigmoid", 0.3, 0.4),
    ("Elu", 0.8, None),
    ("Softsign", None, None),
    ("Softplus", None, None),
    ("LeakyRelu", None, None),  # the defaults
    ("HardSigmoid", None, None),
]


@pytest.mark.parametrize("name,alpha,beta", ALL_ACTIVATIONS)
def test_rnn_every_activation(name, alpha, beta):
    attrs = {"activations": [name]}
    if alpha is not None:
        attrs["activation_alpha"] = [alpha]
    if beta is not None:
        attrs["activation_beta"] = [beta]
    model, feeds = recurrent_model("RNN", seq=4, **attrs)
    check_cpu(model, feeds, **TOL)


def test_lstm_custom_activations_bidirectional():
    acts = ["HardSigmoid", "LeakyRelu", "Softsign", "Sigmoid", "ScaledTanh", "Elu"]
    model, feeds = recurrent_model(
        "LSTM",
        direction="bidirectional",
        activations=acts,
        activation_alpha=[0.25, 0.1, 1.2, 0.9],  # HardSigmoid, LeakyRelu, ScaledTanh, Elu
        activation_beta=[0.45, 0.8],  # HardSigmoid, ScaledTanh
        peepholes=True,
    )
    check_cpu(model, feeds, **TOL)


def test_gru_custom_activations_one_list_for_both_directions():
    model, feeds = recurrent_model(
        "GRU",
        direction="bidirectional",
        activations=["HardSigmoid", "Softsign"],
        activation_alpha=[0.3],
        activation_beta=[0.55],
    )
    check_cpu(model, feeds, **TOL)


@pytest.mark.parametrize(
    "op,outputs",
    [
        ("LSTM", ("Y_h",)),
        ("LSTM", ("Y_c",)),
        ("LSTM", ("Y",)),
        ("LSTM", ("Y", "Y_c")),
        ("GRU", ("Y_h",)),
        ("RNN", ("Y_h",)),
    ],
)
def test_optional_outputs(op, outputs):
    model, feeds = recurrent_model(op, outputs=outputs, direction="bidirectional", lens=True)
    out = check_cpu(model, feeds, **TOL)
    assert len(out) == len(outputs)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_weights_as_run_time_inputs(op):
    model, feeds = recurrent_model(op, weights_as_inputs=True, peepholes=op == "LSTM")
    check_cpu(model, feeds, **TOL)


@pytest.mark.parametrize("op", ["GRU", "LSTM"])
def test_float64(op):
    model, feeds = recurrent_model(op, dtype=np.float64, direction="bidirectional", lens=True)
    check_cpu(model, feeds, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("op,lbr", [("GRU", 0), ("GRU", 1), ("LSTM", 0)])
def test_large_batch_on_two_threads(op, lbr, monkeypatch):
    # batch x gates large enough for the threaded GEMM panels and gate rows
    monkeypatch.setenv("GRAPHKILN_NUM_THREADS", "2")
    attrs = {"linear_before_reset": lbr} if op == "GRU" else {"peepholes": True}
    model, feeds = recurrent_model(
        op, seq=3, batch=48, inp=32, hidden=256, direction="bidirectional", lens=True, **attrs
    )
    check_cpu(model, feeds, **TOL)


def test_saved_and_loaded_program_runs_the_same():
    model, feeds = recurrent_model("LSTM", direction="bidirectional", lens=True, peepholes=True)
    program = gk.parse_onnx_buffer(model).compile("cpu")
    want = program.run(feeds)
    loaded = gk.load_buffer(gk.save_buffer(program))
    for a, b in zip(loaded.run(feeds), want):
        np.testing.assert_array_equal(a, b)


def test_streaming_batch1_one_step_state_fed_back():
    """A voice-activity detector's call: batch 1, one step, states in and out."""
    model, feeds = recurrent_model("LSTM", seq=1, batch=1, inp=8, hidden=16)
    prog = gk.parse_onnx_buffer(model)
    cpu, ref = prog.compile("cpu"), prog.compile("ref")
    whole_model, whole_feeds = recurrent_model("LSTM", seq=6, batch=1, inp=8, hidden=16)
    h, c = feeds["h0"], feeds["c0"]
    whole_feeds.update(h0=h, c0=c)
    for t in range(6):
        step = {"x": whole_feeds["x"][t : t + 1], "h0": h, "c0": c}
        got, want = cpu.run(step), ref.run(step)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, **TOL)
        h, c = got[1], got[2]
    # the fed-back run ends where one run over the whole sequence does
    whole = gk.parse_onnx_buffer(whole_model).compile("cpu").run(whole_feeds)
    np.testing.assert_allclose(h, whole[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, whole[2], rtol=1e-5, atol=1e-6)


def _two_layer_bilstm(seq, batch, inp, hidden, symbolic=False):
    """LSTM (bidirectional) -> Transpose / Reshape to (seq, batch, 2 hidden) -> LSTM."""
    g = 4 * hidden
    inits = {
        "w1": rand((2, g, inp), 11, low=-0.3, high=0.3),
        "r1": rand((2, g, hidden), 12, low=-0.3, high=0.3),
        "b1": rand((2, 2 * g), 13, low=-0.3, high=0.3),
        "w2": rand((2, g, 2 * hidden), 14, low=-0.3, high=0.3),
        "r2": rand((2, g, hidden), 15, low=-0.3, high=0.3),
        "b2": rand((2, 2 * g), 16, low=-0.3, high=0.3),
        "shape": np.array([0, 0, -1], np.int64),
    }
    nodes = [
        node(
            "LSTM", ["x", "w1", "r1", "b1"], ["y1"], hidden_size=hidden, direction="bidirectional"
        ),
        node("Transpose", ["y1"], ["y1t"], perm=[0, 2, 1, 3]),
        node("Reshape", ["y1t", "shape"], ["x2"]),
        node(
            "LSTM",
            ["x2", "w2", "r2", "b2"],
            ["y2", "h2"],
            hidden_size=hidden,
            direction="bidirectional",
        ),
    ]
    s, b = ("seq", "batch") if symbolic else (seq, batch)
    return onnx_model(
        nodes,
        {"x": (s, b, inp)},
        {"y2": (s, 2, b, hidden), "h2": (2, b, hidden)},
        inits,
        opset=22,
    )


def test_two_layer_bidirectional_lstm():
    model = _two_layer_bilstm(seq=12, batch=2, inp=32, hidden=64)
    check_cpu(model, {"x": rand((12, 2, 32), 17)}, **TOL)


def test_symbolic_batch_and_sequence_compiled_once():
    model = _two_layer_bilstm(seq=0, batch=0, inp=16, hidden=24, symbolic=True)
    cpu = gk.parse_onnx_buffer(model).compile("cpu")
    ref = gk.parse_onnx_buffer(model).compile("ref")
    for shape in [(7, 3, 16), (2, 1, 16), (7, 3, 16)]:
        x = {"x": rand(shape, sum(shape))}
        got, want = cpu.run(x), ref.run(x)
        assert got[0].shape == (shape[0], 2, shape[1], 24)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, **TOL)


def test_sequence_lens_out_of_range_is_an_error():
    model, feeds = recurrent_model("GRU", lens=True)
    cpu = gk.parse_onnx_buffer(model).compile("cpu")
    feeds["lens"] = np.array([5, 6, 1], np.int32)
    with pytest.raises(Exception, match=r"sequence_lens\[1\] is 6, outside \[0, 5\]"):
        cpu.run(feeds)


def _node(op, attrs, x_dims=(5, 3, 4), hidden=6, dtype=DType.f32, lens_dtype=DType.i32):
    g = GATES[op]
    x = Value("x", TensorType(dtype, x_dims))
    w = Value("w", TensorType(dtype, (1, g * hidden, x_dims[2])))
    r = Value("r", TensorType(dtype, (1, g * hidden, hidden)))
    lens = Value("lens", TensorType(lens_dtype, (x_dims[1],)))
    y = Value("y", TensorType(dtype, (x_dims[0], 1, x_dims[1], hidden)))
    return Node(op, [x, w, r, None, lens], [y, None], dict(attrs))


@pytest.mark.parametrize(
    "op,attrs,kw,reason",
    [
        ("LSTM", {"activations": ["Sigmoid", "Gelu", "Tanh"]}, {}, "unknown activation 'Gelu'"),
        ("GRU", {"activations": ["Sigmoid"]}, {}, "activations lists 1 functions; GRU takes 2"),
        ("RNN", {"clip": 0.0}, {}, "clip 0.0 is not positive"),
        ("RNN", {"hidden_size": 5}, {}, "hidden_size 5 differs from R's 6"),
        ("RNN", {}, {"dtype": DType.f16}, "the kernel takes float32 and float64"),
        ("GRU", {}, {"lens_dtype": DType.i64}, "sequence_lens is i64"),
    ],
)
def test_refusals_say_why(op, attrs, kw, reason):
    n = _node(op, attrs, **kw)
    assert reason in (refusal(n) or "")
    assert refusal(_node(op, {})) is None


def test_unknown_activation_is_not_run_on_cpu():
    model, feeds = recurrent_model("RNN", activations=["Gelu"])
    with pytest.raises(gk.GraphkilnError):
        gk.parse_onnx_buffer(model).compile("cpu").run(feeds)
