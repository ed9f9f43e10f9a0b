# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""GpuExecutable.print_plan on gpu plans (emulated: no device needed)."""

import numpy as np
from gpu_testing import EmulatedPlan

from graphkiln.compiler import compile_graph
from graphkiln.ir import parse_graph
from graphkiln.targets.gpu.target import GpuExecutable, GpuTarget

GRAPH = """
graph main(%x: f32[N,64]) {
  %axes: i64[1] = Constant() {value = tensor<i64[1]> [1]}
  %m: f32[N,1] = ReduceMax(%x, %axes) loc("rowmax")
  %y: f32[N,64] = Sub(%x, %m)
  %z: f32[N,64] = Exp(%y)
  return %z
}"""


def test_print_plan_lists_each_shape_signature(capsys):
    graph, _ = compile_graph(parse_graph(GRAPH), GpuTarget(), {}, False, False)
    executable = GpuExecutable(graph, plan_factory=EmulatedPlan)
    executable.print_plan()
    assert capsys.readouterr().out.startswith("no plan is built yet")
    for n in (2, 5):
        executable.run([np.ones((n, 64), np.float32)])
    executable.print_plan()
    text = capsys.readouterr().out
    assert "== plan 1 of 2: inputs x=[2, 64]" in text and "== plan 2 of 2: inputs x=[5, 64]" in text
    assert "Reduce  'rowmax'" in text and "attrs: inner=1 len=64 op='max' outer=5" in text
    ((_, last),) = executable._plans.items()[-1:]
    assert f"arena {last.plan.arena_bytes} bytes (naive {last.plan.naive_bytes})" in text
    assert "arena@0" in text
