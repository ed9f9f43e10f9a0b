#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln's recurrent kernels (src/cpu/rnn.cpp) on the cpu target against onnxruntime's
CPU provider, same models, same threads (a benchmark, not a test; onnxruntime is the peer,
never a dependency: e.g. `pip install --target /tmp/ortsite onnxruntime` and put that on
PYTHONPATH for this script only).

    GRAPHKILN_NUM_THREADS=1 PYTHONPATH=python:/tmp/ortsite python benchmarks/rnn_cpu.py \\
        --threads 1 --record benchmarks/results/rnn_cpu.md

Two cases, float32, random weights (fixed seed) as initializers:
  - bilstm2: a CRNN-style 2-layer bidirectional LSTM (hidden 256, input 128, batch 1, 100
    steps; Transpose + Reshape between the layers), one call = one whole sequence;
  - stream: a batch-1, one-step LSTM (input --stream-input, hidden --stream-hidden) called
    as a voice-activity detector does, its Y_h / Y_c fed back as the next call's
    initial_h / initial_c; one call = one step.
Both engines' outputs are checked against each other first (allclose rtol 1e-4, atol
1e-4 * max |out|; for stream after --runs fed-back calls of each). Then the calls are timed
in interleaved blocks (--block timed calls of one engine after --settle untimed ones, then
the other), as benchmarks/cpu_vs_onnxruntime.py does; the medians (ms per call) and the
ratio graphkiln / onnxruntime (below 1: graphkiln is faster) are printed. numpy's own BLAS
threads are kept to one (OPENBLAS_NUM_THREADS, unless set): left spinning after the setup's
numpy work they steal the cores the timed calls run on.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads its BLAS

import numpy as np  # noqa: E402


def _rand(rng, shape, scale):
    return rng.uniform(-scale, scale, size=shape).astype(np.float32)


def bilstm2_model(seq, batch, inp, hidden) -> tuple[bytes, dict]:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    g = 4 * hidden
    s = 1.0 / np.sqrt(hidden)
    inits = {
        "w1": _rand(rng, (2, g, inp), s),
        "r1": _rand(rng, (2, g, hidden), s),
        "b1": _rand(rng, (2, 2 * g), s),
        "w2": _rand(rng, (2, g, 2 * hidden), s),
        "r2": _rand(rng, (2, g, hidden), s),
        "b2": _rand(rng, (2, 2 * g), s),
        "shape": np.array([0, 0, -1], np.int64),
    }
    nodes = [
        helper.make_node(
            "LSTM", ["x", "w1", "r1", "b1"], ["y1"], hidden_size=hidden, direction="bidirectional"
        ),
        helper.make_node("Transpose", ["y1"], ["y1t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["y1t", "shape"], ["x2"]),
        helper.make_node(
            "LSTM", ["x2", "w2", "r2", "b2"], ["y2"], hidden_size=hidden, direction="bidirectional"
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "bilstm2",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, batch, inp])],
        [helper.make_tensor_value_info("y2", TensorProto.FLOAT, [seq, 2, batch, hidden])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    return model.SerializeToString(), {"x": _rand(rng, (seq, batch, inp), 1.0)}


def stream_model(inp, hidden) -> tuple[bytes, dict]:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    g = 4 * hidden
    s = 1.0 / np.sqrt(hidden)
    inits = {
        "w": _rand(rng, (1, g, inp), s),
        "r": _rand(rng, (1, g, hidden), s),
        "b": _rand(rng, (1, 2 * g), s),
    }
    state = [1, 1, hidden]
    node = helper.make_node(
        "LSTM", ["x", "w", "r", "b", "", "h0", "c0"], ["", "h", "c"], hidden_size=hidden
    )
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [node],
        "stream",
        [
            helper.make_tensor_value_info("x", f, [1, 1, inp]),
            helper.make_tensor_value_info("h0", f, state),
            helper.make_tensor_value_info("c0", f, state),
        ],
        [helper.make_tensor_value_info(n, f, state) for n in ("h", "c")],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    feeds = {
        "x": _rand(rng, (1, 1, inp), 1.0),
        "h0": np.zeros(state, np.float32),
        "c0": np.zeros(state, np.float32),
    }
    return model.SerializeToString(), feeds


def _close(a, b) -> bool:
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-4, atol=1e-4 * scale))


