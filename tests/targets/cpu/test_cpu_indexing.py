# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The cpu target's GatherND and ReverseSequence (targets/native/lower_indexing.py,
src/cpu/indexing.cpp) against ref, bit-exact: batch_dims, index depths, negative and
out-of-range indices, both axis orders, dtypes moved by width (bfloat16 included)."""

import ml_dtypes
import numpy as np
import pytest

import graphkiln as gk

from cpu_testing import check_cpu, node, onnx_model, rand

DTYPES = [np.float32, np.float64, ml_dtypes.bfloat16, np.int32, np.int8, np.int64]


def exact(model, feeds):
    return check_cpu(model, feeds, rtol=0, atol=0)


def values(shape, seed, dtype):
    x = rand(shape, seed, np.float32, low=-50.0, high=50.0)
    return x.astype(dtype) if np.dtype(dtype).kind == "f" else np.round(x).astype(dtype)


def indices_for(sizes, lead, seed, dtype=np.int64):
    """Random indices (lead..., len(sizes)) into dims `sizes`, negative ones among them."""
    rng = np.random.default_rng(seed)
    cols = [rng.integers(-s, s, size=lead) for s in sizes]
    return np.stack(cols, axis=-1).astype(dtype)


# -- GatherND -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "data_shape,batch_dims,depth,lead",
    [
        ((5, 6, 7), 0, 1, (4,)),
        ((5, 6, 7), 0, 2, (3, 2)),
        ((5, 6, 7), 0, 3, (8,)),
        ((3, 6, 7), 1, 1, (3, 4)),
        ((3, 6, 7, 2), 1, 2, (3, 5)),
        ((2, 3, 6, 7), 2, 1, (2, 3, 4)),
        ((2, 3, 6, 7), 2, 2, (2, 3, 2, 2)),
    ],
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_nd(data_shape, batch_dims, depth, lead, dtype):
    x = values(data_shape, 1, dtype)
    idx = indices_for(data_shape[batch_dims : batch_dims + depth], lead, 2)
    model = onnx_model(
        [node("GatherND", ["x", "i"], ["y"], batch_dims=batch_dims)],
        {"x": x.shape, "i": idx.shape},
        {"y": None},
        dtypes={"x": dtype, "i": np.int64, "y": dtype},
    )
    exact(model, {"x": x, "i": idx})


def test_gather_nd_int32_indices_constant():
    x = values((4, 5, 3), 3, np.float32)
    idx = indices_for((4, 5), (6,), 4, np.int32)
    model = onnx_model(
        [node("GatherND", ["x", "i"], ["y"])], {"x": x.shape}, {"y": None}, {"i": idx}
    )
    exact(model, {"x": x})


@pytest.mark.parametrize("bad", [5, -6])
def test_gather_nd_index_out_of_range_raises(bad):
    x = values((4, 5), 5, np.float32)
    idx = np.array([[1, 2], [3, bad]], np.int64)
    model = onnx_model(
        [node("GatherND", ["x", "i"], ["y"])],
        {"x": x.shape, "i": idx.shape},
        {"y": None},
        dtypes={"i": np.int64},
    )
    prog = gk.parse_onnx_buffer(model).compile("cpu")
    with pytest.raises(Exception, match="out of range"):
        prog.run({"x": x, "i": idx})


# -- ReverseSequence ------------------------------------------------------------------------
@pytest.mark.parametrize("batch_axis,time_axis", [(0, 1), (1, 0)])
@pytest.mark.parametrize("rest", [(), (3,), (2, 3)])
@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16, np.int64, np.int8])
@pytest.mark.parametrize("len_dtype", [np.int64, np.int32])
def test_reverse_sequence(batch_axis, time_axis, rest, dtype, len_dtype):
    batch, time = 5, 6
    shape = [0, 0, *rest]
    shape[batch_axis], shape[time_axis] = batch, time
    x = values(tuple(shape), 6, dtype)
    lens = np.array([0, 1, 6, 3, 4], len_dtype)  # empty, one step, the whole axis
    model = onnx_model(
        [node("ReverseSequence", ["x", "l"], ["y"], batch_axis=batch_axis, time_axis=time_axis)],
        {"x": x.shape, "l": lens.shape},
        {"y": x.shape},
        dtypes={"x": dtype, "l": len_dtype, "y": dtype},
    )
    exact(model, {"x": x, "l": lens})
    lens = np.random.default_rng(7).integers(0, time + 1, size=batch).astype(len_dtype)
    exact(model, {"x": values(tuple(shape), 8, dtype), "l": lens})


@pytest.mark.parametrize("bad", [-1, 7])
def test_reverse_sequence_length_out_of_range_raises(bad):
    x = values((3, 6), 9, np.float32)
    model = onnx_model(
        [node("ReverseSequence", ["x", "l"], ["y"], batch_axis=0, time_axis=1)],
        {"x": x.shape, "l": (3,)},
        {"y": x.shape},
        dtypes={"l": np.int64},
    )
    prog = gk.parse_onnx_buffer(model).compile("cpu")
    with pytest.raises(Exception, match="sequence length"):
        prog.run({"x": x, "l": np.array([2, bad, 1], np.int64)})


# -- NonMaxSuppression ----------------------------------------------------------------------
def _nms_inputs(batch, classes, boxes, seed, center):
    rng = np.random.default_rng(seed)
    if center:  # (x_center, y_center, width, height)
        b = np.concatenate(
            [rng.uniform(0, 10, (batch, boxes, 2)), rng.uniform(0.5, 4, (batch, boxes, 2))], -1
        )
    else:  # corners in either order
        b = rng.uniform(0, 10, (batch, boxes, 4))
    scores = rng.uniform(0.05, 1.0, (batch, classes, boxes))
    return b.astype(np.float32), scores.astype(np.float32)


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("limit", [None, 1, 3, 50, "input"])
@pytest.mark.parametrize("iou", [None, 0.0, 0.3, 0.7])
@pytest.mark.parametrize("score", [None, 0.4])
def test_nms(center, limit, iou, score):
    batch, classes, n = 2, 3, 12
    boxes, scores = _nms_inputs(batch, classes, n, 10 + center, center)
    names, inputs, inits = ["b", "s"], {"b": boxes.shape, "s": scores.shape}, {}
    feeds = {"b": boxes, "s": scores}
    for name, value, dtype in (("m", limit, np.int64), ("t", iou, np.float32)):
        names.append(name)
        if value == "input":
            inputs[name] = (1,)
            feeds[name] = np.array([4], dtype)
        elif value is not None:
            inits[name] = np.array([value], dtype)
        else:
            names[-1] = ""
    if score is not None:
        names.append("st")
        inits["st"] = np.array([score], np.float32)
    while names[-1] == "":
        names.pop()
    model = onnx_model(
        [node("NonMaxSuppression", names, ["y"], center_point_box=center)],
        inputs,
        {"y": None},
        inits,
        dtypes={"m": np.int64, "y": np.int64},
    )
    out = exact(model, feeds)[0]
    assert out.ndim == 2 and out.shape[1] == 3


def test_nms_thresholds_at_run_time_and_nothing_selected():
    boxes, scores = _nms_inputs(1, 2, 9, 20, 0)
    model = onnx_model(
        [node("NonMaxSuppression", ["b", "s", "m", "t", "st"], ["y"])],
        {"b": boxes.shape, "s": scores.shape, "t": (1,), "st": (1,)},
        {"y": None},
        {"m": np.array([5], np.int64)},
        dtypes={"y": np.int64},
    )
    for iou, score in ((0.5, 0.2), (0.1, 0.9), (0.5, 2.0)):  # the last selects nothing
        feeds = {"b": boxes, "s": scores, "t": np.array([iou], np.float32)}
        feeds["st"] = np.array([score], np.float32)
        out = exact(model, feeds)[0]
    assert out.shape == (0, 3)


def test_nms_ties_keep_lower_index_first():
    boxes = np.array([[[0, 0, 1, 1], [5, 5, 6, 6], [0, 0, 1, 1], [5, 5, 6, 6]]], np.float32)
    scores = np.array([[[0.5, 0.5, 0.5, 0.5]]], np.float32)
    model = onnx_model(
        [node("NonMaxSuppression", ["b", "s", "m"], ["y"])],
        {"b": boxes.shape, "s": scores.shape},
        {"y": None},
        {"m": np.array([10], np.int64)},
        dtypes={"y": np.int64},
    )
    out = exact(model, {"b": boxes, "s": scores})[0]
    # equal scores: box 0 before box 1; 2 and 3 repeat them (IoU 1 > 0): suppressed
    np.testing.assert_array_equal(out, [[0, 0, 0], [0, 0, 1]])


def test_nms_output_read_by_ref_nodes_with_fallback():
    """The cut output leaves the plan for ref-run readers (a Gather of its box column)."""
    boxes, scores = _nms_inputs(1, 2, 10, 30, 0)
    model = onnx_model(
        [
            node("NonMaxSuppression", ["b", "s", "m", "t"], ["sel"]),
            node("Gather", ["sel", "two"], ["col"], axis=1),
            node("Gather", ["sb", "col"], ["y"], axis=0),
        ],
        {"b": boxes.shape, "s": scores.shape, "sb": (10,)},
        {"y": None},
        {"m": np.array([3], np.int64), "t": np.array([0.4], np.float32), "two": np.array(2)},
        dtypes={"sel": np.int64},
    )
    feeds = {"b": boxes, "s": scores, "sb": rand((10,), 31)}
    out = check_cpu(model, feeds, rtol=0, atol=0, fallback="ref")[0]
    assert out.shape[0] > 0


def test_nms_in_a_saved_and_loaded_program_is_cut_to_its_selection():
    # the loaded plan knows which output is bounded from its saved steps, and no other
    # output (a plain one starting with a negative value) is cut
    boxes, scores = _nms_inputs(1, 2, 10, 31, 0)
    model = onnx_model(
        [
            node("NonMaxSuppression", ["b", "s", "m", "t"], ["y"]),
            node("Neg", ["s"], ["z"]),
        ],
        {"b": boxes.shape, "s": scores.shape},
        {"y": None, "z": scores.shape},
        {"m": np.array([3], np.int64), "t": np.array([0.4], np.float32)},
        dtypes={"m": np.int64, "y": np.int64},
    )
    feeds = {"b": boxes, "s": scores}
    program = gk.parse_onnx_buffer(model).compile("cpu")
    want = program.run(feeds)
    loaded = gk.load_buffer(gk.save_buffer(program))
    got = loaded.run(feeds)
    oracle = gk.parse_onnx_buffer(model).compile("ref").run(feeds)
    for g, w, o in zip(got, want, oracle):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(g, o)
    assert got[0].shape[0] < 1 * 2 * 3 + 1 and got[1].shape == scores.shape
