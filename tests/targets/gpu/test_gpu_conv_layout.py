# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Channels-last (NHWC) convolutions on the gpu target (targets/gpu/conv_layout.py): which
Conv steps run NHWC, the layout conversions the lowering inserts, and the results against
ref through the numpy model of the kernels (and on the device, marked gpu)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import graphkiln as gk
from graphkiln.compiler import compile_graph
from graphkiln.targets.gpu.target import GpuExecutable, GpuTarget
from gpu_testing import EmulatedPlan, compare, requires_gpu
from test_gpu_ops_more import model, rand

node = helper.make_node
F32 = np.float32
TOL = {"fp16": 1e-2, "bf16": 5e-2}


def bottleneck_net(batch: int):
    """stem conv 3->16 (3 channels: stays NCHW) + relu, maxpool, a bottleneck (1x1 16->8,
    3x3 8->8, 1x1 8->16 + projection shortcut 16->16, add, relu), a 3x3 conv whose input is
    also added to its output, global average pool, flatten, fully connected."""
    w = lambda shape, seed: rand(shape, seed, -0.3, 0.3)  # noqa: E731
    inits = {
        "w0": w((16, 3, 3, 3), 1),
        "b0": rand((16,), 2, -0.5, 0.5),
        "w1": w((8, 16, 1, 1), 3),
        "b1": rand((8,), 4, -0.5, 0.5),
        "w2": w((8, 8, 3, 3), 5),
        "b2": rand((8,), 6, -0.5, 0.5),
        "w3": w((16, 8, 1, 1), 7),
        "b3": rand((16,), 8, -0.5, 0.5),
        "ws": w((16, 16, 1, 1), 9),
        "w4": w((16, 16, 3, 3), 10),
        "fc": w((10, 16), 11),
        "fcb": rand((10,), 12),
    }
    nodes = [
        node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
        node("Relu", ["c0"], ["r0"]),
        node("MaxPool", ["r0"], ["p0"], kernel_shape=[2, 2], strides=[2, 2]),
        node("Conv", ["p0", "w1", "b1"], ["c1"]),
        node("Relu", ["c1"], ["r1"]),
        node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        node("Relu", ["c2"], ["r2"]),
        node("Conv", ["r2", "w3", "b3"], ["c3"]),
        node("Conv", ["p0", "ws"], ["sc"]),
        node("Add", ["c3", "sc"], ["s"]),
        node("Relu", ["s"], ["r3"]),
        node("Conv", ["r3", "w4"], ["c4"], pads=[1, 1, 1, 1]),
        node("Add", ["c4", "r3"], ["d"]),
        node("GlobalAveragePool", ["d"], ["g"]),
        node("Flatten", ["g"], ["f"]),
        node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1),
    ]
    shape = (batch, 3, 16, 16)
    return model(nodes, {"x": (shape, F32)}, {"y": (None, F32)}, inits=inits), {
        "x": rand(shape, 13)
    }


def emulate(program: bytes, feeds: dict, channels_last: bool, **options):
    """(outputs, plan) of the gpu plan run by the numpy kernel model."""
    target = GpuTarget()
    target.check_options(options)
    graph, _ = compile_graph(gk.parse_onnx_buffer(program).graph, target, options, False, False)
    executable = GpuExecutable(
        graph, plan_factory=lambda g, b: EmulatedPlan(g, b, channels_last=channels_last)
    )
    got = executable.run([feeds[v.name] for v in graph.inputs])
    (plan,) = executable._plans.values()
    return got, plan.plan


def reference(program: bytes, feeds: dict) -> list:
    return gk.parse_onnx_buffer(program).compile("ref").run(feeds)


def conv_layouts(plan) -> list[str]:
    """Per Conv step, the layout of its output slot."""
    return [plan.slots[s.outputs[0]].layout for s in plan.steps if s.kernel == "Conv"]


def nhwc_strides(dims) -> list[int]:
    n, c, h, w = dims
    return [h * w * c, 1, w * c, c]


