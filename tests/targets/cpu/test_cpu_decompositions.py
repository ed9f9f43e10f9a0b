# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Ops the cpu has no kernel for (or none for these attributes) run as their ONNX function
bodies (frontends/onnx/decompositions.py, passes/inline_decompositions.py), compiled
without fallback and equal to ref; ops it has a kernel for keep it."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import graphkiln as gk
from cpu_testing import check_cpu, node, onnx_model, rand


def _kernels(program) -> list[str]:
    plans = list(program._executable._plans.values())
    return [step.kernel for segments in plans for s in segments for step in s.plan.steps]


def _compiled_ops(program) -> set[str]:
    return {n.op for n in program.compiled_graph.nodes}


def _targets(shape, classes, seed, ignore=None):
    t = rand(shape, seed=seed, dtype=np.int64, low=0, high=classes)
    if ignore is not None:
        t.flat[:: max(t.size // 3, 1)] = ignore  # some targets are ignored
    return t


@pytest.mark.parametrize("reduction", ["mean", "none", "sum"])
@pytest.mark.parametrize("ignore_index", [None, 2, -1])
@pytest.mark.parametrize("weighted", [False, True])
def test_negative_log_likelihood_loss(reduction, ignore_index, weighted):
    n, c, d = 4, 5, 3
    x = rand((n, c, d), seed=1, low=-3.0, high=0.0)  # log-probabilities
    t = _targets((n, d), c, 2, ignore_index)
    feeds = {"x": x, "t": t}
    inputs = ["x", "t"]
    shapes = {"x": x.shape, "t": t.shape}
    if weighted:
        feeds["w"] = rand((c,), seed=3, low=0.2, high=2.0)
        inputs.append("w")
        shapes["w"] = (c,)
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    out = (n, d) if reduction == "none" else ()
    model = onnx_model(
        [node("NegativeLogLikelihoodLoss", inputs, ["y"], **attrs)],
        shapes,
        {"y": out},
        opset=22,
        dtypes={"t": np.int64},
    )
    program = gk.parse_onnx_buffer(model).compile("cpu")
    assert "NegativeLogLikelihoodLoss" not in _compiled_ops(program)
    check_cpu(model, feeds, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "none", "sum"])
@pytest.mark.parametrize("ignore_index", [None, 0])
def test_softmax_cross_entropy_loss_with_log_prob(reduction, ignore_index):
    n, c, d1, d2 = 3, 6, 2, 4
    x = rand((n, c, d1, d2), seed=4, low=-2.0, high=2.0)
    t = _targets((n, d1, d2), c, 5, ignore_index)
    w = rand((c,), seed=6, low=0.5, high=1.5)
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    out = (n, d1, d2) if reduction == "none" else ()
    model = onnx_model(
        [node("SoftmaxCrossEntropyLoss", ["x", "t", "w"], ["loss", "log_prob"], **attrs)],
        {"x": x.shape, "t": t.shape, "w": w.shape},
        {"loss": out, "log_prob": x.shape},
        opset=13,
        dtypes={"t": np.int64},
    )
    check_cpu(model, {"x": x, "t": t, "w": w}, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "attrs",
    [
        {"qk_matmul_output_mode": 0, "is_causal": 1},  # the scores before the mask
        {"qk_matmul_output_mode": 2, "softcap": 1.5},  # the scores after the softcap
    ],
)
def test_attention_variant_the_kernel_refuses(attrs):
    # no kernel returns the scores (qk_matmul_output), whatever the mode
    q = rand((2, 3, 5, 8), seed=7)
    k = rand((2, 3, 7, 8), seed=8)
    v = rand((2, 3, 7, 4), seed=9)
    model = onnx_model(
        [node("Attention", ["q", "k", "v"], ["y", "", "", "qk"], **attrs)],
        {"q": q.shape, "k": k.shape, "v": v.shape},
        {"y": (2, 3, 5, 4), "qk": (2, 3, 5, 7)},
        opset=23,
    )
    program = gk.parse_onnx_buffer(model).compile("cpu")
    assert "Attention" not in _compiled_ops(program)
    y, qk = check_cpu(model, {"q": q, "k": k, "v": v}, rtol=1e-5, atol=1e-6)
    assert np.isfinite(qk).all() and np.isfinite(y).all()


@pytest.mark.parametrize(
    ("shape", "axes"), [((8, 5, 3), None), ((3, 10, 4), (0, 1)), ((3, 6, 7), (-1,))]
)
def test_center_crop_pad(shape, axes):
    x = rand((6, 7, 3), seed=10)
    target = np.array(shape if axes is None else [shape[a] for a in axes], dtype=np.int64)
    attrs = {} if axes is None else {"axes": list(axes)}
    out = list(x.shape)
    for a, size in zip(range(3) if axes is None else axes, target):
        out[a] = int(size)
    model = onnx_model(
        [node("CenterCropPad", ["x", "s"], ["y"], **attrs)],
        {"x": x.shape},
        {"y": out},
        initializers={"s": target},
        opset=18,
    )
    program = gk.parse_onnx_buffer(model).compile("cpu")
    assert "CenterCropPad" not in _compiled_ops(program)
    check_cpu(model, {"x": x})


@pytest.mark.parametrize("align_corners", [0, 1])
def test_affine_grid(align_corners):
    theta = rand((2, 2, 3), seed=11)
    size = np.array([2, 3, 4, 5], dtype=np.int64)
    model = onnx_model(
        [node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align_corners)],
        {"theta": theta.shape},
        {"grid": (2, 4, 5, 2)},
        initializers={"size": size},
        opset=20,
    )
    check_cpu(model, {"theta": theta}, rtol=1e-5, atol=1e-6)


