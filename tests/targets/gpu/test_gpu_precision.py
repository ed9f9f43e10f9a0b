# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The gpu target's options fp16 / bf16 / fast_math: the precision pass (which ops run in
half, Casts at the graph's edges), the half-precision kernels (Conv, Gemm/MatMul, pools)
through the numpy model of the kernels against ref in float32, small resnet-like and
bert-like networks end to end, option errors, options saved with a program; real models on
the device (marked gpu).

Tolerances, relative to the largest reference magnitude (gpu_testing.compare): float16
1e-2, bfloat16 5e-2 (8 mantissa bits: one rounding is up to 2^-9 relative, and a few
roundings compound through a network); fast_math (TF32, 10 mantissa bits) 5e-3."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from onnx import helper

import graphkiln as gk
from graphkiln.compiler import compile_graph
from graphkiln.ir import DType
from graphkiln.targets.gpu.target import GpuExecutable, GpuTarget, lower_plan
from gpu_testing import compare, requires_gpu
from plan_emulator import Emulator
from test_gpu_ops_more import model, rand

node = helper.make_node
F32 = np.float32
TOL = {"fp16": 1e-2, "bf16": 5e-2}
HALF = {"fp16": "f16", "bf16": "bf16"}
MODELS = Path(os.environ.get("GRAPHKILN_REAL_MODELS", "/work/models"))  # NAME.onnx + NAME.npz


class _Executor(Emulator):
    """The numpy kernel model with what plan_summary reads from a device executor."""

    blas, device, device_bytes = "numpy model", "numpy model", 0

    @property
    def num_steps(self):
        return len(self.steps)

    @property
    def arena_bytes(self):
        return self.plan.arena_bytes


class _Plan:
    def __init__(self, graph, fast_math=False):
        self.plan = lower_plan(graph, fast_math)
        self.input_dtypes = [v.type.dtype.numpy for v in graph.inputs]
        self.executor = _Executor(self.plan)


def emulate(onnx_model: bytes, feeds: dict, **options):
    """(outputs, executable) of the gpu target's plan run by the numpy kernel model."""
    program = gk.parse_onnx_buffer(onnx_model)
    GpuTarget().check_options(options)
    graph, _ = compile_graph(program.graph, GpuTarget(), options, False, False)
    fast = options.get("fast_math", False)
    executable = GpuExecutable(graph, plan_factory=lambda g, b: _Plan(g, fast), fast_math=fast)
    return executable.run([feeds[v.name] for v in graph.inputs]), executable


def reference(onnx_model: bytes, feeds: dict) -> list:
    return gk.parse_onnx_buffer(onnx_model).compile("ref").run(feeds)


def steps(executable, kernel: str) -> list[dict]:
    (plan,) = executable._plans.values()
    return [s for s in plan.plan.executor_steps() if s["kernel"] == kernel]


def step_dtypes(executable, kernel: str) -> set[str]:
    """The float types of a kernel's tensors (masks and indices left out)."""
    return {
        t["dtype"]
        for s in steps(executable, kernel)
        for t in (*s["inputs"], *s["outputs"])
        if t is not None and t["dtype"] in ("f32", "f16", "bf16")
    }


def check_half(onnx_model, feeds, mode, kernels):
    """Run in `mode` (fp16 / bf16) against ref in float32; each of `kernels` must have run
    in the half type (so the comparison tests the half kernels, not float32 ones)."""
    got, executable = emulate(onnx_model, feeds, **{mode: True})
    compare(got, reference(onnx_model, feeds), TOL[mode], TOL[mode])
    for kernel in kernels:
        assert step_dtypes(executable, kernel) == {HALF[mode]}, (
            kernel,
            step_dtypes(executable, kernel),
        )
    return got, executable


# -- single kernels -----------------------------------------------------------------------
def _conv_model(x_shape, w_shape, bias, seed, **attrs):
    inits = {"w": rand(w_shape, seed, -0.5, 0.5)}
    inputs = ["x", "w"]
    if bias:
        inits["b"] = rand((w_shape[0],), seed + 1)
        inputs.append("b")
    program = model(
        [node("Conv", inputs, ["y"], **attrs)],
        {"x": (x_shape, F32)},
        {"y": (None, F32)},
        inits=inits,
    )
    return program, {"x": rand(x_shape, seed + 2)}


