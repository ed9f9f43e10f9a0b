# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The cpu target's plan machinery: views, outputs that are inputs or constants, errors for
ops without kernels, fallback='ref' segments, per-shape plans for dynamic inputs."""

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.targets.native.lower import LoweringError

from cpu_testing import check_cpu, node, onnx_model, rand


def test_reshape_to_output_is_a_copy_of_a_view():
    model = onnx_model(
        [node("Reshape", ["x", "s"], ["y"])],
        {"x": (2, 3, 4)},
        {"y": (6, 4)},
        {"s": np.array([6, 4], np.int64)},
    )
    x = rand((2, 3, 4))
    (y,) = check_cpu(model, {"x": x})
    np.testing.assert_array_equal(y, x.reshape(6, 4))
    assert not np.shares_memory(y, x)


def test_input_and_constant_as_outputs():
    model = onnx_model(
        [node("Identity", ["x"], ["y"]), node("Identity", ["c"], ["z"])],
        {"x": (3,)},
        {"y": (3,), "z": (2,)},
        {"c": rand((2,), seed=1)},
    )
    check_cpu(model, {"x": rand((3,))})


def test_op_without_kernel_is_a_compile_error_naming_it():
    model = onnx_model([node("Bernoulli", ["x"], ["y"], seed=1.0)], {"x": (2, 3)}, {"y": (2, 3)})
    with pytest.raises(LoweringError, match="Bernoulli.*fallback='ref'"):
        gk.parse_onnx_buffer(model).compile("cpu")


def test_fallback_ref_runs_the_op_on_ref():
    model = onnx_model(
        [node("Bernoulli", ["x"], ["d"], seed=2.0), node("Reshape", ["d", "s"], ["y"])],
        {"x": (2, 3, 3)},
        {"y": (1, 18)},
        {"s": np.array([1, 18], np.int64)},
    )
    check_cpu(model, {"x": rand((2, 3, 3), low=0.0)}, fallback="ref")


def test_bad_fallback_value():
    model = onnx_model([node("Identity", ["x"], ["y"])], {"x": (3,)}, {"y": (3,)})
    with pytest.raises(ValueError, match="fallback='gpu'.*accepted"):
        gk.parse_onnx_buffer(model).compile("cpu", fallback="gpu")


def test_dynamic_input_gets_a_plan_per_shape():
    model = onnx_model(
        [node("Reshape", ["x", "s"], ["y"])],
        {"x": ("n", 4)},
        {"y": (-1,)},
        {"s": np.array([-1], np.int64)},
    )
    program = gk.parse_onnx_buffer(model, default_dim=None).compile("cpu")
    for n in (1, 5, 5, 2):
        x = rand((n, 4), seed=n)
        np.testing.assert_array_equal(program.run({"x": x})[0], x.reshape(-1))
