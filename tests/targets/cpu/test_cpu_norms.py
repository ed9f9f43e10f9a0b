# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""RMSNormalization, GroupNormalization, InstanceNormalization and BatchNormalization
(inference) on cpu against ref."""

import pytest

from cpu_testing import check_cpu, node, onnx_model, rand


@pytest.mark.parametrize(
    "shape,axis",
    [
        ((2, 3, 4, 5), -1),
        ((2, 3, 4, 5), 1),
        ((2, 3, 4, 5), 0),
        ((6, 37), -1),
        ((64, 768), -1),
        ((3, 4), -2),
    ],
)
@pytest.mark.parametrize("epsilon", [1e-5, 0.1])
def test_rms_norm(shape, axis, epsilon):
    tail = shape[axis % len(shape) :]
    model = onnx_model(
        [node("RMSNormalization", ["x", "s"], ["y"], axis=axis, epsilon=epsilon)],
        {"x": shape, "s": tail},
        {"y": shape},
        opset=23,
    )
    check_cpu(model, {"x": rand(shape, seed=1, low=-3, high=3), "s": rand(tail, seed=2)})


def test_rms_norm_broadcast_constant_scale():
    shape = (4, 3, 8)
    model = onnx_model(
        [node("RMSNormalization", ["x", "s"], ["y"], axis=1)],
        {"x": shape},
        {"y": shape},
        {"s": rand((1, 8), seed=3)},
        opset=23,
    )
    check_cpu(model, {"x": rand(shape, seed=4)})


@pytest.mark.parametrize(
    "shape,groups",
    [((2, 6, 5, 4), 3), ((2, 6, 5, 4), 1), ((2, 6, 5, 4), 6), ((3, 4, 7), 2), ((1, 8, 300), 4)],
)
@pytest.mark.parametrize("epsilon", [1e-5, 0.5])
def test_group_norm(shape, groups, epsilon):
    c = shape[1]
    model = onnx_model(
        [node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=groups, epsilon=epsilon)],
        {"x": shape, "s": (c,), "b": (c,)},
        {"y": shape},
        opset=21,
    )
    check_cpu(
        model,
        {
            "x": rand(shape, seed=5, low=-2, high=3),
            "s": rand((c,), seed=6),
            "b": rand((c,), seed=7),
        },
    )


@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (3, 4, 7), (1, 2, 3, 4, 5), (1, 16, 3199)])
def test_instance_norm(shape):
    c = shape[1]
    model = onnx_model(
        [node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)],
        {"x": shape, "s": (c,), "b": (c,)},
        {"y": shape},
    )
    check_cpu(
        model,
        {
            "x": rand(shape, seed=8, low=-2, high=3),
            "s": rand((c,), seed=9),
            "b": rand((c,), seed=10),
        },
    )


@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (3, 4), (2, 4, 7)])
def test_batch_norm_inference_runtime_params(shape):
    c = shape[1]
    names = ["x", "s", "b", "m", "v"]
    model = onnx_model(
        [node("BatchNormalization", names, ["y"], epsilon=1e-3)],
        {"x": shape, **{n: (c,) for n in names[1:]}},
        {"y": shape},
        opset=15,
    )
    feeds = {
        "x": rand(shape, seed=11),
        "s": rand((c,), seed=12),
        "b": rand((c,), seed=13),
        "m": rand((c,), seed=14),
        "v": rand((c,), seed=15, low=0.1, high=2),
    }
    check_cpu(model, feeds)


def test_instance_norm_of_values_far_from_zero():
    """A mean of 1000 and a spread of 1: the variance is taken around the mean, so nothing
    cancels (E[x^2] - E[x]^2 in float32 would be off by O(1)); what is left is float32's
    resolution at 1000 (6e-5) in x itself."""
    shape = (1, 8, 1237)
    model = onnx_model(
        [node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-5)],
        {"x": shape, "s": (8,), "b": (8,)},
        {"y": shape},
    )
    check_cpu(
        model,
        {
            "x": rand(shape, seed=11, low=999.0, high=1001.0),
            "s": rand((8,), seed=12),
            "b": rand((8,), seed=13),
        },
        rtol=1e-4,
        atol=2e-4,
    )