def engines(model: bytes, threads: int):
    import onnxruntime as ort

    import graphkiln

    program = graphkiln.parse_onnx_buffer(model).compile("cpu")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    return (lambda feeds: program.run(feeds)), (lambda feeds: session.run(None, feeds))


def stream_calls(run, feeds):
    """One fed-back step per call: the closure keeps the state."""
    state = {"h0": feeds["h0"], "c0": feeds["c0"]}
    x = feeds["x"]

    def call():
        h, c = run({"x": x, **state})
        state["h0"], state["c0"] = h, c
        return h, c

    return call


def whole_calls(run, feeds):
    """One whole sequence per call."""
    return lambda: run(feeds)


def timed(calls, runs, block, settle):
    """calls: name -> zero-argument callable; their per-call ms, interleaved in blocks."""
    times = {name: [] for name in calls}
    while min(len(t) for t in times.values()) < runs:
        for name, call in calls.items():
            for _ in range(settle):
                call()
            for _ in range(block):
                start = time.perf_counter()
                call()
                times[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(t[:runs]) for name, t in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=200, help="timed calls per engine and case")
    parser.add_argument("--block", type=int, default=20)
    parser.add_argument("--settle", type=int, default=3)
    parser.add_argument("--stream-input", type=int, default=64)
    parser.add_argument("--stream-hidden", type=int, default=128)
    parser.add_argument("--record", help="also write the table to this markdown file")
    args = parser.parse_args()
    os.environ["GRAPHKILN_NUM_THREADS"] = str(args.threads)
    import onnxruntime as ort

    import graphkiln

    rows = []
    stream = f"input {args.stream_input}, hidden {args.stream_hidden}"
    cases = [
        (
            "bilstm2: 2-layer bidirectional LSTM, hidden 256, input 128, batch 1, 100 steps",
            bilstm2_model(100, 1, 128, 256),
            False,
        ),
        (
            f"stream: LSTM one step, batch 1, {stream}, state fed back",
            stream_model(args.stream_input, args.stream_hidden),
            True,
        ),
    ]
    for title, (model, feeds), streaming in cases:
        gk_run, ort_run = engines(model, args.threads)
        if streaming:
            gk_call, ort_call = stream_calls(gk_run, feeds), stream_calls(ort_run, feeds)
            for _ in range(args.runs):
                got, want = gk_call(), ort_call()
            match = all(_close(np.asarray(a), b) for a, b in zip(got, want))
            gk_call, ort_call = stream_calls(gk_run, feeds), stream_calls(ort_run, feeds)
        else:
            match = all(_close(np.asarray(a), b) for a, b in zip(gk_run(feeds), ort_run(feeds)))
            gk_call, ort_call = whole_calls(gk_run, feeds), whole_calls(ort_run, feeds)

        medians = timed({"gk": gk_call, "ort": ort_call}, args.runs, args.block, args.settle)
        rows.append((title, medians["gk"], medians["ort"], medians["gk"] / medians["ort"], match))

    ort_site = os.path.dirname(os.path.dirname(ort.__file__))
    lines = [
        f"# graphkiln cpu recurrent kernels vs onnxruntime {ort.__version__} (CPU provider)",
        "",
        f"- command: `GRAPHKILN_NUM_THREADS={args.threads} PYTHONPATH=python:{ort_site} "
        "python benchmarks/rnn_cpu.py " + " ".join(sys.argv[1:]) + "`",
        f"- date: {datetime.date.today()}; machine: {platform.machine()}, "
        f"{os.cpu_count()} logical CPUs; threads: graphkiln {args.threads}, onnxruntime "
        f"intra_op_num_threads {args.threads} (inter-op 1)",
        f"- graphkiln {graphkiln.__version__}; median ms per call of {args.runs} timed calls "
        f"each, interleaved in blocks of {args.block} (each after {args.settle} untimed calls)",
        "",
        "| case | graphkiln ms | onnxruntime ms | ratio gk/ort | matches ort |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for title, g, o, ratio, match in rows:
        lines.append(f"| {title} | {g:.3f} | {o:.3f} | {ratio:.3f} | {'yes' if match else 'NO'} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.record:
        with open(args.record, "w", encoding="utf-8") as f:
            f.write(text)
    return 0 if all(r[4] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
