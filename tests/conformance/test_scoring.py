# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The node-case harness scores what ONNX defines (scoring.py): float -> integer casts out of
range are not compared, random outputs are checked by shape, dtype and value set. Cases are
built here with recorded outputs that differ from ref exactly where ONNX leaves them open."""

import types

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

from node_cases import run_case
from scoring import random_checks, undefined_elements


def _case(nodes, inputs, outputs, data_sets, opset=25):
    graph = helper.make_graph(nodes, "t", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return types.SimpleNamespace(model=model, data_sets=data_sets)


def _cast_case(x, recorded, to=TensorProto.INT4, like=False):
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))]
    if like:
        inputs.append(helper.make_tensor_value_info("like", to, [0]))
        node = helper.make_node("CastLike", ["x", "like"], ["y"])
        feeds = [x, np.zeros(0, recorded.dtype)]
    else:
        node = helper.make_node("Cast", ["x"], ["y"], to=to)
        feeds = [x]
    out = [helper.make_tensor_value_info("y", to, list(x.shape))]
    return _case([node], inputs, out, [(feeds, [recorded])])


X = np.array([-9.0, -8.9, -8.0, 7.9, 8.0, 20.0, np.nan, np.inf, 1.5], np.float32)
IN_RANGE = [False, True, True, True, False, False, False, False, True]


@pytest.mark.parametrize("like", [False, True])
def test_out_of_range_cast_elements_are_not_compared(like):
    # recorded: int4 values where defined, anything (here 0, as ml_dtypes 0.7 gives) elsewhere
    recorded = np.where(IN_RANGE, np.trunc(np.nan_to_num(X)), 0).astype(ml_dtypes.int4)
    run_case(_cast_case(X, recorded, like=like), "ref")
    mask = undefined_elements(
        _cast_case(X, recorded, like=like).model, {"x": X, "like": recorded[:0]}
    )
    np.testing.assert_array_equal(mask[0], ~np.array(IN_RANGE))


def test_in_range_cast_elements_are_still_compared():
    recorded = np.where(IN_RANGE, np.trunc(np.nan_to_num(X)), 0).astype(ml_dtypes.int4)
    recorded[1] = -7  # trunc(-8.9) is -8: in range, so a wrong record must fail
    with pytest.raises(AssertionError, match="values differ"):
        run_case(_cast_case(X, recorded), "ref")


def test_casts_from_integers_are_compared_whole():
    x = np.array([20, -9, 3], np.int32)
    case = _case(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT4)],
        [helper.make_tensor_value_info("x", TensorProto.INT32, [3])],
        [helper.make_tensor_value_info("y", TensorProto.INT4, [3])],
        [([x], [np.array([0, 0, 3], ml_dtypes.int4)])],
    )
    assert undefined_elements(case.model, {"x": x}) == {}
    with pytest.raises(AssertionError, match="values differ"):
        run_case(case, "ref")  # int -> int4 wraps (20 -> 4, -9 -> 7): defined, compared


def _bernoulli_case(p, recorded):
    return _case(
        [helper.make_node("Bernoulli", ["p"], ["y"], seed=1.0)],
        [helper.make_tensor_value_info("p", TensorProto.DOUBLE, list(p.shape))],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, list(p.shape))],
        [([p], [recorded])],
        opset=15,
    )


def test_random_outputs_are_scored_by_what_the_op_defines():
    p = np.array([0.0, 1.0, 0.5, 0.5, 0.3, 0.9])
    run_case(_bernoulli_case(p, np.array([0.0, 1.0, 1.0, 0.0, 1.0, 1.0])), "ref")
    check = random_checks(_bernoulli_case(p, p).model, {"p": p})[0]
    check([np.array([0.0, 1.0, 0.0, 1.0, 0.0, 1.0])], p, "y")
    for wrong, message in [
        ([0.0, 1.0, 2.0, 0.0, 0.0, 0.0], "outside"),
        ([1.0, 1.0, 0.0, 0.0, 0.0, 0.0], "p = 0"),
        ([0.0, 0.0, 0.0, 0.0, 0.0, 0.0], "p = 1"),
    ]:
        with pytest.raises(AssertionError, match=message):
            check([np.array(wrong)], p, "y")
    with pytest.raises(AssertionError, match="dtype"):
        check([np.zeros(6, np.float32)], p, "y")


def test_uniform_draws_must_lie_in_low_high():
    case = _case(
        [helper.make_node("RandomUniformLike", ["x"], ["y"], low=-1.0, high=2.0)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [],
        opset=15,
    )
    x = np.zeros(4, np.float32)
    check = random_checks(case.model, {"x": x})[0]
    check([np.array([-1.0, 0.0, 1.5, 1.99], np.float32)], x, "y")
    with pytest.raises(AssertionError, match="outside"):
        check([np.array([-1.5, 0.0, 1.5, 1.99], np.float32)], x, "y")


def _dropout_case():
    return _case(
        [helper.make_node("Dropout", ["x", "r", "t"], ["y", "m"], seed=0)],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("r", TensorProto.FLOAT, []),
            helper.make_tensor_value_info("t", TensorProto.BOOL, []),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("m", TensorProto.BOOL, [4]),
        ],
        [],
        opset=15,
    )


def test_training_dropout_is_checked_against_its_own_mask():
    x = np.array([1.0, -2.0, 3.0, 4.0], np.float32)
    feeds = {"x": x, "r": np.float32(0.75), "t": np.array(True)}
    checks = random_checks(_dropout_case().model, feeds)
    assert set(checks) == {0, 1}
    mask = np.array([True, False, False, True])
    good = [np.where(mask, x * 4, 0).astype(np.float32), mask]
    checks[0](good, good[0], "y")
    with pytest.raises(AssertionError, match="kept"):
        checks[0]([np.where(mask, x, 0).astype(np.float32), mask], good[0], "y")  # unscaled
    with pytest.raises(AssertionError, match="not 0"):
        checks[0]([x * 4, mask], good[0], "y")
    # inference, or a ratio of 0: deterministic, compared exactly
    for r, t in [(0.75, False), (0.0, True)]:
        feeds = {"x": x, "r": np.float32(r), "t": np.array(t)}
        assert random_checks(_dropout_case().model, feeds) == {}
