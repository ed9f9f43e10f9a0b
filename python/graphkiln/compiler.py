# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Between Program and the targets: run a target's pipeline on a copy of the graph (with
tracing and per-pass verification) and report what it did."""

from __future__ import annotations

import numpy as np

from .errors import CompileError
from .ir import Graph, TensorType
from .ir.clone import clone_graph
from .passes.context import PassContext
from .passes.manager import count_nodes, pass_name, run_pipeline
from .passes.op_classes import VIEWS
from .targets import Target


def compile_graph(graph: Graph, target: Target, options: dict, trace, verify_passes: bool):
    from .targets.ref.target import evaluate

    work = clone_graph(graph)
    passes = target.passes(options)
    # passes that change how quantized values round (passes/fold_quantized.py): checked for
    # a valid graph, not for equal results; later passes are compared with their results
    rounding = {pass_name(m) for m in passes if getattr(m, "CHANGES_ROUNDING", False)}
    check = _pass_checker(graph, rebase=rounding) if verify_passes else None
    ctx = PassContext(evaluate=evaluate, options=options, supports=target.node_support)
    records = run_pipeline(work, passes, ctx, trace=trace, check=check)
    return work, records


VERIFY_RTOL, VERIFY_ATOL = 1e-4, 1e-5  # verify_passes: how close a pass must keep results


def _pass_checker(
    original: Graph,
    seed: int = 0,
    rtol: float = VERIFY_RTOL,
    atol: float = VERIFY_ATOL,
    rebase: set | frozenset = frozenset(),
):
    """After each pass, run the graph on ref with the same random inputs as the original;
    after a pass named in `rebase`, its results become those the next passes must keep."""
    from .targets.ref.evaluator import run_graph
    from .targets.ref.table import KERNELS

    rng = np.random.default_rng(seed)
    inputs = []
    for v in original.inputs:
        t = v.type
        if not isinstance(t, TensorType) or not t.is_static:
            raise CompileError(f"verify_passes needs static input shapes; input {v.name} is {t}")
        if t.dtype.is_float:
            inputs.append(rng.standard_normal(t.dims).astype(t.dtype.numpy))
        else:  # 0 / 1: valid as indices, masks and token ids alike
            inputs.append(rng.integers(0, 2, t.dims).astype(t.dtype.numpy))
    try:
        expected = list(run_graph(original, inputs, KERNELS))
    except RuntimeError as exc:
        raise CompileError(
            f"verify_passes: the model does not run on random inputs: {exc}"
        ) from exc

    def check(name: str, graph: Graph) -> None:
        got = run_graph(graph, inputs, KERNELS)
        if name in rebase:
            expected[:] = got
            return
        for i, (g, e) in enumerate(zip(got, expected)):
            g, e = np.asarray(g), np.asarray(e)
            same = g.shape == e.shape and (
                np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
                if e.dtype.kind in "fc"
                else np.array_equal(g, e)
            )
            if not same:
                raise CompileError(
                    f"pass {name} changed output {i} ({original.outputs[i].name}): "
                    f"max abs difference {_max_diff(g, e)}"
                )

    return check


def _max_diff(g, e):
    try:
        return float(np.max(np.abs(g.astype(np.float64) - e.astype(np.float64))))
    except (ValueError, TypeError):
        return "n/a (shapes differ)"


def count_kernels(graph: Graph) -> int:
    """Nodes that launch work: all but constants and views of contiguous data."""
    return sum(1 for n in graph.nodes if n.op != "Constant" and n.op not in VIEWS)


def compile_stats(original: Graph, compiled: Graph, records, compile_ms: float) -> dict:
    """`nodes_in`: the nodes the pipeline received (the graph as imported), `nodes_out` those
    it left, each pass's `nodes_after` those after it: all counted by count_nodes (top-level
    nodes but Constant, which hold weights and folded values). `arena_bytes` / `naive_bytes`
    are None here; Program.stats fills them in from the plans the target built."""
    return {
        "nodes_in": count_nodes(original),
        "nodes_out": count_nodes(compiled),
        "kernels": count_kernels(compiled),
        "fused": sum(1 for n in compiled.nodes if n.op == "Fused"),
        "arena_bytes": None,
        "naive_bytes": None,
        "compile_ms": round(compile_ms, 3),
        "passes": [r.as_dict() for r in records],
    }