def test_layer_normalization_the_kernel_refuses():
    # float16: the kernel takes float32 only; the body computes in float32 (stash_type 1)
    x = rand((2, 5, 16), seed=12, dtype=np.float16)
    scale = rand((16,), seed=13, dtype=np.float16)
    bias = rand((16,), seed=14, dtype=np.float16)
    model = onnx_model(
        [node("LayerNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)],
        {"x": x.shape},
        {"y": x.shape},
        initializers={"s": scale, "b": bias},
        opset=17,
        dtypes={"x": np.float16, "y": np.float16},
    )
    program = gk.parse_onnx_buffer(model).compile("cpu")
    assert "LayerNormalization" not in _kernels(program)
    check_cpu(model, {"x": x}, rtol=2e-3, atol=2e-3)


def test_supported_ops_keep_their_kernels():
    """LayerNormalization and Attention the kernels take are not decomposed: their bodies
    are not even built."""
    x = rand((2, 6, 16), seed=15)
    scale, bias = rand((16,), seed=16), rand((16,), seed=17)
    model = onnx_model(
        [
            node("LayerNormalization", ["x", "s", "b"], ["n"], axis=-1),
            node("Attention", ["n", "n", "n"], ["y"], q_num_heads=2, kv_num_heads=2),
        ],
        {"x": x.shape},
        {"y": x.shape},
        initializers={"s": scale, "b": bias},
        opset=23,
    )
    program = gk.parse_onnx_buffer(model)
    imported = {n.op: n for n in program.graph.nodes}
    assert imported["LayerNormalization"].decomposition is not None
    assert imported["Attention"].decomposition is not None
    program.compile("cpu")
    kernels = _kernels(program)
    assert "LayerNormalization" in kernels and "Attention" in kernels, kernels
    assert not imported["LayerNormalization"].decomposition.built
    assert not imported["Attention"].decomposition.built
    check_cpu(model, {"x": x}, rtol=1e-5, atol=1e-5)


def test_ref_runs_the_op_itself():
    model = onnx_model(
        [node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"])],
        {"x": (3, 4), "t": (3,)},
        {"y": ()},
        opset=22,
        dtypes={"t": np.int64},
    )
    program = gk.parse_onnx_buffer(model).compile("ref", optimize=True)
    (loss,) = [n for n in program.compiled_graph.nodes if n.op == "NegativeLogLikelihoodLoss"]
    assert not loss.decomposition.built


def test_dynamic_shapes_decide_per_plan():
    """Symbolic dims: the pipeline cannot ask the kernel's predicate, so the Attention node
    stays; each plan decomposes it at its shapes."""
    q = rand((3, 2, 5, 8), seed=18)
    k = rand((3, 2, 6, 8), seed=19)
    v = rand((3, 2, 6, 8), seed=20)
    info = helper.make_tensor_value_info
    f = 1  # onnx.TensorProto.FLOAT
    graph = helper.make_graph(
        [node("Attention", ["q", "k", "v"], ["y", "", "", "qk"], qk_matmul_output_mode=3)],
        "dynamic",
        [info("q", f, ["B", 2, 5, 8]), info("k", f, ["B", 2, 6, 8]), info("v", f, ["B", 2, 6, 8])],
        [info("y", f, None), info("qk", f, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    program = gk.parse_onnx(model).compile("cpu")
    assert "Attention" in _compiled_ops(program)
    reference = gk.parse_onnx(model).compile("ref")
    for batch in (3, 1):
        feeds = {"q": q[:batch], "k": k[:batch], "v": v[:batch]}
        for got, want in zip(program.run(feeds), reference.run(feeds)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert "Attention" not in _kernels(program)
