# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""passes/fold_quantized.py (QDQ Conv / MaxPool -> QLinearConv / integer MaxPool) and
passes/expand_quantize.py (per-tensor QuantizeLinear / DequantizeLinear -> pointwise ops):
which graphs they rewrite, which they leave, and the values on ref: the folded graph
within one unit of the QDQ graph, the expanded one equal to it."""

import numpy as np
import pytest

from graphkiln.ir import DType, Graph, TensorType
from graphkiln.ir.clone import clone_graph
from graphkiln.passes import expand_quantize, fold_quantized
from graphkiln.passes.context import PassContext
from graphkiln.targets.ref.evaluator import run_graph
from graphkiln.targets.ref.table import KERNELS

U8, I8 = DType.u8, DType.i8


def _scalar(g, value, dtype):
    return g.constant(np.array(value, dtype.numpy))


def _qdq_conv(
    rng,
    *,
    relu=False,
    y_zero=0,
    bias_scale_factor=1.0,
    w_zero=0,
    per_channel=True,
    act=U8,
    clip=None,
):
    """Q(Relu?(Conv(DQ(x), DQ(w), DQ(b)))) as quantizers write it; `clip`: (min, max) of a
    Clip in the Relu's place, None for a bound not given."""
    g = Graph()
    x = g.add_input("x", TensorType(act, (1, 4, 7, 7)))
    x_scale = 0.05
    w_scale = rng.uniform(0.01, 0.03, size=(6,) if per_channel else ()).astype(np.float32)
    x_real = g.add("DequantizeLinear", x, _scalar(g, x_scale, DType.f32), _scalar(g, 3, act))
    w_q = g.constant(rng.integers(-127, 128, size=(6, 4, 3, 3)).astype(np.int8))
    w_zero_data = np.full(w_scale.shape, w_zero, np.int8)
    w_real = g.add("DequantizeLinear", w_q, g.constant(w_scale), g.constant(w_zero_data), axis=0)
    b_q = g.constant(rng.integers(-2000, 2000, size=(6,)).astype(np.int32))
    b_scale = (np.float32(x_scale) * w_scale * bias_scale_factor).astype(np.float32)
    b_real = g.add("DequantizeLinear", b_q, g.constant(b_scale.reshape(-1)), axis=0)
    y = g.add("Conv", x_real, w_real, b_real, pads=(1, 1, 1, 1))
    if relu:
        y = g.add("Relu", y)
    if clip is not None:
        bounds = [None if b is None else _scalar(g, b, DType.f32) for b in clip]
        y = g.add("Clip", y, *bounds)
    out = g.add("QuantizeLinear", y, _scalar(g, 0.4, DType.f32), _scalar(g, y_zero, act))
    g.outputs = [out]
    return g


def _ops(graph):
    return [n.op for n in graph.nodes if n.op != "Constant"]


def _inputs(graph, seed):
    rng = np.random.default_rng(seed)
    feeds = []
    for v in graph.inputs:
        info = np.iinfo(v.type.dtype.numpy)
        feeds.append(rng.integers(info.min, info.max + 1, size=v.type.dims).astype(info.dtype))
    return feeds


def _fold_and_compare(graph, expected_ops, seed=0):
    original = clone_graph(graph)
    fold_quantized.run(graph, PassContext())
    graph.verify()
    assert _ops(graph) == expected_ops
    feeds = _inputs(original, seed)
    (want,) = run_graph(original, feeds, KERNELS)
    (got,) = run_graph(graph, feeds, KERNELS)
    diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
    assert diff.max() <= 1 and np.mean(diff == 0) > 0.97
    assert len(np.unique(want)) > 8
    return graph


@pytest.mark.parametrize("act", [U8, I8])
@pytest.mark.parametrize("per_channel", [True, False])
def test_conv_becomes_qlinear_conv(act, per_channel):
    g = _qdq_conv(np.random.default_rng(1), act=act, per_channel=per_channel)
    _fold_and_compare(g, ["QLinearConv"])


def test_relu_folds_when_the_zero_point_is_the_lowest_value():
    g = _qdq_conv(np.random.default_rng(2), relu=True, y_zero=0)
    _fold_and_compare(g, ["QLinearConv"])
    g = _qdq_conv(np.random.default_rng(2), relu=True, y_zero=-128, act=I8)
    _fold_and_compare(g, ["QLinearConv"])


def test_relu_stays_when_it_changes_values():
    g = _qdq_conv(np.random.default_rng(3), relu=True, y_zero=20)
    fold_quantized.run(g, PassContext())
    assert "QLinearConv" not in _ops(g) and "Relu" in _ops(g)


