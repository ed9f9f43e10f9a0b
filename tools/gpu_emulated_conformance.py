#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Count the ONNX node conformance cases the gpu target passes WITHOUT a GPU: every gpu plan
is run by the numpy model of the gpu kernels (tests/targets/gpu/plan_emulator.py) instead of
the device. The count tracks the device's closely (the 2026-11-30 H200 run: 1423 on the
device, 1421 here; two empty-set reductions differ).

    python tools/gpu_emulated_conformance.py [--filter NAME_PART] [-v]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
for sub in (
    "python",
    os.path.join("tests", "targets", "gpu"),
    os.path.join("tests", "conformance"),
):
    sys.path.insert(0, os.path.join(HERE, "..", sub))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--filter", default="", help="only cases whose name contains this")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every failure")
    args = parser.parse_args()

    import graphkiln.device as device
    from graphkiln.targets.gpu import target as gpu_target
    from gpu_testing import EmulatedPlan
    from node_cases import all_cases, run_case

    class Verdict:  # a GPU "found": the plans never reach one
        ok, message, usable = True, "emulated", []

    device.require_gpu = lambda *a, **k: Verdict()
    device.check_gpu_compatibility = lambda *a, **k: Verdict()
    gpu_target.GpuPlan = EmulatedPlan

    cases = all_cases()
    selected = [n for n in sorted(cases) if args.filter in n]
    failures = {}
    start = time.perf_counter()
    for name in selected:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run_case(cases[name], "gpu")
        except Exception as exc:  # noqa: BLE001 - a report of every kind of failure
            failures[name] = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
    op = lambda c: c.model.graph.node[-1].op_type if c.model.graph.node else "?"  # noqa: E731
    print(
        f"emulated gpu: {len(selected) - len(failures)} of {len(selected)} node cases pass "
        f"({time.perf_counter() - start:.1f} s)"
    )
    print(
        "failures by last op:",
        ", ".join(
            f"{o} {k}" for o, k in collections.Counter(op(cases[n]) for n in failures).most_common()
        ),
    )
    if args.verbose:
        for name, msg in failures.items():
            print(f"  {name}: {msg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
