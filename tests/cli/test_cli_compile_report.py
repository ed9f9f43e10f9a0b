# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""What `compile` / `run` report: command-line advice for a missing kernel, the verdict of
--verify-passes, node counts in --stats that agree with each other."""

import json

import pytest
from cli_models import bernoulli_model, if_model, save

from graphkiln.cli.common import EXAMPLE_MODEL
from graphkiln.cli.main import main
from graphkiln.targets.registry import default_target

pytestmark = pytest.mark.skipif(
    default_target() != "cpu", reason="the cpu target needs the C++ core"
)


def test_a_missing_kernel_advises_the_fallback_flag_not_python(tmp_path, capsys):
    path = save(bernoulli_model(), tmp_path, "bernoulli.onnx")
    assert main(["run", path, "--target", "cpu"]) == 1
    assert capsys.readouterr().err == (
        "graphkiln run: LoweringError: the cpu target has no kernel for Bernoulli (first: node "
        "'yh'); --fallback ref runs it on ref\n"
    )
    assert main(["run", path, "--target", "cpu", "--fallback", "ref"]) == 0
    assert "yh: float32 [2]" in capsys.readouterr().out


def test_verify_passes_prints_a_verdict_on_success(capsys):
    assert main(["compile", EXAMPLE_MODEL, "--target", "cpu", "--verify-passes"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    from graphkiln.targets.cpu.target import CpuTarget

    assert first == (
        f"verify-passes: all {len(CpuTarget().passes({}))} passes keep ref's results on random "
        "inputs (seed 0, rtol 0.0001, atol 1e-05)"
    )


def test_verify_passes_keeps_stats_json_on_stdout(capsys):
    assert main(["compile", EXAMPLE_MODEL, "--target", "cpu", "--verify-passes", "--stats"]) == 0
    captured = capsys.readouterr()
    stats = json.loads(captured.out)
    assert captured.err.startswith(f"verify-passes: all {len(stats['passes'])} passes keep")


@pytest.mark.parametrize("which", ["example", "if"])
def test_stats_node_counts_agree(which, tmp_path, capsys):
    """nodes_in is what the pipeline received: the first pass (dead-code elimination on a
    graph without dead code) leaves as many, and the last leaves nodes_out."""
    path = EXAMPLE_MODEL if which == "example" else save(if_model(), tmp_path, "if.onnx")
    assert main(["compile", path, "--target", "ref", "--stats"]) == 0
    stats = json.loads(capsys.readouterr().out)
    first, last = stats["passes"][0], stats["passes"][-1]
    assert first["name"] == "eliminate_dead_code"
    expected_in = {"example": 24, "if": 3}[which]  # top-level nodes but Constant
    assert stats["nodes_in"] == first["nodes_after"] == expected_in
    assert stats["nodes_out"] == last["nodes_after"]
