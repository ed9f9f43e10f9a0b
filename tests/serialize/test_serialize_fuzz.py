# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A short run of tools/fuzz_load.py: mutated saved programs raise only FormatError."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_fuzz_load_300_iterations():
    spec = importlib.util.spec_from_file_location(
        "fuzz_load", os.path.join(ROOT, "tools", "fuzz_load.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines = []
    stats = module.run_fuzz(300, seed=12345, report=lines.append)
    assert stats["crashes"] == 0, "\n".join(stats["crash_reports"][:3])
    assert stats["catch_all"] == 0, "\n".join(lines)
    assert stats["format_errors"] > 150 and stats["distinct_messages"] > 50
    assert lines[-1].startswith("summary: 300 executions")
