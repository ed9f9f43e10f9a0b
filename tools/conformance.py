#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Run the ONNX backend node cases on a target; print the pass count and failures by op.

python tools/conformance.py --target ref                  # summary
python tools/conformance.py --target ref --filter conv    # only cases whose name has 'conv'
python tools/conformance.py --target ref --write-expected # rewrite the expected-failure list
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "conformance"))

from node_cases import HERE as CASES_DIR, all_cases, expected_failures, run_case  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--target", default="ref")
    parser.add_argument("--filter", default="", help="only cases whose name contains this")
    parser.add_argument(
        "--write-expected",
        action="store_true",
        help="rewrite tests/conformance/expected_failures_<target>.txt, keeping "
        "reasons already written for cases that still fail",
    )
    parser.add_argument(
        "--optimize",
        action="store_true",
        help="ref: run the full optimization pipeline before each case",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print every failure")
    args = parser.parse_args()

    cases = all_cases()
    failures: dict[str, str] = {}
    start = time.perf_counter()
    selected = [n for n in sorted(cases) if args.filter in n]
    for name in selected:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run_case(cases[name], args.target, **({"optimize": True} if args.optimize else {}))
        except Exception as exc:  # noqa: BLE001 - a report of every kind of failure
            msg = f"{type(exc).__name__}: {exc}".replace("\n", " ")
            failures[name] = " ".join(msg.split())[:160]
    elapsed = time.perf_counter() - start
    passed = len(selected) - len(failures)
    by_op = collections.Counter(_op_of(cases[n]) for n in failures)
    label = args.target + (" (optimized)" if args.optimize else "")
    print(f"target {label}: {passed} of {len(selected)} node cases pass ({elapsed:.1f} s)")
    print("failures by last op:", ", ".join(f"{op} {n}" for op, n in by_op.most_common()))
    if args.verbose:
        for name, msg in failures.items():
            print(f"  {name}: {msg}")
    if args.write_expected:
        old = expected_failures(args.target)
        path = os.path.join(CASES_DIR, f"expected_failures_{args.target}.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"# ONNX node cases expected to fail on target {args.target}: name  # reason\n")
            f.write(
                "# Regenerate with: python tools/conformance.py --target "
                f"{args.target} --write-expected\n"
            )
            for name in sorted(failures):
                f.write(f"{name}  # {old.get(name) or failures[name]}\n")
        print(f"wrote {path}")
    return 0


def _op_of(case) -> str:
    return case.model.graph.node[-1].op_type if case.model.graph.node else "?"


if __name__ == "__main__":
    sys.exit(main())