@pytest.mark.parametrize("mode", ["fp16", "bf16"])
def test_half_convs_run_channels_last_and_match_ref(mode):
    program, feeds = bottleneck_net(batch=2)
    got, plan = emulate(program, feeds, True, **{mode: True})
    compare(got, reference(program, feeds), TOL[mode], TOL[mode])
    layouts = conv_layouts(plan)
    # the stem (3 input channels) stays plain, the four bottleneck convs run channels-last,
    # and so does the last one (read by no conv, but its input is already channels-last)
    assert layouts == ["plain"] + ["channels_last"] * 5, layouts
    for step in plan.steps:
        if step.kernel != "Conv" or plan.slots[step.outputs[0]].layout == "plain":
            continue
        x, w, *rest = [plan.tensor_arg(s) if s is not None else None for s in step.inputs]
        y = plan.tensor_arg(step.outputs[0])
        assert x["strides"] == nhwc_strides(x["dims"]) and y["strides"] == nhwc_strides(y["dims"])
        assert w["strides"] == nhwc_strides(w["dims"])  # KRSC weights
        if len(rest) > 1 and rest[1] is not None:  # the residual has the output's layout
            assert rest[1]["strides"] == y["strides"]
    # one conversion into NHWC (the maxpool's output, read by two convs), one out of it (the
    # last conv's result, with its residual Add, for the pooling)
    copies = [s.name for s in plan.steps if s.kernel == "Copy"]
    assert sum(n.endswith("/to_channels_last") for n in copies) == 1, copies
    assert sum(n.endswith("/to_plain") for n in copies) == 1, copies


def test_channels_last_off_keeps_every_conv_plain():
    program, feeds = bottleneck_net(batch=2)
    got, plan = emulate(program, feeds, False, fp16=True)
    compare(got, reference(program, feeds), TOL["fp16"], TOL["fp16"])
    assert set(conv_layouts(plan)) == {"plain"}
    assert not [s for s in plan.steps if s.kernel == "Copy"]


def test_float32_and_batch_one_stay_plain():
    program, feeds = bottleneck_net(batch=2)
    got, plan = emulate(program, feeds, True)  # float32
    compare(got, reference(program, feeds), 1e-4, 1e-5)
    assert set(conv_layouts(plan)) == {"plain"}
    program, feeds = bottleneck_net(batch=1)
    got, plan = emulate(program, feeds, True, fp16=True)
    compare(got, reference(program, feeds), TOL["fp16"], TOL["fp16"])
    assert set(conv_layouts(plan)) == {"plain"}


def test_a_conv_read_by_no_conv_writes_plain():
    """A conv whose result no conv reads and whose input is plain (here a graph input) stays
    plain: NHWC would only add conversions."""
    inits = {"w": rand((8, 8, 3, 3), 1, -0.3, 0.3), "b": rand((8,), 2)}
    program = model(
        [node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])],
        {"x": ((2, 8, 6, 6), F32)},
        {"y": (None, F32)},
        inits=inits,
    )
    feeds = {"x": rand((2, 8, 6, 6), 3)}
    got, plan = emulate(program, feeds, True, fp16=True)
    compare(got, reference(program, feeds), TOL["fp16"], TOL["fp16"])
    assert set(conv_layouts(plan)) == {"plain"}


def test_channels_last_option_is_validated():
    with pytest.raises(ValueError, match="channels_last='yes'"):
        gk.parse_onnx_buffer(bottleneck_net(2)[0]).compile("gpu", channels_last="yes")


@requires_gpu
@pytest.mark.parametrize("mode", ["fp16", "bf16"])
@pytest.mark.parametrize("channels_last", [True, False])
def test_gpu_channels_last_convs_on_device(mode, channels_last):
    program, feeds = bottleneck_net(batch=4)
    compiled = gk.parse_onnx_buffer(program).compile(
        "gpu", channels_last=channels_last, **{mode: True}
    )
    compare(compiled.run(feeds), reference(program, feeds), TOL[mode], TOL[mode])