@pytest.mark.parametrize("clip", [(0.0, 102.0), (-1.0, 500.0), (0.0, None), (None, 101.81)])
def test_clip_folds_when_the_saturation_does_its_work(clip):
    """y's scale is 0.4 and zero point 0: u8 keeps [0, 102]; a Clip whose min is at most 0
    and whose max quantizes to 255 (101.81 / 0.4 rounds to 255) changes nothing Q keeps."""
    g = _qdq_conv(np.random.default_rng(2), clip=clip, y_zero=0)
    _fold_and_compare(g, ["QLinearConv"])


@pytest.mark.parametrize(
    ("clip", "y_zero"), [((0.0, 6.0), 0), ((0.0, 101.79), 0), ((0.5, None), 0), ((0.0, None), 20)]
)
def test_clip_stays_when_it_changes_values(clip, y_zero):
    """A max below what Q keeps (6 / 0.4 = 15 < 255; 101.79 / 0.4 rounds to 254), a min
    above 0, or a zero point above the lowest value (Q keeps negatives the Clip removes)."""
    g = _qdq_conv(np.random.default_rng(3), clip=clip, y_zero=y_zero)
    fold_quantized.run(g, PassContext())
    assert "QLinearConv" not in _ops(g) and "Clip" in _ops(g)


def test_bias_of_another_scale_is_not_folded():
    g = _qdq_conv(np.random.default_rng(4), bias_scale_factor=1.5)
    fold_quantized.run(g, PassContext())
    assert "Conv" in _ops(g) and "QLinearConv" not in _ops(g)


def test_weight_zero_points_are_kept():
    g = _qdq_conv(np.random.default_rng(5), w_zero=3)
    _fold_and_compare(g, ["QLinearConv"])  # the kernel choice is the target's
    (qconv,) = [n for n in g.nodes if n.op == "QLinearConv"]
    assert np.all(qconv.inputs[5].constant == 3)


def test_conv_with_another_reader_is_not_folded():
    g = _qdq_conv(np.random.default_rng(6))
    conv = next(n for n in g.nodes if n.op == "Conv")
    g.outputs = g.outputs + [conv.outputs[0]]
    fold_quantized.run(g, PassContext())
    assert "QLinearConv" not in _ops(g)


