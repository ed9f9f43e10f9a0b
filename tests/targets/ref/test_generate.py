# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""ref kernels, shape inference and importers of Constant, ConstantOfShape, Range, EyeLike and
the random ops."""

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model
from graphkiln.ir import DType, TensorType
from op_testing import run_op, run_op_typed


def test_constant_of_shape_is_static_from_a_constant_shape():
    y, t = run_op_typed(
        "ConstantOfShape", [np.array([2, 3], np.int64)], consts=[0], value=np.array([7], np.int32)
    )
    assert t == TensorType(DType.i32, (2, 3))
    np.testing.assert_array_equal(y, np.full((2, 3), 7, np.int32))
    y, t = run_op_typed("ConstantOfShape", [np.array([4], np.int64)])
    assert y.dtype == np.float32 and (y == 0).all() and t.rank == 1


@pytest.mark.parametrize(
    "start,limit,delta,dtype",
    [
        (3, 9, 3, np.int32),
        (10, 4, -2, np.int64),
        (0.5, 2.0, 0.25, np.float32),
        (1.0, -1.0, -0.3, np.float64),
        (0.0, 3.0, 0.5, np.float16),
        (5, 5, 1, np.int16),
    ],
)
def test_range(start, limit, delta, dtype):
    args = [np.array(v, dtype) for v in (start, limit, delta)]
    y, t = run_op_typed("Range", args, consts=[0, 1, 2])
    count = max(int(np.ceil((limit - start) / delta)), 0)
    want = np.array([start + i * delta for i in range(count)], np.float64)
    assert t.dims == (count,)
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=1e-3)
    y, t = run_op_typed("Range", args)  # not constant: one dim of unknown size
    assert t.rank == 1 and y.shape == (count,)


def test_range_bfloat16_is_stashed_in_float32():
    bf = ml_dtypes.bfloat16
    args = [np.array(v, bf) for v in (256.0, 260.0, 1.0)]
    y = run_op("Range", args)
    # four elements, each start + i * delta rounded once to bfloat16
    np.testing.assert_array_equal(y, np.arange(256, 260, dtype=np.float32).astype(bf))


def test_eye_like():
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    y, t = run_op_typed("EyeLike", [x], k=2, dtype=DType.i32)
    want = np.array([[int(j - i == 2) for j in range(5)] for i in range(3)], np.int32)
    np.testing.assert_array_equal(y, want)
    y = run_op("EyeLike", [x], k=-1)
    assert y.dtype == np.float32 and y[1, 0] == 1 and y.sum() == 2


def test_random_ops_shapes_dtypes_and_seed():
    attrs = {"shape": (3, 4), "low": 2.0, "high": 3.0, "seed": 1.0, "dtype": DType.f64}
    a, t = run_op_typed("RandomUniform", [], **attrs)
    b = run_op("RandomUniform", [], **attrs)
    assert t == TensorType(DType.f64, (3, 4)) and ((a >= 2) & (a < 3)).all()
    np.testing.assert_array_equal(a, b)  # same seed, same draws
    n = run_op("RandomNormal", [], shape=(2000,), mean=5.0, scale=0.1, seed=3.0)
    assert n.dtype == np.float32 and abs(n.mean() - 5.0) < 0.02
    like = np.zeros((2, 5), np.float16)
    u = run_op("RandomUniformLike", [like], seed=2.0)
    assert u.dtype == np.float16 and u.shape == (2, 5)
    v = run_op("RandomNormalLike", [like], dtype=DType.f32)
    assert v.dtype == np.float32 and v.shape == (2, 5)
    p = np.array([0.0, 1.0, 0.0, 1.0], np.float32)
    bern = run_op("Bernoulli", [p], seed=0.0, dtype=DType.bool)
    assert bern.tolist() == [False, True, False, True]
    logits = np.log(np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], np.float32) + 1e-30)
    m, t = run_op_typed("Multinomial", [logits], sample_size=6, seed=4.0)
    assert t == TensorType(DType.i32, (2, 6))
    assert (m[0] == 1).all() and (m[1] == 0).all()


def test_importer_converts_dtype_codes_and_constant_forms():
    nodes = [
        helper.make_node(
            "RandomUniform", [], ["r"], shape=[2, 3], dtype=TensorProto.DOUBLE, seed=5.0
        ),
        helper.make_node("EyeLike", ["r"], ["e"], dtype=TensorProto.INT64),
        helper.make_node("Constant", [], ["c"], value_ints=[2, 2]),
        helper.make_node(
            "ConstantOfShape",
            ["c"],
            ["z"],
            value=helper.make_tensor("v", TensorProto.INT8, [1], [3]),
        ),
    ]
    outputs = [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in "rez"]
    model = make_model(nodes, [], outputs, opset=13)
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString())
    assert [str(t) for t in prog.get_output_shapes()] == ["f64[2,3]", "i64[2,3]", "i8[2,2]"]
    r, e, z = prog.compile("ref").run({})
    assert r.dtype == np.float64 and ((r >= 0) & (r < 1)).all()
    np.testing.assert_array_equal(e, np.eye(2, 3, dtype=np.int64))
    np.testing.assert_array_equal(z, np.full((2, 2), 3, np.int8))