CONVS = {
    "3x3_pad_bias": ((2, 5, 9, 9), (7, 5, 3, 3), True, dict(pads=[1, 1, 1, 1])),
    "3x3_stride2_dilated": (
        (3, 4, 11, 10),
        (6, 4, 3, 3),
        False,
        dict(strides=[2, 2], dilations=[2, 1], pads=[2, 1, 1, 0]),
    ),
    "7x7_stride2": ((2, 3, 20, 20), (8, 3, 7, 7), True, dict(strides=[2, 2], pads=[3, 3, 3, 3])),
    "1x1_bias": ((3, 16, 5, 6), (12, 16, 1, 1), True, {}),
    "1x1_stride2": ((2, 8, 7, 7), (16, 8, 1, 1), True, dict(strides=[2, 2])),
    "grouped": ((2, 8, 6, 6), (12, 4, 3, 3), True, dict(group=2, pads=[1, 1, 1, 1])),
    "grouped_1x1": ((2, 8, 5, 5), (6, 4, 1, 1), True, dict(group=2)),
    "depthwise": ((2, 6, 8, 8), (6, 1, 3, 3), True, dict(group=6, pads=[1, 1, 1, 1])),
    "conv1d": ((2, 4, 17), (5, 4, 3), True, dict(pads=[1, 1])),
}


