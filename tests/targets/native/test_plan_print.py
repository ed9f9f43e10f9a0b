# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The plan printer and verifier (targets/native/plan_print.py), stats() reporting the
arena of the plans built, Program.print_plan and `graphkiln compile --print-plan`."""

from __future__ import annotations

import numpy as np
import pytest

from graphkiln import Program
from graphkiln.ir import DType, parse_graph
from graphkiln.targets.native.plan import ARENA, Plan, Slot, Step, Storage, place_buffers
from graphkiln.targets.native.plan_print import PlanError, format_plan, verify_plan
from graphkiln.targets.registry import default_target

needs_core = pytest.mark.skipif(default_target() != "cpu", reason="needs the C++ core")

CHAIN = """
graph main(%x: f32[2,256]) {
  %a: f32[2,256] = Sin(%x) loc("sin")
  %axes: i64[1] = Constant() {value = tensor<i64[1]> [1]}
  %s: f32[2,1] = ReduceSum(%a, %axes) loc("rowsum")
  %y: f32[2,256] = Mul(%a, %s)
  %z: f32[2,256] = Sub(%y, %a)
  return %z
}"""

SYMBOLIC = CHAIN.replace("f32[2,", "f32[N,")


def _plan(program):
    (segment,) = next(iter(program._executable._plans.values()))
    return segment.plan


def test_arena_buffers_live_at_once_do_not_overlap():
    # (key, bytes, first step, last step): a and b overlap in time, c reuses a's bytes
    offsets, total = place_buffers([("a", 1024, 0, 1), ("b", 1024, 1, 2), ("c", 1000, 2, 3)])
    assert abs(offsets["a"] - offsets["b"]) >= 1024
    assert offsets["c"] == offsets["a"] and total == 2048


@needs_core
def test_stats_report_the_arena_of_the_plan_run():
    program = Program(parse_graph(CHAIN)).compile("cpu")
    plan = _plan(program)
    stats = program.stats()
    assert stats["arena_bytes"] == plan.arena_bytes == stats["plan"]["arena_bytes"] > 0
    # the intermediates: sin's output (2 KiB) and the row sums (8 bytes, aligned to 64),
    # both live while the last step reads them
    assert stats["naive_bytes"] == plan.naive_bytes == 2048 + 64 == plan.arena_bytes
    assert program._executable._plans and program._executable.plan_summary()["plans"] == 1
    ref = Program(parse_graph(CHAIN)).compile("ref").stats()
    assert ref["arena_bytes"] is None and ref["naive_bytes"] is None


@needs_core
def test_print_plan_shows_kernels_slots_offsets_and_attributes(capsys):
    program = Program(parse_graph(CHAIN)).compile("cpu")
    plan = _plan(program)
    verify_plan(plan, "cpu")
    program.print_plan()
    text = capsys.readouterr().out
    assert text.startswith("== plan 1 of 1: inputs x=[2, 256]\nplan: ")
    assert f"arena {plan.arena_bytes} bytes" in text
    reduce = next(s for s in plan.steps if s.kernel == "Reduce")
    offset = plan.storages[plan.slots[reduce.outputs[0]].storage].offset
    assert reduce.name == "rowsum" and "Reduce  'rowsum'" in text
    assert f"out: s{reduce.outputs[0]} f32[2, 1] arena@{offset}" in text
    assert "attrs: axes=[1] op='sum'" in text
    assert "in:  s0 f32[2, 256] input 0" in text
    assert "output 0" in text and "Pointwise" in text
    # long lists are elided: the pointwise program shows its first items and its length
    program_attr = plan.steps[-1].attrs["program"]
    assert len(program_attr) > 8 and f"... {len(program_attr)} items]" in text


@needs_core
def test_print_plan_of_symbolic_dims_lists_the_plans_built_so_far(capsys):
    program = Program(parse_graph(SYMBOLIC)).compile("cpu")
    program.print_plan()
    assert capsys.readouterr().out.startswith("no plan is built yet")
    for n in (1, 3):
        program.run({"x": np.ones((n, 256), np.float32)})
    program.print_plan()
    text = capsys.readouterr().out
    assert "== plan 1 of 2: inputs x=[1, 256]" in text
    assert "== plan 2 of 2: inputs x=[3, 256]" in text
    assert program.stats()["arena_bytes"] == _last_plan(program).arena_bytes


def _last_plan(program):
    (segment,) = list(program._executable._plans.values())[-1]
    return segment.plan


def test_print_plan_needs_a_plan_target():
    from graphkiln.errors import GraphkilnError

    with pytest.raises(GraphkilnError, match="needs a program compiled for cpu or gpu"):
        Program(parse_graph(CHAIN)).compile("ref").print_plan()


def _tiny_plan() -> Plan:
    plan = Plan(
        storages=[Storage(2, 16, 0), Storage(ARENA, 16), Storage(3, 16, 0)],
        slots=[
            Slot(DType.f32, (4,), "plain", 0),
            Slot(DType.f32, (4,), "plain", 1),
            Slot(DType.f32, (4,), "plain", 2),
        ],
        steps=[Step("Copy", [0], [1], {}, "a"), Step("Copy", [1], [2], {}, "b")],
        input_slots=[0],
        output_slots=[2],
    )
    plan.place_arena()
    return plan


def test_verify_plan_names_what_is_wrong():
    plan = _tiny_plan()
    verify_plan(plan, "cpu")
    assert "0 Copy  'a'" in format_plan(plan) and "arena@0" in format_plan(plan)
    plan.steps[1].inputs = [7]
    plan.storages[1].offset = 64
    plan.steps[0].attrs = {"axis": 1}
    with pytest.raises(PlanError) as info:
        verify_plan(plan, "cpu")
    message = str(info.value)
    assert "step 1 (Copy 'b'): slots [7] do not exist" in message
    assert "storage 1: arena bytes [64, 80) past the arena's 64" in message
    assert "kernel 'Copy' has no attribute 'axis'" in message


@needs_core
def test_cli_compile_print_plan(tmp_path, capsys):
    from graphkiln.cli.common import EXAMPLE_MODEL
    from graphkiln.cli.main import main

    assert main(["compile", EXAMPLE_MODEL, "--target", "cpu", "--print-plan"]) == 0
    out = capsys.readouterr().out
    first, rest = out.split("\n", 1)
    assert first.startswith("compiled for cpu") and "; arena " in first
    assert rest.startswith("== plan 1 of 1: inputs ") and "Conv  '" in rest
    assert "arena@" in rest and "attrs: " in rest
    with pytest.raises(SystemExit, match="--print-plan needs --target cpu or gpu"):
        main(["compile", EXAMPLE_MODEL, "--target", "ref", "--print-plan"])
