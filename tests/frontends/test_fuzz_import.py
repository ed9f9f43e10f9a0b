# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""A bounded run of tools/fuzz_import.py: mutated models give only graphkiln's errors."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_bounded_fuzz_of_parse_onnx_buffer_finds_nothing():
    cmd = [
        sys.executable,
        os.path.join(ROOT, "tools", "fuzz_import.py"),
        "--iterations",
        "300",
        "--seed",
        "7",
        "--node-cases",
        "0",
        "--workers",
        "2",
        "--timeout-per-case",
        "15",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert "executions: 300" in output
    assert "distinct failure messages: 0" in output and "crashes: 0" in output