@pytest.mark.parametrize("mode", ["fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv_half(name, mode):
    x_shape, w_shape, bias, attrs = CONVS[name]
    program, feeds = _conv_model(x_shape, w_shape, bias, len(name), **attrs)
    check_half(program, feeds, mode, ["Conv"])


@pytest.mark.parametrize("mode", ["fp16", "bf16"])
@pytest.mark.parametrize(
    "a_shape,b_shape",
    [
        ((5, 24), (24, 7)),
        ((3, 4, 9, 16), (16, 11)),
        ((2, 3, 6, 8), (2, 3, 8, 5)),
        ((2, 1, 6, 8), (3, 8, 5)),
    ],
)
def test_matmul_half(a_shape, b_shape, mode):
    program = model(
        [node("MatMul", ["a", "b"], ["y"])],
        {"a": (a_shape, F32), "b": (b_shape, F32)},
        {"y": (None, F32)},
    )
    check_half(program, {"a": rand(a_shape, 1), "b": rand(b_shape, 2)}, mode, ["Gemm"])


@pytest.mark.parametrize("mode", ["fp16", "bf16"])
@pytest.mark.parametrize(
    "trans_b,alpha,beta,c_shape",
    [
        (0, 1.0, 1.0, (6,)),
        (1, 0.5, 2.0, (1, 6)),
        (1, 1.0, 0.0, (6,)),  # a bias row: the kernel fills
        (0, 1.0, 0.5, (4, 6)),
        (1, 1.0, 1.0, (4, 1)),
    ],
)  # other shapes: a strided copy first
def test_gemm_half(trans_b, alpha, beta, c_shape, mode):
    w = rand((6, 13) if trans_b else (13, 6), 3, -0.5, 0.5)
    program = model(
        [node("Gemm", ["x", "w", "c"], ["y"], transB=trans_b, alpha=alpha, beta=beta)],
        {"x": ((4, 13), F32)},
        {"y": (None, F32)},
        inits={"w": w, "c": rand(c_shape, 4)},
    )
    _, executable = check_half(program, {"x": rand((4, 13), 5)}, mode, ["Gemm"])
    (gemm,) = steps(executable, "Gemm")
    assert len(gemm["inputs"]) == (3 if beta and c_shape in ((6,), (1, 6)) else 2)


@pytest.mark.parametrize("mode", ["fp16", "bf16"])
@pytest.mark.parametrize(
    "op,attrs",
    [
        ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
        ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
        ("AveragePool", dict(kernel_shape=[2, 3], count_include_pad=1, pads=[0, 1, 1, 1])),
    ],
)
def test_pool_half(op, attrs, mode):
    # a Relu first: the pool then follows a half input (a graph input alone stays float32)
    program = model(
        [node("Relu", ["x"], ["r"]), node(op, ["r"], ["y"], **attrs)],
        {"x": ((2, 3, 9, 8), F32)},
        {"y": (None, F32)},
    )
    program_in_half = model(
        [node("Conv", ["x", "w"], ["c"]), node(op, ["c"], ["y"], **attrs)],
        {"x": ((2, 3, 9, 8), F32)},
        {"y": (None, F32)},
        inits={"w": rand((3, 3, 1, 1), 8, -1, 1)},
    )
    feeds = {"x": rand((2, 3, 9, 8), 7)}
    got, executable = emulate(program, feeds, **{mode: True})
    compare(got, reference(program, feeds), 1e-6, 1e-6)  # float32 all the way: exact
    assert step_dtypes(executable, op) == {"f32"}
    check_half(program_in_half, feeds, mode, [op])


ATTENTIONS = {
    # name: (q, k, v shapes, attributes, mask shape and kind or None)
    "bhsd_flat": (((3, 2, 5, 8), (3, 2, 6, 8), (3, 2, 6, 4)), {}, ((3, 1, 5, 6), "float")),
    "bsd_loop_heads": (
        ((3, 5, 16), (3, 6, 16), (3, 6, 16)),
        dict(q_num_heads=2, kv_num_heads=2),
        ((5, 6), "bool"),
    ),
    "bsd_loop_batch": (
        ((1, 5, 24), (1, 7, 24), (1, 7, 24)),
        dict(q_num_heads=3, kv_num_heads=3, is_causal=1),
        None,
    ),
    "grouped": (
        ((2, 4, 5, 8), (2, 2, 5, 8), (2, 2, 5, 8)),
        dict(is_causal=1),
        ((2, 4, 5, 5), "float"),
    ),
}


@pytest.mark.parametrize("mode", ["fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(ATTENTIONS))
def test_attention_half(name, mode):
    (qs, ks, vs), attrs, mask = ATTENTIONS[name]
    ins = {"q": (qs, F32), "k": (ks, F32), "v": (vs, F32)}
    feeds = {n: rand(shape, i + 40, -1, 1) for i, (n, (shape, _)) in enumerate(ins.items())}
    names = ["q", "k", "v"]
    if mask is not None:
        shape, kind = mask
        if kind == "bool":
            feeds["m"] = rand(shape, 50, 0, 2, np.int64).astype(bool)
            feeds["m"][..., 0] = True
        else:
            feeds["m"] = rand(shape, 50, -4, 0)
        ins["m"] = (shape, feeds["m"].dtype)
        names.append("m")
    program = model([node("Attention", names, ["y"], **attrs)], ins, {"y": (None, F32)})
    _, executable = check_half(program, feeds, mode, ["Attention"])
    if mask is not None and mask[1] == "float":  # the additive mask was converted too
        assert steps(executable, "Attention")[0]["inputs"][3]["dtype"] == HALF[mode]


ROW_OPS = {
    # name: (node after x @ w, its kernel, extra initializers); x @ w is [2, 3, 5, 70]
    "softmax_rows": (node("Softmax", ["h"], ["y"], axis=-1), "Softmax", {}),
    "softmax_columns": (node("Softmax", ["h"], ["y"], axis=1), "Softmax", {}),
    "log_softmax": (node("LogSoftmax", ["h"], ["y"], axis=-1), "LogSoftmax", {}),
    "layer_norm": (
        node("LayerNormalization", ["h", "g", "b"], ["y"], axis=-1, epsilon=1e-5),
        "LayerNormalization",
        {"g": rand((70,), 60, 0.5, 1.5), "b": rand((70,), 61)},
    ),
    "reduce_mean_rows": (
        node("ReduceMean", ["h", "ax"], ["y"]),
        "Reduce",
        {"ax": np.array([-1], np.int64)},
    ),
    "reduce_max_columns": (
        node("ReduceMax", ["h", "ax"], ["y"], keepdims=0),
        "Reduce",
        {"ax": np.array([1], np.int64)},
    ),
    "global_average_pool": (node("GlobalAveragePool", ["h"], ["y"]), "Reduce", {}),
}


@pytest.mark.parametrize("mode", ["fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(ROW_OPS))
def test_row_kernels_half(name, mode):
    """Kernels that read and write half and compute in float32, after a half MatMul."""
    op, kernel, inits = ROW_OPS[name]
    program = model(
        [node("MatMul", ["x", "w"], ["h"]), op],
        {"x": ((2, 3, 5, 8), F32)},
        {"y": (None, F32)},
        opset=18,
        inits={"w": rand((8, 70), 62, -0.5, 0.5), **inits},
    )
    check_half(program, {"x": rand((2, 3, 5, 8), 63)}, mode, [kernel])


def _layer_norm_model(width: int, residual: bool):
    """x @ w (+ z @ v, the residual), then LayerNormalization over rows of `width`, with its
    feeds (both products in the half type, so the Add and the norm are too)."""
    nodes = [node("MatMul", ["x", "w"], ["h"])]
    inputs = {"x": ((4, 9, 8), F32)}
    feeds = {"x": rand((4, 9, 8), 67)}
    inits = {
        "w": rand((8, width), 64, -0.5, 0.5),
        "g": rand((width,), 65, 0.5, 1.5),
        "b": rand((width,), 66),
    }
    data = "h"
    if residual:
        nodes += [node("MatMul", ["z", "v"], ["r"]), node("Add", ["h", "r"], ["s"])]
        inputs["z"] = ((4, 9, 8), F32)
        feeds["z"] = rand((4, 9, 8), 72, -2, 2)
        inits["v"] = rand((8, width), 73, -0.5, 0.5)
        data = "s"
    nodes.append(node("LayerNormalization", [data, "g", "b"], ["y"], axis=-1, epsilon=1e-5))
    program = model(nodes, inputs, {"y": (None, F32)}, opset=18, inits=inits)
    return program, feeds


LAYER_NORMS = {
    "pieces_96": (96, False),
    "pieces_768": (768, False),
    "pieces_1000": (1000, False),
    "residual_768": (768, True),
    "residual_70": (70, True),
}


@pytest.mark.parametrize("mode", ["fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(LAYER_NORMS))
def test_layer_norm_half(name, mode):
    """Rows whose length is a multiple of 8 half values take the kernel that moves 16-byte
    pieces (1 to 4 a lane; at 1000 some lanes have no last piece); a residual Add before the
    norm is read by the norm's step itself (its input 3; the sum rounded to the half type, as
    a separate Add would store it), with pieces (768) or without (70)."""
    program, feeds = _layer_norm_model(*LAYER_NORMS[name])
    _, executable = check_half(program, feeds, mode, ["LayerNormalization"])
    (norm,) = steps(executable, "LayerNormalization")
    assert (len(norm["inputs"]) == 4 and norm["inputs"][3] is not None) == LAYER_NORMS[name][1]


def linear_relu():
    """x @ w + b then Relu ([4, 9, 40] rows of 48): the Gemm step's bias + ReLU epilogue."""
    program = model(
        [
            node("MatMul", ["x", "w"], ["h"]),
            node("Add", ["h", "b"], ["hb"]),
            node("Relu", ["hb"], ["y"]),
        ],
        {"x": ((4, 9, 40), F32)},
        {"y": (None, F32)},
        inits={"w": rand((40, 48), 74, -0.5, 0.5), "b": rand((48,), 75)},
    )
    return program, {"x": rand((4, 9, 40), 76)}


@pytest.mark.parametrize("mode", ["fp16", "bf16"])
def test_gemm_bias_relu_epilogue_half(mode):
    program, feeds = linear_relu()
    _, executable = check_half(program, feeds, mode, ["Gemm"])
    (gemm,) = steps(executable, "Gemm")
    assert (gemm["attrs"]["epilogue"], gemm["attrs"]["relu"]) == (1, 1)


def test_fast_math_rounds_float32_products_to_tf32():
    a, b = rand((8, 64), 1), rand((64, 9), 2)
    program = model(
        [node("MatMul", ["a", "b"], ["y"])],
        {"a": ((8, 64), F32), "b": ((64, 9), F32)},
        {"y": (None, F32)},
    )
    exact, plain = emulate(program, {"a": a, "b": b})
    fast, executable = emulate(program, {"a": a, "b": b}, fast_math=True)
    assert [s["attrs"].get("fast_math") for s in steps(executable, "Gemm")] == [1]
    assert "fast_math" not in steps(plain, "Gemm")[0]["attrs"]
    compare(fast, reference(program, {"a": a, "b": b}), 5e-3, 5e-3)
    assert not np.array_equal(fast[0], exact[0])  # TF32 rounding changed the result
    conv, feeds = _conv_model((2, 4, 6, 6), (5, 4, 3, 3), True, 3, pads=[1, 1, 1, 1])
    got, executable = emulate(conv, feeds, fast_math=True)
    assert steps(executable, "Conv")[0]["attrs"]["fast_math"] == 1
    compare(got, reference(conv, feeds), 5e-3, 5e-3)


# -- the pass -----------------------------------------------------------------------------
def test_options_are_validated():
    target = GpuTarget()
    with pytest.raises(ValueError, match="fp16=.yes.*True and False"):
        target.passes({"fp16": "yes"})
    with pytest.raises(ValueError, match="fast_math=1.*True and False"):
        target.passes({"fast_math": 1})
    with pytest.raises(ValueError, match="fp16=True and bf16=True exclude each other"):
        target.passes({"fp16": True, "bf16": True})
    with pytest.raises(ValueError, match="bf16=None"):
        target.passes({"bf16": None})
    names = [p.__name__.rsplit(".", 1)[-1] for p in target.passes({"bf16": True})]
    assert names.index("precision") == names.index("fuse_matmul_bias") - 1
    assert names.index("fuse_matmul_bias") == names.index("fuse_pointwise") - 1
    assert "precision" not in [p.__name__.rsplit(".", 1)[-1] for p in target.passes({})]
    for name in ("fp16", "bf16", "fast_math"):
        assert name in target.options


def test_graph_edges_stay_float32_and_outputs_keep_their_names():
    program = model(
        [node("Conv", ["x", "w"], ["y"]), node("Relu", ["y"], ["z"])],
        {"x": ((1, 2, 4, 4), F32)},
        {"y": (None, F32), "z": (None, F32)},
        inits={"w": rand((3, 2, 1, 1), 1)},
    )
    graph, _ = compile_graph(
        gk.parse_onnx_buffer(program).graph, GpuTarget(), {"fp16": True}, False, False
    )
    assert [(v.name, v.type.dtype) for v in graph.inputs] == [("x", DType.f32)]
    assert [(v.name, v.type.dtype) for v in graph.outputs] == [("y", DType.f32), ("z", DType.f32)]
    feeds = {"x": rand((1, 2, 4, 4), 2)}
    got, executable = emulate(program, feeds, fp16=True)
    compare(got, reference(program, feeds), TOL["fp16"], TOL["fp16"])
    assert executable.precision == "fp32"  # set by GpuTarget.compile, not by this helper


def test_sensitive_ops_and_unrepresentable_constants_stay_float32():
    # x @ w -> Where(mask, scores, -1e30) -> Softmax, and ReduceSum(scores): the fill value
    # overflows float16 (the Where stays float32 there, and the Softmax after it) but not
    # bfloat16 (Softmax follows in bfloat16: its kernel computes in float32); ReduceSum is
    # float32 in both
    mask = rand((4, 6), 3, 0, 2, np.int64).astype(bool)
    program = model(
        [
            node("MatMul", ["x", "w"], ["s"]),
            node("Where", ["mask", "s", "fill"], ["m"]),
            node("Softmax", ["m"], ["y"], axis=-1),
            node("ReduceSum", ["s", "axes"], ["t"], keepdims=0),
        ],
        {"x": ((4, 5), F32)},
        {"y": (None, F32), "t": (None, F32)},
        inits={
            "w": rand((5, 6), 1),
            "mask": mask,
            "fill": np.array(-1e30, F32),
            "axes": np.array([1], np.int64),
        },
    )
    feeds = {"x": rand((4, 5), 2)}
    ref = reference(program, feeds)
    for mode, where_type in (("fp16", DType.f32), ("bf16", DType.bf16)):
        graph, _ = compile_graph(
            gk.parse_onnx_buffer(program).graph, GpuTarget(), {mode: True}, False, False
        )
        found = {n.op: n for n in _all_nodes(graph)}
        assert found["Where"].outputs[0].type.dtype == where_type
        assert found["Softmax"].outputs[0].type.dtype == where_type
        assert found["ReduceSum"].outputs[0].type.dtype == DType.f32
        got, executable = emulate(program, feeds, **{mode: True})
        assert step_dtypes(executable, "Softmax") == {where_type.name}
        assert step_dtypes(executable, "Reduce") == {"f32"}
        compare(got, ref, TOL[mode], TOL[mode])


def test_values_read_by_subgraphs_keep_their_types():
    """A value an If branch reads stays float32 (the branch was typed for it); the pass
    leaves the If itself alone."""
    then_branch = helper.make_graph(
        [node("Relu", ["h"], ["t"])], "then", [], [helper.make_tensor_value_info("t", 1, [2, 3])]
    )
    else_branch = helper.make_graph(
        [node("Neg", ["h"], ["e"])], "else", [], [helper.make_tensor_value_info("e", 1, [2, 3])]
    )
    program = model(
        [
            node("MatMul", ["x", "w"], ["h"]),
            node("MatMul", ["x", "w2"], ["h2"]),
            node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch),
            node("Add", ["y", "h2"], ["z"]),
        ],
        {"x": ((2, 4), F32), "c": ((), np.bool_)},
        {"z": (None, F32)},
        inits={"w": rand((4, 3), 1), "w2": rand((4, 3), 2)},
    )
    graph, _ = compile_graph(
        gk.parse_onnx_buffer(program).graph, GpuTarget(), {"fp16": True}, False, False
    )
    matmuls = [n for n in _all_nodes(graph) if n.op == "MatMul"]
    assert sorted(n.outputs[0].type.dtype.name for n in matmuls) == ["f16", "f32"]
    assert [v.type.dtype for v in graph.outputs] == [DType.f32]


def _all_nodes(graph):
    for n in graph.nodes:
        yield n
        body = n.attrs.get("body") if n.op == "Fused" else None
        if body is not None:
            yield from _all_nodes(body)


# -- small networks -----------------------------------------------------------------------
def resnet_like():
    """stem conv 7x7/2 + relu, maxpool, a bottleneck block with a projection shortcut,
    global average pool, flatten, fully connected."""
    w = lambda shape, seed: rand(shape, seed, -0.3, 0.3)  # noqa: E731
    inits = {
        "w0": w((8, 3, 7, 7), 1),
        "b0": rand((8,), 2, -0.5, 0.5),
        "w1": w((4, 8, 1, 1), 3),
        "b1": rand((4,), 4, -0.5, 0.5),
        "w2": w((4, 4, 3, 3), 5),
        "b2": rand((4,), 6, -0.5, 0.5),
        "w3": w((16, 4, 1, 1), 7),
        "b3": rand((16,), 8, -0.5, 0.5),
        "ws": w((16, 8, 1, 1), 9),
        "fc": w((10, 16), 10),
        "fcb": rand((10,), 11),
    }
    nodes = [
        node("Conv", ["x", "w0", "b0"], ["c0"], strides=[2, 2], pads=[3, 3, 3, 3]),
        node("Relu", ["c0"], ["r0"]),
        node("MaxPool", ["r0"], ["p0"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        node("Conv", ["p0", "w1", "b1"], ["c1"]),
        node("Relu", ["c1"], ["r1"]),
        node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        node("Relu", ["c2"], ["r2"]),
        node("Conv", ["r2", "w3", "b3"], ["c3"]),
        node("Conv", ["p0", "ws"], ["sc"]),
        node("Add", ["c3", "sc"], ["s"]),
        node("Relu", ["s"], ["r3"]),
        node("GlobalAveragePool", ["r3"], ["g"]),
        node("Flatten", ["g"], ["f"]),
        node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1),
    ]
    return model(nodes, {"x": ((3, 3, 32, 32), F32)}, {"y": (None, F32)}, inits=inits), {
        "x": rand((3, 3, 32, 32), 12)
    }


def bert_like():
    """embeddings (Gather + positions), LayerNormalization, one encoder layer: q/k/v
    projections, heads, scaled scores + additive mask, Softmax, context, output projection,
    residual + LayerNormalization, Erf-GELU feed-forward, residual + LayerNormalization."""
    B, S, H, NH, V = 2, 8, 16, 2, 30
    D = H // NH
    w = lambda shape, seed: rand(shape, seed, -0.25, 0.25)  # noqa: E731
    inits = {
        "emb": rand((V, H), 1, -1, 1),
        "pos": rand((S, H), 2, -1, 1),
        "g0": rand((H,), 3, 0.5, 1.5),
        "be0": rand((H,), 4, -0.1, 0.1),
        "wq": w((H, H), 5),
        "wk": w((H, H), 6),
        "wv": w((H, H), 7),
        "wo": w((H, H), 8),
        "bq": w((H,), 9),
        "bk": w((H,), 10),
        "bv": w((H,), 11),
        "bo": w((H,), 12),
        "g1": rand((H,), 13, 0.5, 1.5),
        "be1": rand((H,), 14, -0.1, 0.1),
        "w1": w((H, 4 * H), 15),
        "b1": w((4 * H,), 16),
        "w2": w((4 * H, H), 17),
        "b2": w((H,), 18),
        "g2": rand((H,), 19, 0.5, 1.5),
        "be2": rand((H,), 20, -0.1, 0.1),
        "heads": np.array([B, S, NH, D], np.int64),
        "flat": np.array([B, S, H], np.int64),
        "scale": np.array(1 / np.sqrt(D), F32),
        "one": np.array(1.0, F32),
        "big": np.array(-10000.0, F32),
        "half": np.array(0.5, F32),
        "rsqrt2": np.array(1 / np.sqrt(2), F32),
    }
    nodes = [
        node("Gather", ["emb", "ids"], ["e"]),
        node("Add", ["e", "pos"], ["e2"]),
        node("LayerNormalization", ["e2", "g0", "be0"], ["h0"], axis=-1, epsilon=1e-12),
        node("Cast", ["mask"], ["mf"], to=1),
        node("Sub", ["one", "mf"], ["mi"]),
        node("Mul", ["mi", "big"], ["madd"]),
        node("Unsqueeze", ["madd", "axes12"], ["madd4"]),
    ]
    inits["axes12"] = np.array([1, 2], np.int64)
    for name in ("q", "k", "v"):
        nodes += [
            node("MatMul", ["h0", f"w{name}"], [f"{name}0"]),
            node("Add", [f"{name}0", f"b{name}"], [f"{name}1"]),
            node("Reshape", [f"{name}1", "heads"], [f"{name}2"]),
            node(
                "Transpose",
                [f"{name}2"],
                [f"{name}3"],
                perm=[0, 2, 3, 1] if name == "k" else [0, 2, 1, 3],
            ),
        ]
    nodes += [
        node("MatMul", ["q3", "k3"], ["sc0"]),
        node("Mul", ["sc0", "scale"], ["sc1"]),
        node("Add", ["sc1", "madd4"], ["sc2"]),
        node("Softmax", ["sc2"], ["pr"], axis=-1),
        node("MatMul", ["pr", "v3"], ["ctx0"]),
        node("Transpose", ["ctx0"], ["ctx1"], perm=[0, 2, 1, 3]),
        node("Reshape", ["ctx1", "flat"], ["ctx2"]),
        node("MatMul", ["ctx2", "wo"], ["o0"]),
        node("Add", ["o0", "bo"], ["o1"]),
        node("Add", ["o1", "h0"], ["r1"]),
        node("LayerNormalization", ["r1", "g1", "be1"], ["h1"], axis=-1, epsilon=1e-12),
        node("MatMul", ["h1", "w1"], ["f0"]),
        node("Add", ["f0", "b1"], ["f1"]),
        node("Mul", ["f1", "rsqrt2"], ["f2"]),
        node("Erf", ["f2"], ["f3"]),
        node("Add", ["f3", "one"], ["f4"]),
        node("Mul", ["f1", "f4"], ["f5"]),
        node("Mul", ["f5", "half"], ["f6"]),
        node("MatMul", ["f6", "w2"], ["f7"]),
        node("Add", ["f7", "b2"], ["f8"]),
        node("Add", ["f8", "h1"], ["r2"]),
        node("LayerNormalization", ["r2", "g2", "be2"], ["y"], axis=-1, epsilon=1e-12),
    ]
    ids = rand((B, S), 21, 0, V, np.int64)
    mask = np.ones((B, S), np.int64)
    mask[1, 5:] = 0
    program = model(
        nodes,
        {"ids": ((B, S), np.int64), "mask": ((B, S), np.int64)},
        {"y": (None, F32)},
        opset=17,
        inits=inits,
    )
    return program, {"ids": ids, "mask": mask}


@pytest.mark.parametrize("mode", ["fp16", "bf16"])
def test_resnet_like_network(mode):
    program, feeds = resnet_like()
    got, executable = check_half(program, feeds, mode, ["Conv", "MaxPool", "Gemm"])
    assert {s["attrs"]["group"] for s in steps(executable, "Conv")} == {1}


@pytest.mark.parametrize("mode", ["fp16", "bf16"])
def test_bert_like_network(mode):
    program, feeds = bert_like()
    got, executable = emulate(program, feeds, **{mode: True})
    compare(got, reference(program, feeds), TOL[mode], TOL[mode])
    assert step_dtypes(executable, "LayerNormalization") == {HALF[mode]}
    half_gemms = [
        s
        for s in steps(executable, "Gemm") + steps(executable, "Attention")
        if s["inputs"][0]["dtype"] == HALF[mode]
    ]
    assert half_gemms, "no matrix product ran in half precision"


# -- saving -------------------------------------------------------------------------------
def test_options_are_saved_with_the_program(monkeypatch, tmp_path):
    """Compiled with fp16 / fast_math on an emulated device, saved, loaded: the options come
    back, the loaded program (its graph already in half) runs the same plan."""
    import graphkiln.device as device
    from graphkiln.targets.gpu import target as gpu_target

    from graphkiln.targets import registry

    monkeypatch.setattr(device, "require_gpu", lambda: type("V", (), {"usable": []})())
    monkeypatch.setattr(registry, "gpu_code_built", lambda: True)  # as a GPU build is
    monkeypatch.setattr(
        gpu_target,
        "GpuPlan",
        lambda g, b, graphs=True, fast_math=False, *rest, **kw: _Plan(g, fast_math),
    )
    program, feeds = resnet_like()
    compiled = gk.parse_onnx_buffer(program).compile("gpu", fp16=True, fast_math=True)
    assert compiled.options == {"fp16": True, "fast_math": True}
    summary = compiled._executable.plan_summary()
    assert summary["precision"] == "fp16" and summary["fast_math"] is True
    first = compiled.run(feeds)
    path = tmp_path / "resnet_like.gk"
    gk.save(compiled, path)
    loaded = gk.load(path)
    assert loaded.options == {"fp16": True, "fast_math": True}
    assert loaded._executable.plan_summary()["precision"] == "fp16"
    second = loaded.run(feeds)
    np.testing.assert_array_equal(first[0], second[0])
    compare(second, reference(program, feeds), TOL["fp16"], TOL["fp16"])


# -- on the device ------------------------------------------------------------------------
def _real(name):
    onnx_path, data_path = MODELS / f"{name}.onnx", MODELS / f"{name}.npz"
    if not onnx_path.exists():
        pytest.skip(f"{onnx_path} not found")
    data = np.load(data_path)
    feeds = {k.split(":", 1)[1]: data[k] for k in data.files if k.startswith("input:")}
    expected = [data[k] for k in data.files if k.startswith("output:")]
    return onnx_path, feeds, expected


@requires_gpu
@pytest.mark.parametrize("mode,tol", [("fp16", 3e-2), ("bf16", 1e-1)])
def test_gpu_resnet50_half_matches_float32(mode, tol):
    """resnet50 in half against the recorded float32 outputs: logits within `tol` of the
    largest logit and the same top-1 class."""
    path, feeds, expected = _real("resnet50")
    program = gk.load_onnx(str(path)).compile("gpu", **{mode: True})
    got = program.run(feeds)
    assert program._executable.plan_summary()["precision"] == mode
    scale = float(np.abs(expected[0]).max())
    assert float(np.abs(got[0] - expected[0]).max()) <= tol * scale
    np.testing.assert_array_equal(got[0].argmax(-1), expected[0].argmax(-1))


@requires_gpu
@pytest.mark.parametrize("mode,tol", [("fp16", 3e-2), ("bf16", 1e-1)])
def test_gpu_bert_half_matches_float32(mode, tol):
    path, feeds, expected = _real("bert")
    got = gk.load_onnx(str(path)).compile("gpu", **{mode: True}).run(feeds)
    for g, e in zip(got, expected):
        scale = max(float(np.abs(e).max()), 1.0)
        assert float(np.abs(g.astype(np.float64) - e).max()) <= tol * scale


@requires_gpu
@pytest.mark.parametrize("mode", ["fp16", "bf16"])
def test_gpu_half_kernels_on_device(mode):
    """The resnet-like and bert-like networks and every conv case on the device in half."""
    from gpu_testing import run_gpu

    for program, feeds in (resnet_like(), bert_like(), linear_relu()):
        compare(
            run_gpu(program, feeds, **{mode: True}), reference(program, feeds), TOL[mode], TOL[mode]
        )
    for name, (x_shape, w_shape, bias, attrs) in sorted(CONVS.items()):
        program, feeds = _conv_model(x_shape, w_shape, bias, len(name), **attrs)
        compare(
            run_gpu(program, feeds, **{mode: True}), reference(program, feeds), TOL[mode], TOL[mode]
        )
        compare(
            run_gpu(program, feeds, **{mode: True}, blas="builtin"),
            reference(program, feeds),
            TOL[mode],
            TOL[mode],
        )


@requires_gpu
@pytest.mark.parametrize("mode", ["fp32", "fp16", "bf16"])
def test_gpu_bias_relu_epilogue_runs_on_cublaslt(mode):
    """Where cuBLAS runs the GEMMs (NVIDIA), the bias + ReLU epilogue is one cuBLASLt call
    (its counter moves), with ref's values; elsewhere the product and an epilogue kernel."""
    import graphkiln as gk
    from graphkiln._native import load_core

    core = load_core()
    program, feeds = linear_relu()
    compiled = gk.parse_onnx_buffer(program)
    compiled.compile("gpu", **({mode: True} if mode != "fp32" else {}))
    before = core.gpu_lt_gemm_calls()
    got = compiled.run(feeds)
    tol = TOL.get(mode, 1e-4)
    compare(got, reference(program, feeds), tol, tol)
    if compiled._executable.plan_summary()["blas"] == "cuBLAS":
        assert core.gpu_lt_gemm_calls() > before


@requires_gpu
@pytest.mark.parametrize("mode", ["fp16", "bf16"])
def test_gpu_layer_norms_on_device(mode):
    """LAYER_NORMS (16-byte pieces, residual Add read by the norm) on the device in half."""
    from gpu_testing import run_gpu

    for name in sorted(LAYER_NORMS):
        program, feeds = _layer_norm_model(*LAYER_NORMS[name])
        compare(
            run_gpu(program, feeds, **{mode: True}), reference(program, feeds), TOL[mode], TOL[mode]
        )


@requires_gpu
def test_gpu_fast_math_float32():
    program, feeds = resnet_like()
    compare(run_gpu_options(program, feeds, fast_math=True), reference(program, feeds), 5e-3, 5e-3)


def run_gpu_options(program, feeds, **options):
    return gk.parse_onnx_buffer(program).compile("gpu", **options).run(feeds)
