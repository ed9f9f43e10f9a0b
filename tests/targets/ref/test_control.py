# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels, shape inference and importers of If, Loop and Scan."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.errors import UnsupportedOperatorError
from graphkiln.ir import DType, Graph, SequenceType, TensorType
from graphkiln.program import Program
from graphkiln.targets.ref.control import Loop

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def info(name, elem=F32, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def load(model):
    return graphkiln.parse_onnx_buffer(model.SerializeToString(), default_dim=None).compile("ref")


def test_if_picks_a_branch_reading_outer_values(rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    then_g = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["t"])], "then", [], [info("t", shape=[2, 3])]
    )
    else_g = helper.make_graph(
        [helper.make_node("Mul", ["x", "x"], ["e"])], "else", [], [info("e", shape=[2, 3])]
    )
    model = make_model(
        [helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
        [info("c", BOOL, []), info("x", shape=[2, 3])],
        [info("y")],
        opset=11,
    )
    prog = load(model)
    assert prog.get_output_shapes() == [TensorType(DType.f32, (2, 3))]
    (y,) = prog.run({"c": np.array(True), "x": x})
    np.testing.assert_allclose(y, x + x)
    (y,) = prog.run({"c": np.array(False), "x": x})
    np.testing.assert_allclose(y, x * x)


def test_if_infer_merges_branch_shapes():
    g = Graph()
    c = g.add_input("c", TensorType(DType.bool, ()))
    branches = []
    for n in (3, 4):
        b = Graph(f"b{n}", g)
        b.outputs = [b.constant(np.zeros((2, n), np.float32), f"k{n}")]
        branches.append(b)
    (y,) = g.add_node(
        "If", [c], {"then_branch": branches[0], "else_branch": branches[1]}, output_names=["y"]
    ).outputs
    assert y.type.dtype == DType.f32 and y.type.dims[0] == 2 and isinstance(y.type.dims[1], str)


def loop_model(opset=11):
    """acc' = acc + x for at most M rounds while iteration < stop; scans acc' each round."""
    body = helper.make_graph(
        [
            helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
            helper.make_node("Identity", ["acc_out"], ["scan_out"]),
            helper.make_node("Less", ["i", "stop"], ["go"]),
        ],
        "body",
        [info("i", I64, []), info("cond_in", BOOL, []), info("acc_in", shape=[3])],
        [info("go", BOOL, []), info("acc_out", shape=[3]), info("scan_out", shape=[3])],
    )
    return make_model(
        [helper.make_node("Loop", ["M", "cond", "acc0"], ["acc", "scans"], body=body)],
        [
            info("M", I64, []),
            info("cond", BOOL, []),
            info("acc0", shape=[3]),
            info("x", shape=[3]),
            info("stop", I64, []),
        ],
        [info("acc"), info("scans")],
        opset=opset,
    )


@pytest.mark.parametrize("trips,stop", [(5, 100), (5, 2), (0, 100)])
def test_loop_carries_and_stacks(rng, trips, stop):
    acc0, x = rng.standard_normal((2, 3)).astype(np.float32)
    prog = load(loop_model())
    acc_t, scans_t = prog.get_output_shapes()
    assert acc_t == TensorType(DType.f32, (3,)) and scans_t.dtype == DType.f32
    assert scans_t.rank == 2 and scans_t.dims[1] == 3
    acc, scans = prog.run(
        {"M": np.array(trips), "cond": np.array(True), "acc0": acc0, "x": x, "stop": np.array(stop)}
    )
    # the body's cond (i < stop) decides whether round i + 1 runs
    rounds = min(trips, stop + 1)
    want = np.array([acc0 + (k + 1) * x for k in range(rounds)], np.float32).reshape(rounds, 3)
    np.testing.assert_allclose(scans, want, rtol=1e-6)
    np.testing.assert_allclose(acc, want[-1] if rounds else acc0, rtol=1e-6)


def test_loop_without_trip_count_or_cond_is_refused():
    with pytest.raises(ValueError, match="never end"):
        Loop(None, None, np.zeros(3, np.float32), body=None)


def scan_body():
    """state' = state + x_t; outputs state' and x_t * 2."""
    return helper.make_graph(
        [
            helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
            helper.make_node("Add", ["x_t", "x_t"], ["y_t"]),
        ],
        "body",
        [info("s_in", shape=[2]), info("x_t", shape=[2])],
        [info("s_out", shape=[2]), info("y_t", shape=[2])],
    )


def test_scan9_axes_and_directions(rng):
    s0 = rng.standard_normal(2).astype(np.float32)
    x = rng.standard_normal((2, 5)).astype(np.float32)  # scanned along axis 1, backwards
    node = helper.make_node(
        "Scan",
        ["s0", "x"],
        ["s", "y"],
        body=scan_body(),
        num_scan_inputs=1,
        scan_input_axes=[1],
        scan_input_directions=[1],
        scan_output_axes=[-1],
        scan_output_directions=[1],
    )
    prog = load(
        make_model(
            [node],
            [info("s0", shape=[2]), info("x", shape=[2, 5])],
            [info("s"), info("y")],
            opset=11,
        )
    )
    assert prog.get_output_shapes()[1] == TensorType(DType.f32, (2, 5))
    s, y = prog.run({"s0": s0, "x": x})
    np.testing.assert_allclose(s, s0 + x.sum(axis=1), rtol=1e-5)
    # visited in reverse and written in reverse: back in the original order
    np.testing.assert_allclose(y, 2 * x, rtol=1e-6)


def test_scan8_batched_form_is_rewritten(rng):
    s0 = rng.standard_normal((3, 2)).astype(np.float32)
    x = rng.standard_normal((3, 4, 2)).astype(np.float32)
    node = helper.make_node(
        "Scan", ["", "s0", "x"], ["s", "y"], body=scan_body(), num_scan_inputs=1, directions=[1]
    )
    prog = load(
        make_model(
            [node],
            [info("s0", shape=[3, 2]), info("x", shape=[3, 4, 2])],
            [info("s"), info("y")],
            opset=8,
        )
    )
    assert prog.get_output_shapes() == [
        TensorType(DType.f32, (3, 2)),
        TensorType(DType.f32, (3, 4, 2)),
    ]
    assert "scan_batch_row" in str(prog)
    s, y = prog.run({"s0": s0, "x": x})
    np.testing.assert_allclose(s, s0 + x.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(y, (2 * x)[:, ::-1], rtol=1e-6)


def test_scan8_with_sequence_lens_is_refused():
    node = helper.make_node(
        "Scan", ["lens", "s0", "x"], ["s", "y"], body=scan_body(), num_scan_inputs=1
    )
    model = make_model(
        [node],
        [info("lens", I64, [3]), info("s0", shape=[3, 2]), info("x", shape=[3, 4, 2])],
        [info("s"), info("y")],
        opset=8,
    )
    with pytest.raises(UnsupportedOperatorError, match="sequence_lens"):
        load(model)


def test_loop_infer_loosens_changing_carried_values():
    g = Graph()
    m = g.add_input("m", TensorType(DType.i64, ()))
    seq0 = g.add_node("SequenceEmpty", [], {}, output_names=["s0"]).outputs[0]
    v0 = g.add_input("v0", TensorType(DType.f32, (1, 3)))
    body = Graph("body", g)
    i = body.add_input("i", TensorType(DType.i64, ()))
    c = body.add_input("c", TensorType(DType.bool, ()))
    s_in = body.add_input("s_in", seq0.type)
    v_in = body.add_input("v_in", TensorType(DType.f32, ("k", 3)))
    body.outputs = [c, body.add("SequenceInsert", s_in, v_in), v_in, i]
    outs = g.add_node(
        "Loop", [m, None, seq0, v0], {"body": body}, output_names=["s", "v", "iters"]
    ).outputs
    g.outputs = list(outs)
    assert isinstance(outs[0].type, SequenceType)
    assert outs[1].type.dims[1] == 3 and isinstance(outs[1].type.dims[0], str)
    assert outs[2].type.dtype == DType.i64 and outs[2].type.rank == 1
    m_val = np.array(4, np.int64)
    v_val = np.ones((1, 3), np.float32)
    seq, v, iters = Program(g).compile("ref").run({"m": m_val, "v0": v_val})
    assert len(seq) == 4 and iters.tolist() == [0, 1, 2, 3]


def test_subgraph_input_types_for_untyped_bodies():
    """What the importer gives a Loop / Scan body's inputs when the model leaves them untyped."""
    from graphkiln.frontends.onnx.control import loop_body_inputs, scan_body_inputs
    from graphkiln.ir import Value

    m, carried = Value("m", TensorType(DType.i64, ())), Value("v", TensorType(DType.f32, (2, 3)))
    i, c, v = loop_body_inputs([m, None, carried], {}, 16)
    assert (i, c) == (TensorType(DType.i64, ()), TensorType(DType.bool, ()))
    assert v.dtype == DType.f32 and v.rank == 2 and not v.is_static  # may change per round
    state, xs = (
        Value("s", TensorType(DType.f32, (4,))),
        Value("x", TensorType(DType.i32, (5, 6, 7))),
    )
    s, x = scan_body_inputs([state, xs], {"num_scan_inputs": 1, "scan_input_axes": (-2,)}, 11)
    assert s.rank == 1 and x == TensorType(DType.i32, (5, 7))
    s, x = scan_body_inputs([None, state, xs], {"num_scan_inputs": 1}, 8)  # batch dim first
    assert s.rank == 0 and x == TensorType(DType.i32, (7,))
