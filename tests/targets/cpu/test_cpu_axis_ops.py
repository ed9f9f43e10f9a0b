# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""TopK, Hardmax, LpNormalization (src/cpu/axis_ops.cpp) and EyeLike on cpu against ref."""

import numpy as np
import pytest
from onnx import helper, numpy_helper

from cpu_testing import check_cpu, node, onnx_model, rand, run_both


def _model(nodes, inputs, outputs, inits=None, opset=21):
    def info(name, spec):
        shape, dtype = spec
        return helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape
        )

    graph = helper.make_graph(
        nodes,
        "t",
        [info(k, v) for k, v in inputs.items()],
        [info(k, v) for k, v in outputs.items()],
        [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)]
    ).SerializeToString()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8, np.uint64])
@pytest.mark.parametrize("axis,k", [(-1, 3), (0, 2), (1, 5), (2, 1)])
@pytest.mark.parametrize("largest", [0, 1])
def test_topk(dtype, axis, k, largest):
    shape = (4, 5, 6)
    if np.issubdtype(dtype, np.integer):
        x = np.random.default_rng(1).integers(0, 7, size=shape).astype(dtype)  # many ties
    else:
        x = np.round(rand(shape, seed=1, low=-3, high=3), 1).astype(dtype)
    out = list(shape)
    out[axis] = k
    model = _model(
        [node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)],
        {"x": (shape, dtype)},
        {"v": (out, dtype), "i": (out, np.int64)},
        {"k": np.array([k], np.int64)},
    )
    check_cpu(model, {"x": x})


def test_topk_nan_and_large():
    x = rand((64, 700), seed=2)
    x[3, 10] = np.nan
    x[5, ::7] = np.nan
    model = _model(
        [node("TopK", ["x", "k"], ["v", "i"], largest=1)],
        {"x": ((64, 700), np.float32)},
        {"v": ((64, 20), np.float32), "i": ((64, 20), np.int64)},
        {"k": np.array([20], np.int64)},
    )
    ref, cpu = run_both(model, {"x": x})
    for r, c in zip(ref, cpu):  # NaN values compare equal here
        np.testing.assert_array_equal(np.asarray(c), np.asarray(r))
    assert np.isnan(np.asarray(cpu[0])[3, 0]) and np.asarray(cpu[1])[3, 0] == 10


@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hardmax(axis, dtype):
    x = np.round(rand((3, 4, 5), seed=3, low=-2, high=2), 0).astype(dtype)  # ties
    x[1, 2, 3] = np.nan
    model = _model(
        [node("Hardmax", ["x"], ["y"], axis=axis)],
        {"x": ((3, 4, 5), dtype)},
        {"y": ((3, 4, 5), dtype)},
    )
    check_cpu(model, {"x": x})


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization(axis, p):
    x = rand((3, 4, 5), seed=4)
    x[0, :, :] = 0  # zero norms stay zero
    model = onnx_model(
        [node("LpNormalization", ["x"], ["y"], axis=axis, p=p)], {"x": (3, 4, 5)}, {"y": (3, 4, 5)}
    )
    check_cpu(model, {"x": x})


@pytest.mark.parametrize("k", [0, 1, -2, 7])
def test_eye_like(k):
    model = _model(
        [
            node(
                "EyeLike",
                ["x"],
                ["e"],
                k=k,
                dtype=helper.np_dtype_to_tensor_dtype(np.dtype(np.int32)),
            ),
            node("Add", ["e", "e"], ["y"]),
        ],
        {"x": ((4, 6), np.float32)},
        {"y": ((4, 6), np.int32), "e": ((4, 6), np.int32)},
    )
    check_cpu(model, {"x": rand((4, 6), seed=5)})


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint64])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("axis", [0, -1])
def test_cumprod(dtype, exclusive, reverse, axis):
    # kernel "CumSum" with prod=1; integers wrap around like numpy's cumprod
    shape = (4, 33)
    if np.issubdtype(dtype, np.integer):
        x = np.random.default_rng(6).integers(1, 200, size=shape).astype(dtype)
    else:
        x = rand(shape, seed=6, low=0.5, high=1.5).astype(dtype)
    model = _model(
        [node("CumProd", ["x", "a"], ["y"], exclusive=exclusive, reverse=reverse)],
        {"x": (shape, dtype)},
        {"y": (shape, dtype)},
        {"a": np.array(axis, np.int64)},
        opset=26,
    )
    check_cpu(model, {"x": x}, rtol=1e-6)
