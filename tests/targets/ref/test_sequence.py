# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels, shape inference and importers of sequence and optional ops."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.ir import DType, Graph, OptionalType, SequenceType, TensorType
from op_testing import run_graph

I32 = TensorProto.INT32


def test_construct_at_insert_erase_length(rng):
    arrays = [rng.standard_normal((2, n)).astype(np.float32) for n in (3, 3, 3)]
    extra = rng.standard_normal((2, 3)).astype(np.float32)
    g = Graph()
    xs = [g.add_input(f"x{i}", TensorType(DType.f32, (2, 3))) for i in range(3)]
    e = g.add_input("e", TensorType(DType.f32, (2, 3)))
    seq = g.add("SequenceConstruct", *xs)
    assert seq.type == SequenceType(TensorType(DType.f32, (2, 3)))
    inserted = g.add("SequenceInsert", seq, e, g.constant(np.array(-1, np.int64)))
    erased = g.add("SequenceErase", inserted, g.constant(np.array(0, np.int64)))
    appended = g.add("SequenceInsert", erased, e)
    at = g.add("SequenceAt", appended, g.constant(np.array(-2, np.int32)))
    length = g.add("SequenceLength", appended)
    assert at.type == TensorType(DType.f32, (2, 3)) and length.type == TensorType(DType.i64, ())
    g.outputs = [seq, appended, at, length]
    feeds = {f"x{i}": a for i, a in enumerate(arrays)} | {"e": extra}
    got_seq, got_appended, got_at, got_len = run_graph(g, feeds)
    want = arrays[:2] + [extra] + arrays[2:]  # insert before the last
    want = want[1:] + [extra]  # erase the first, append
    assert len(got_seq) == 3 and got_len == len(want) == 4
    for got, w in zip(got_appended, want):
        np.testing.assert_array_equal(got, w)
    np.testing.assert_array_equal(got_at, want[-2])


def test_position_out_of_range_is_an_error():
    g = Graph()
    x = g.add_input("x", TensorType(DType.i32, (2,)))
    seq = g.add("SequenceConstruct", x)
    g.outputs = [g.add("SequenceAt", seq, g.constant(np.array(1, np.int64)))]
    with pytest.raises(RuntimeError, match="out of range"):
        run_graph(g, {"x": np.array([1, 2], np.int32)})


@pytest.mark.parametrize("split,keepdims", [(None, 1), (None, 0), (2, 1), ([1, 3, 1], 1)])
def test_split_to_sequence_and_concat_back(rng, split, keepdims):
    x = rng.integers(-50, 50, (3, 5, 2)).astype(np.int32)
    g = Graph()
    xv = g.add_input("x", TensorType(DType.i32, (3, 5, 2)))
    split_v = None if split is None else g.constant(np.array(split, np.int64))
    seq = g.add("SplitToSequence", xv, split_v, axis=-2, keepdims=keepdims)
    back = g.add("ConcatFromSequence", seq, axis=1, new_axis=int(not keepdims))
    g.outputs = [seq, back]
    assert seq.type.elem.dtype == DType.i32 and seq.type.elem.rank == (3 if keepdims else 2)
    assert back.type.rank == 3 and back.type.dims[0] == 3
    parts, y = run_graph(g, {"x": x})
    if split is None:
        want = [x[:, i : i + 1] if keepdims else x[:, i] for i in range(5)]
    elif split == 2:
        want = [x[:, 0:2], x[:, 2:4], x[:, 4:5]]
    else:
        want = [x[:, 0:1], x[:, 1:4], x[:, 4:5]]
    assert len(parts) == len(want)
    for p, w in zip(parts, want):
        np.testing.assert_array_equal(p, w)
    np.testing.assert_array_equal(y, x)


def test_concat_from_sequence_new_axis_negative(rng):
    arrays = [rng.standard_normal((2, 3)).astype(np.float16) for _ in range(4)]
    g = Graph()
    seq = g.add_input("s", SequenceType(TensorType(DType.f16, (2, 3))))
    y = g.add("ConcatFromSequence", seq, axis=-1, new_axis=1)
    assert y.type.dtype == DType.f16 and y.type.dims[:2] == (2, 3) and y.type.rank == 3
    g.outputs = [y]
    (got,) = run_graph(g, {"s": arrays})
    want = np.empty((2, 3, 4), np.float16)
    for k, a in enumerate(arrays):
        want[:, :, k] = a
    np.testing.assert_array_equal(got, want)


def test_optional_ops():
    g = Graph()
    x = g.add_input("x", TensorType(DType.i64, (2,)))
    full = g.add("Optional", x)
    empty = g.add("Optional", type="seq<f32[*]>")
    assert full.type == OptionalType(TensorType(DType.i64, (2,)))
    assert empty.type == OptionalType(SequenceType(TensorType(DType.f32, None)))
    g.outputs = [
        g.add("OptionalHasElement", full),
        g.add("OptionalHasElement", empty),
        g.add("OptionalGetElement", full),
        empty,
        g.add("OptionalHasElement"),
    ]
    has_full, has_empty, got, empty_value, has_nothing = run_graph(g, {"x": np.array([4, -9])})
    assert has_full.dtype == np.bool_ and has_full and not has_empty and not has_nothing
    np.testing.assert_array_equal(got, [4, -9])
    assert empty_value is None


def test_importer_sequence_empty_dtype_optional_type_and_sequence_map(rng):
    """SequenceEmpty's ONNX dtype code, Optional's type_proto and a SequenceMap body."""
    body = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"]), helper.make_node("Add", ["c", "t"], ["d"])],
        "body",
        [
            helper.make_tensor_value_info("a", I32, ["n"]),
            helper.make_tensor_value_info("b", I32, ["n"]),
            helper.make_tensor_value_info("t", I32, [1]),
        ],
        [helper.make_tensor_value_info("d", I32, ["n"])],
    )
    seq_type = helper.make_sequence_type_proto(helper.make_tensor_type_proto(I32, None))
    nodes = [
        helper.make_node("SequenceEmpty", [], ["empty"], dtype=I32),
        helper.make_node("SequenceInsert", ["empty", "t"], ["one"]),
        helper.make_node("SequenceMap", ["xs", "ys", "t"], ["sums"], body=body),
        helper.make_node("Optional", [], ["none"], type=seq_type),
        helper.make_node("OptionalHasElement", ["none"], ["has"]),
    ]
    seq_info = helper.make_tensor_sequence_value_info
    model = make_model(
        nodes,
        [
            seq_info("xs", I32, None),
            seq_info("ys", I32, None),
            helper.make_tensor_value_info("t", I32, [1]),
        ],
        [
            seq_info("one", I32, None),
            seq_info("sums", I32, None),
            helper.make_tensor_value_info("has", TensorProto.BOOL, []),
        ],
        opset=18,
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString()).compile("ref")
    assert prog.get_output_shapes()[0] == SequenceType(TensorType(DType.i32, None))
    xs = [rng.integers(-9, 9, n).astype(np.int32) for n in (2, 5, 1)]
    ys = [rng.integers(-9, 9, n).astype(np.int32) for n in (2, 5, 1)]
    t = np.array([100], np.int32)
    one, sums, has = prog.run({"xs": xs, "ys": ys, "t": t})
    assert len(one) == 1 and one[0].tolist() == [100] and not has
    assert len(sums) == 3
    for s, x, y in zip(sums, xs, ys):
        assert s.dtype == np.int32
        np.testing.assert_array_equal(s, x + y + 100)