def _qdq_max_pool(same_params: bool):
    g = Graph()
    x = g.add_input("x", TensorType(U8, (1, 3, 9, 9)))
    real = g.add("DequantizeLinear", x, _scalar(g, 0.1, DType.f32), _scalar(g, 5, U8))
    pooled = g.add("MaxPool", real, kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
    scale = 0.1 if same_params else 0.2
    g.outputs = [g.add("QuantizeLinear", pooled, _scalar(g, scale, DType.f32), _scalar(g, 5, U8))]
    return g


def test_max_pool_of_dequantized_data_runs_on_the_integers():
    g = _qdq_max_pool(True)
    original = clone_graph(g)
    fold_quantized.run(g, PassContext())
    assert _ops(g) == ["MaxPool"]
    feeds = _inputs(original, 7)
    np.testing.assert_array_equal(
        run_graph(g, feeds, KERNELS)[0], run_graph(original, feeds, KERNELS)[0]
    )


def test_max_pool_requantized_to_other_parameters_stays():
    g = _qdq_max_pool(False)
    fold_quantized.run(g, PassContext())
    assert _ops(g) == ["DequantizeLinear", "MaxPool", "QuantizeLinear"]


# -- expand_quantize ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,zero", [(U8, 0), (U8, 131), (I8, 0), (I8, -7)])
def test_expanded_quantize_dequantize_equal_ref(dtype, zero):
    """DQ(a) - DQ(b) -> Q as pointwise ops: exactly the values of the ops it replaces,
    including saturation at both ends."""
    g = Graph()
    a = g.add_input("a", TensorType(dtype, (4, 300)))
    b = g.add_input("b", TensorType(dtype, (4, 300)))
    real_a = g.add("DequantizeLinear", a, _scalar(g, 0.5, DType.f32), _scalar(g, zero, dtype))
    real_b = g.add("DequantizeLinear", b, _scalar(g, 0.037, DType.f32), _scalar(g, zero, dtype))
    total = g.add("Sub", real_a, real_b)  # of both signs: saturates at both ends
    g.outputs = [
        g.add("QuantizeLinear", total, _scalar(g, 0.25, DType.f32), _scalar(g, zero, dtype))
    ]
    original = clone_graph(g)
    expand_quantize.run(g, PassContext())
    assert "QuantizeLinear" not in _ops(g) and "DequantizeLinear" not in _ops(g)
    feeds = _inputs(original, 8)
    (want,) = run_graph(original, feeds, KERNELS)
    (got,) = run_graph(g, feeds, KERNELS)
    info = np.iinfo(dtype.numpy)
    assert want.min() == info.min and want.max() == info.max  # saturates both ways
    np.testing.assert_array_equal(got, want)


def test_per_axis_quantize_is_not_expanded():
    g = Graph()
    x = g.add_input("x", TensorType(DType.f32, (2, 3)))
    scale = g.constant(np.array([0.1, 0.2, 0.3], np.float32))
    g.outputs = [g.add("QuantizeLinear", x, scale, g.constant(np.zeros(3, np.uint8)), axis=1)]
    expand_quantize.run(g, PassContext())
    assert _ops(g) == ["QuantizeLinear"]


# -- products, moves, requantization ---------------------------------------------------------


def _qdq_product(op, rng, *, per_column=True, trans_b=False, bias=True):
    """op(DQ(a), DQ(w)[, c]) with a u8 per tensor and constant i8 w of zero point 0."""
    g = Graph()
    a = g.add_input("a", TensorType(U8, (6, 32)))
    a_real = g.add("DequantizeLinear", a, _scalar(g, 0.02, DType.f32), _scalar(g, 100, U8))
    w_shape = (24, 32) if trans_b else (32, 24)
    w_scale = rng.uniform(0.005, 0.02, size=(24,) if per_column else ()).astype(np.float32)
    w_q = g.constant(rng.integers(-127, 128, size=w_shape).astype(np.int8))
    w_real = g.add(
        "DequantizeLinear",
        w_q,
        g.constant(w_scale),
        g.constant(np.zeros(w_scale.shape, np.int8)),
        axis=0 if trans_b else 1,
    )
    if op == "MatMul":
        g.outputs = [g.add("MatMul", a_real, w_real)]
    else:
        c = [g.constant(rng.standard_normal(24).astype(np.float32))] if bias else []
        g.outputs = [g.add("Gemm", a_real, w_real, *c, transB=int(trans_b))]
    return g


@pytest.mark.parametrize("per_column", [True, False])
def test_matmul_of_dequantized_weights_becomes_an_integer_product(per_column):
    g = _qdq_product("MatMul", np.random.default_rng(9), per_column=per_column)
    original = clone_graph(g)
    fold_quantized.run(g, PassContext())
    assert _ops(g) == ["MatMulInteger", "Cast", "Mul"]
    feeds = _inputs(original, 10)
    np.testing.assert_allclose(
        run_graph(g, feeds, KERNELS)[0],
        run_graph(original, feeds, KERNELS)[0],
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_gemm_of_dequantized_weights_becomes_an_integer_product(trans_b, bias):
    g = _qdq_product("Gemm", np.random.default_rng(11), trans_b=trans_b, bias=bias)
    original = clone_graph(g)
    fold_quantized.run(g, PassContext())
    assert _ops(g) == ["MatMulInteger", "Cast", "Mul"] + (["Add"] if bias else [])
    feeds = _inputs(original, 12)
    np.testing.assert_allclose(
        run_graph(g, feeds, KERNELS)[0],
        run_graph(original, feeds, KERNELS)[0],
        rtol=1e-5,
        atol=1e-5,
    )


def test_dequantize_moves_after_gather_and_reshape_and_requantization_cancels():
    """Q(Reshape(DQ(Gather(DQ(table), ids)))) of equal parameters -> Reshape(Gather(table))."""
    g = Graph()
    ids = g.add_input("ids", TensorType(DType.i64, (2, 5)))
    table = g.constant(np.random.default_rng(13).integers(0, 256, (10, 8)).astype(np.uint8))
    s, z = _scalar(g, 0.1, DType.f32), _scalar(g, 128, U8)
    rows = g.add("Gather", g.add("DequantizeLinear", table, s, z), ids, axis=0)
    flat = g.add("Reshape", rows, g.constant(np.array([10, 8], np.int64)))
    g.outputs = [g.add("QuantizeLinear", flat, s, z)]
    original = clone_graph(g)
    fold_quantized.run(g, PassContext())
    assert _ops(g) == ["Gather", "Reshape"]
    feeds = [np.random.default_rng(14).integers(0, 10, (2, 5)).astype(np.int64)]
    np.testing.assert_array_equal(
        run_graph(g, feeds, KERNELS)[0], run_graph(original, feeds, KERNELS)[0]
    )


def test_requantization_to_other_parameters_stays():
    g = Graph()
    x = g.add_input("x", TensorType(U8, (3, 4)))
    real = g.add("DequantizeLinear", x, _scalar(g, 0.1, DType.f32), _scalar(g, 128, U8))
    g.outputs = [g.add("QuantizeLinear", real, _scalar(g, 0.1, DType.f32), _scalar(g, 127, U8))]
    fold_quantized.run(g, PassContext())
    assert _ops(g) == ["DequantizeLinear", "QuantizeLinear"]
