# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""cpu kernels of MatMul, Gemm and Fused gemm / matmul (oneDNN matmul with post-ops),
compared with ref."""

import numpy as np
import pytest

from graphkiln.targets.cpu import table

from cpu_testing import check_cpu, node, onnx_model, rand

RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(autouse=True)
def fused_dispatch(monkeypatch):
    """Fused nodes go to lower_fused.py (another module); until it exists, a stand-in
    sends kinds gemm / matmul to lower_matmul."""
    if "Fused" in table.LOWERINGS:
        return
    from graphkiln.targets.cpu.lower_matmul import fused_matmul_supported, lower_fused_matmul
    from graphkiln.targets.native.lower_support import supports

    @supports(lambda n: n.attrs["kind"] in ("gemm", "matmul") and fused_matmul_supported(n))
    def lower_fused(n, ctx):
        lower_fused_matmul(n, ctx)

    monkeypatch.setitem(table.LOWERINGS, "Fused", lower_fused)


def _out_shape(a, b):
    return np.matmul(np.zeros(a, np.float32), np.zeros(b, np.float32)).shape


MATMUL_SHAPES = [
    ((5,), (5,)),
    ((5,), (5, 3)),
    ((4, 5), (5,)),
    ((4, 5), (5, 3)),
    ((2, 4, 5), (5, 3)),
    ((2, 4, 5), (2, 5, 3)),
    ((1, 4, 5), (3, 5, 6)),
    ((3, 4, 5), (1, 5, 6)),
    ((2, 1, 4, 5), (1, 3, 5, 6)),
    ((5,), (2, 5, 3)),
    ((2, 4, 5), (5,)),
    ((4, 5), (2, 3, 5, 6)),
    ((7, 1, 16), (16, 24)),
    ((2, 3, 33, 70), (70, 65)),
]


@pytest.mark.parametrize("a_shape,b_shape", MATMUL_SHAPES)
@pytest.mark.parametrize("b_const", [False, True])
def test_matmul(a_shape, b_shape, b_const):
    y = _out_shape(a_shape, b_shape)
    b = rand(b_shape, 1)
    if b_const:
        model = onnx_model([node("MatMul", ["a", "b"], ["y"])], {"a": a_shape}, {"y": y}, {"b": b})
        feeds = {"a": rand(a_shape)}
    else:
        model = onnx_model(
            [node("MatMul", ["a", "b"], ["y"])], {"a": a_shape, "b": b_shape}, {"y": y}
        )
        feeds = {"a": rand(a_shape), "b": b}
    check_cpu(model, feeds, rtol=RTOL, atol=ATOL)


C_SHAPES = [None, (), (1,), (6,), (1, 6), (4, 1), (4, 6)]


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize(
    "alpha,beta", [(1.0, 1.0), (0.5, 1.0), (1.0, 2.0), (0.5, 0.25), (2.0, 0.0)]
)
@pytest.mark.parametrize("c_shape", C_SHAPES)
@pytest.mark.parametrize("consts", [False, True])
def test_gemm(trans_a, trans_b, alpha, beta, c_shape, consts):
    m, k, n = 4, 5, 6
    a_shape = (k, m) if trans_a else (m, k)
    b_shape = (n, k) if trans_b else (k, n)
    names = ["a", "b"] + ([] if c_shape is None else ["c"])
    gemm = node("Gemm", names, ["y"], alpha=alpha, beta=beta, transA=trans_a, transB=trans_b)
    inputs = {"a": a_shape}
    feeds = {"a": rand(a_shape)}
    inits = {}
    data = {"b": rand(b_shape, 1)}
    if c_shape is not None:
        data["c"] = rand(c_shape, 2)
    for name, value in data.items():
        if consts:
            inits[name] = value
        else:
            inputs[name] = value.shape
            feeds[name] = value
    model = onnx_model([gemm], inputs, {"y": (m, n)}, inits)
    check_cpu(model, feeds, rtol=RTOL, atol=ATOL)


def test_gemm_large_packed():
    a, b, c = rand((64, 768)), rand((768, 300), 1), rand((300,), 2)
    model = onnx_model(
        [node("Gemm", ["a", "b", "c"], ["y"])], {"a": a.shape}, {"y": (64, 300)}, {"b": b, "c": c}
    )
    check_cpu(model, {"a": a}, rtol=RTOL, atol=ATOL)


# -- fused epilogues -------------------------------------------------------------------------


def _fused_model(a_shape, b_shape, epilogue, extra_inputs=None, extra_inits=None):
    """MatMul(a, constant w) then the epilogue nodes (reading 'mm', writing 'y')."""
    y = _out_shape(a_shape, b_shape)
    inits = {"w": rand(b_shape, 1), **(extra_inits or {})}
    inputs = {"a": a_shape, **(extra_inputs or {})}
    return onnx_model([node("MatMul", ["a", "w"], ["mm"]), *epilogue], inputs, {"y": y}, inits)


def test_fused_bias_gelu():
    model = _fused_model(
        (2, 8, 16),
        (16, 32),
        [node("Add", ["bias", "mm"], ["t"]), node("Gelu", ["t"], ["y"])],
        extra_inits={"bias": rand((32,), 3)},
    )
    check_cpu(model, {"a": rand((2, 8, 16))}, rtol=RTOL, atol=ATOL)


def test_fused_bias_gelu_tanh():
    model = _fused_model(
        (8, 16),
        (16, 32),
        [node("Add", ["mm", "bias"], ["t"]), node("Gelu", ["t"], ["y"], approximate="tanh")],
        extra_inits={"bias": rand((32,), 3)},
    )
    check_cpu(model, {"a": rand((8, 16))}, rtol=RTOL, atol=ATOL)


def test_fused_bias_residual():
    model = _fused_model(
        (2, 8, 16),
        (16, 32),
        [node("Add", ["bias", "mm"], ["t"]), node("Add", ["t", "r"], ["y"])],
        extra_inputs={"r": (2, 8, 32)},
        extra_inits={"bias": rand((32,), 3)},
    )
    check_cpu(model, {"a": rand((2, 8, 16)), "r": rand((2, 8, 32), 4)}, rtol=RTOL, atol=ATOL)


def test_fused_relu_gemm():
    model = onnx_model(
        [node("Gemm", ["a", "w", "c"], ["g"], transB=1, alpha=0.5), node("Relu", ["g"], ["y"])],
        {"a": (8, 16)},
        {"y": (8, 32)},
        {"w": rand((32, 16), 1), "c": rand((32,), 2)},
    )
    check_cpu(model, {"a": rand((8, 16))}, rtol=RTOL, atol=ATOL)


def test_fused_gemm_input_c_tanh():
    model = onnx_model(
        [node("Gemm", ["a", "w", "c"], ["g"], alpha=0.5, beta=2.0), node("Tanh", ["g"], ["y"])],
        {"a": (8, 16), "c": (8, 1)},
        {"y": (8, 32)},
        {"w": rand((16, 32), 1)},
    )
    check_cpu(model, {"a": rand((8, 16)), "c": rand((8, 1), 2)}, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(
    "epilogue,inits",
    [
        ([node("Sub", ["r", "mm"], ["t"]), node("Sigmoid", ["t"], ["y"])], {}),
        ([node("Sub", ["mm", "r"], ["t"]), node("Tanh", ["t"], ["y"])], {}),
        ([node("Mul", ["mm", "r"], ["t"]), node("LeakyRelu", ["t"], ["y"], alpha=0.2)], {}),
        (
            [node("Div", ["mm", "s"], ["t"]), node("HardSwish", ["t"], ["y"])],
            {"s": np.array(1.5, np.float32)},
        ),
        (
            [
                node("Mul", ["s", "mm"], ["t"]),
                node("Add", ["t", "s"], ["u"]),
                node("Sub", ["s", "u"], ["v"]),
                node("HardSigmoid", ["v"], ["y"]),
            ],
            {"s": np.array(0.75, np.float32)},
        ),
        (
            [node("Clip", ["mm", "lo", "hi"], ["y"])],
            {"lo": np.array(-0.5, np.float32), "hi": np.array(0.4, np.float32)},
        ),
        (
            [node("Max", ["mm", "col"], ["t"]), node("Elu", ["t"], ["y"], alpha=0.7)],
            {"col": rand((6, 1), 5)},
        ),
        (
            [node("Min", ["row", "mm"], ["t"]), node("Swish", ["t"], ["y"])]
            if False
            else [node("Min", ["row", "mm"], ["t"]), node("Softplus", ["t"], ["y"])],
            {"row": rand((1, 1, 10), 6)},
        ),
    ],
)
def test_fused_post_ops(epilogue, inits):
    extra_inputs = {"r": (3, 6, 10)} if any("r" in n.input for n in epilogue) else {}
    model = _fused_model((3, 6, 7), (7, 10), epilogue, extra_inputs, inits)
    feeds = {"a": rand((3, 6, 7))}
    if extra_inputs:
        feeds["r"] = rand((3, 6, 10), 7)
    check_cpu(model, feeds, rtol=RTOL, atol=ATOL)


def test_fused_partial_broadcast_operand():
    """An operand broadcast over one batch dim keeps the batched view (no 2-D collapse)."""
    model = _fused_model(
        (2, 3, 4, 5), (5, 6), [node("Add", ["mm", "r"], ["y"])], extra_inputs={"r": (1, 3, 4, 6)}
    )
    check_cpu(model, {"a": rand((2, 3, 4, 5)), "r": rand((1, 3, 4, 6), 2)}, rtol=RTOL, atol=ATOL)


def test_fused_batched_matmul_residual():
    model = onnx_model(
        [
            node("MatMul", ["a", "b"], ["mm"]),
            node("Add", ["mm", "r"], ["t"]),
            node("Relu", ["t"], ["y"]),
        ],
        {"a": (2, 3, 4, 5), "b": (2, 3, 5, 6), "r": (3, 1, 6)},
        {"y": (2, 3, 4, 6)},
    )
    feeds = {"a": rand((2, 3, 4, 5)), "b": rand((2, 3, 5, 6), 1), "r": rand((3, 1, 6), 2)}
    check_cpu(model, feeds, rtol=RTOL, atol=ATOL)


def test_fused_unsupported_epilogue_refused_or_runs():
    """An epilogue oneDNN cannot run (Div by the product) goes to the pointwise kernels,
    or, without them, to ref."""
    model = _fused_model(
        (4, 5),
        (5, 6),
        [node("Sigmoid", ["mm"], ["t"]), node("Div", ["r", "t"], ["y"])],
        extra_inputs={"r": (4, 6)},
    )
    feeds = {"a": rand((4, 5)), "r": rand((4, 6), 2)}
    check_cpu(model, feeds, rtol=RTOL, atol=ATOL, fallback="ref")


def test_matmul_non_f32_refused():
    from graphkiln.targets.cpu.lower_matmul import LOWERINGS
    import graphkiln as gk

    model = onnx_model(
        [node("MatMul", ["a", "b"], ["y"])],
        {"a": (2, 3), "b": (3, 4)},
        {"y": (2, 4)},
        dtypes={"a": np.int64, "b": np.int64, "y": np.int64},
    )
    graph = gk.parse_onnx_buffer(model)
    mm = [n for n in graph.graph.nodes if n.op == "MatMul"] if hasattr(graph, "graph") else []
    for n in mm:
        assert not LOWERINGS["MatMul"].supports(n, None)
    check_cpu(
        model,
        {
            "a": rand((2, 3), dtype=np.int64, low=-5, high=5),
            "b": rand((3, 4), dtype=np.int64, low=-5, high=5),
        },
        fallback="ref",
    )


@pytest.mark.parametrize("shape_a, shape_b", [((3, 0), (0, 5)), ((2, 4, 0), (0, 3))])
def test_matmul_over_an_empty_inner_dim_is_zeros(shape_a, shape_b):
    out = (*shape_a[:-1], shape_b[-1])
    model = onnx_model(
        [node("MatMul", ["a", "b"], ["y"])], {"a": shape_a, "b": shape_b}, {"y": out}
    )
    feeds = {"a": np.zeros(shape_a, np.float32), "b": np.zeros(shape_b, np.float32)}
    (y,) = check_cpu(model, feeds)
    np.testing.assert_array_equal(y, np.zeros(out, np.float32))
