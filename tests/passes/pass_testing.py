# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Pass tests are before/after IR text: run the pass on `before`, compare with `after`
structurally (names ignored), and check the results did not change on ref."""

from __future__ import annotations

import numpy as np

from graphkiln.ir import TensorType, parse_graph, print_graph
from graphkiln.ir.clone import clone_graph
from graphkiln.ir.equality import structural_diff
from graphkiln.passes.context import PassContext
from graphkiln.targets.ref.evaluator import run_graph
from graphkiln.targets.ref.table import KERNELS
from graphkiln.targets.ref.target import evaluate


def check_pass(module, before: str, after: str, seed: int = 0) -> None:
    graph = parse_graph(before)
    original = clone_graph(graph)
    module.run(graph, PassContext(evaluate=evaluate))
    graph.verify()
    diff = structural_diff(graph, parse_graph(after))
    assert diff is None, f"{diff}\n--- got:\n{print_graph(graph)}"
    rng = np.random.default_rng(seed)
    inputs = [_random(v.type, rng) for v in original.inputs]
    for got, want in zip(run_graph(graph, inputs, KERNELS), run_graph(original, inputs, KERNELS)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _random(t: TensorType, rng):
    if t.dtype.is_float:
        return rng.standard_normal(t.dims).astype(t.dtype.numpy)
    return rng.integers(-3, 4, t.dims).astype(t.dtype.numpy)
