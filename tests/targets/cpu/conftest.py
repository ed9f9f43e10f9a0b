# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Fixtures of the cpu target's tests."""

from __future__ import annotations

import numpy as np
import pytest

import graphkiln as gk
from concurrency_models import ocr_recognizer
from graphkiln._native import load_core
from graphkiln.targets.cpu.threads import physical_cores


@pytest.fixture
def core_budget():
    """Sets the process-wide core budget (how many cores runs and kernel builds may hold),
    restored to the physical cores after the test."""
    # the first plan built in a process sets the budget: build one, then set it
    prog = gk.parse_onnx_buffer(ocr_recognizer(seed=0).SerializeToString(), default_dim=None)
    x = np.random.default_rng(0).standard_normal((1, 3, 48, 160)).astype(np.float32)
    prog.compile("cpu").run({"x": x})
    core = load_core()
    yield core.set_core_budget
    core.set_core_budget(physical_cores())
