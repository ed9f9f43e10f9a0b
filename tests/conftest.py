# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Shared fixtures: small ONNX models built with onnx.helper; --skip-newer-opsets.

GRAPHKILN_ADAPT_THREADS=0 for the whole session (and the processes it starts): tests that
compare runs bit for bit must not see one run drop to one thread because the CI machine is
busy (targets/cpu/threads.py's LoadMonitor, tested on its own with a fake /proc/loadavg)."""

import os
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper


os.environ.setdefault("GRAPHKILN_ADAPT_THREADS", "0")


def pytest_addoption(parser):
    parser.addoption(
        "--skip-newer-opsets",
        action="store_true",
        help="report as skipped a test whose model needs a newer opset than the installed "
        "onnx knows (graphkiln imports up to onnx.defs.onnx_opset_version()): for the "
        "run on the oldest dependencies we support (.ci/run, .ci/constraints-oldest.txt)",
    )


_NEWER_OPSET = re.compile(r"opset (\d+) is outside what graphkiln imports \(\d+ to (\d+)\)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if (
        call.when != "call"
        or call.excinfo is None
        or report.outcome != "failed"
        or not item.config.getoption("--skip-newer-opsets")
    ):
        return
    from graphkiln.errors import ModelError

    found = (
        _NEWER_OPSET.search(str(call.excinfo.value))
        if call.excinfo.errisinstance(ModelError)
        else None
    )
    newest = onnx.defs.onnx_opset_version()
    if found and int(found.group(2)) == newest < int(found.group(1)):
        report.outcome = "skipped"
        report.longrepr = (
            str(item.path),
            item.location[1] or 0,
            f"Skipped: needs opset {found.group(1)}; onnx {onnx.__version__} knows up to {newest}",
        )


def make_model(nodes, inputs, outputs, initializers=(), opset=17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "test", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.fixture
def add_relu_model() -> onnx.ModelProto:
    """y = relu(x + w), x: f32[N,3]."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [3], [0.5, -2.0, 3.0])
    return make_model(
        [
            helper.make_node("Add", ["x", "w"], ["s"], name="add"),
            helper.make_node("Relu", ["s"], ["y"], name="relu"),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        [w],
    )


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)
