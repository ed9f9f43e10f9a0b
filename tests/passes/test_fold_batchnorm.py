# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
import numpy as np

from graphkiln.ir import Graph, TensorType, DType
from graphkiln.ir.clone import clone_graph
from graphkiln.passes import fold_batchnorm
from graphkiln.passes.context import PassContext
from graphkiln.targets.ref.evaluator import run_graph
from graphkiln.targets.ref.table import KERNELS


def _conv_bn_graph(rng, standalone: bool):
    g = Graph()
    x = g.add_input("x", TensorType(DType.f32, (1, 3, 6, 6)))
    if standalone:
        y = g.add("Relu", x)
        channels = 3
    else:
        w = g.constant(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
        b = g.constant(rng.standard_normal(4).astype(np.float32))
        y = g.add("Conv", x, w, b, pads=(1, 1, 1, 1))
        channels = 4
    params = [
        g.constant(a.astype(np.float32))
        for a in (
            rng.standard_normal(channels),
            rng.standard_normal(channels),
            rng.standard_normal(channels),
            rng.random(channels) + 0.5,
        )
    ]
    g.outputs = [g.add("BatchNormalization", y, *params, epsilon=1e-5)]
    return g


def _check(graph, expected_ops, rng):
    original = clone_graph(graph)
    fold_batchnorm.run(graph, PassContext())
    assert [n.op for n in graph.nodes if n.op != "Constant"] == expected_ops
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(
        run_graph(graph, [x], KERNELS)[0],
        run_graph(original, [x], KERNELS)[0],
        rtol=1e-4,
        atol=1e-5,
    )


def test_batchnorm_after_conv_folds_into_its_weights(rng):
    _check(_conv_bn_graph(rng, standalone=False), ["Conv"], rng)


def test_batchnorm_elsewhere_becomes_mul_add(rng):
    _check(_conv_bn_graph(rng, standalone=True), ["Relu", "Mul", "Add"], rng)


def test_batchnorm_after_gemm_folds_into_gemm(rng):
    g = Graph()
    x = g.add_input("x", TensorType(DType.f32, (2, 5)))
    w = g.constant(rng.standard_normal((4, 5)).astype(np.float32))
    c = g.constant(rng.standard_normal(4).astype(np.float32))
    y = g.add("Gemm", x, w, c, transB=1, beta=0.5)
    params = [
        g.constant(a.astype(np.float32))
        for a in (
            rng.standard_normal(4),
            rng.standard_normal(4),
            rng.standard_normal(4),
            rng.random(4) + 0.5,
        )
    ]
    g.outputs = [g.add("BatchNormalization", y, *params)]
    original = clone_graph(g)
    fold_batchnorm.run(g, PassContext())
    assert [n.op for n in g.nodes if n.op != "Constant"] == ["Gemm"]
    xv = rng.standard_normal((2, 5)).astype(np.float32)
    np.testing.assert_allclose(
        run_graph(g, [xv], KERNELS)[0], run_graph(original, [xv], KERNELS)[0], rtol=1e-4, atol=1e-5
    )
