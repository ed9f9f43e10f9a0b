# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The arenas of a program's plans come from one pool (src/core/arena_pool.hpp): a run takes
an idle buffer large enough or a new one and gives it back, so plans of other shapes reuse
memory earlier runs touched, and concurrent runs never share a buffer. Outputs against ref
(seeded random inputs), at many shapes, serially and from threads."""

from __future__ import annotations

import threading

import numpy as np

import graphkiln as gk
from concurrency_models import ocr_recognizer

OCR = ocr_recognizer(seed=0).SerializeToString()


def feeds(seed: int, width: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((1, 3, 48, width)).astype(np.float32)}


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want).max()))


def test_plans_of_other_shapes_reuse_the_programs_arenas():
    cpu = gk.parse_onnx_buffer(OCR, default_dim=None).compile("cpu")
    ref = gk.parse_onnx_buffer(OCR, default_dim=None).compile("ref")
    widths = [640, 160, 320, 400, 608, 176, 560]  # the largest first: the rest fit its arena
    for i, w in enumerate(widths):
        f = feeds(i, w)
        close(cpu.run(f)[0], ref.run(f)[0])
    pool = cpu._executable.arena_pool
    assert cpu._executable.plan_summary()["plans"] == len(widths)
    assert pool.allocations == 1  # one arena served seven plans, run one after another
    assert pool.idle_bytes == pool.allocated_bytes > 0


def test_a_larger_shape_replaces_the_idle_arena_it_outgrew():
    cpu = gk.parse_onnx_buffer(OCR, default_dim=None).compile("cpu")
    for i, w in enumerate([160, 960, 320]):
        cpu.run(feeds(i, w))
    pool = cpu._executable.arena_pool
    assert pool.allocations == 2
    assert pool.allocated_bytes == pool.idle_bytes  # the small one was freed, not kept


def test_concurrent_runs_of_several_shapes_each_get_their_own_arena():
    cpu = gk.parse_onnx_buffer(OCR, default_dim=None).compile("cpu", max_concurrency=4)
    ref = gk.parse_onnx_buffer(OCR, default_dim=None).compile("ref")
    widths = [160, 320, 480, 640]
    cases = [(seed, widths[seed % 4]) for seed in range(24)]
    want = {c: ref.run(feeds(*c))[0] for c in cases}
    errors: list = []

    def worker(part):
        try:
            for c in part:
                close(cpu.run(feeds(*c))[0], want[c])
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(cases[k::4],)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    pool = cpu._executable.arena_pool
    assert pool.allocated_bytes == pool.idle_bytes  # every buffer given back
