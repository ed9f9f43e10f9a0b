#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Fuzz graphkiln.parse_onnx_buffer with mutated models (tools/fuzz_mutations.py) of seed
models (tools/fuzz_seeds.py). Only graphkiln's documented errors may come out (GraphkilnError
subclasses: ModelError, UnsupportedOperatorError, ...). Any other exception, a case running
past --timeout-per-case (a hang) or a worker dying (a crash) is a failure. Cases run in a
pool of worker processes, each with an address-space limit so that an unchecked huge
allocation shows as a MemoryError. Exit status 1 when anything failed.

    python tools/fuzz_import.py --iterations 10000 --seed 1
    python tools/fuzz_import.py --seed 1 --replay 4711    # one case again, traceback shown
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import re
import sys
import time
import traceback
from collections import Counter
from multiprocessing.connection import wait

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
sys.path.insert(0, HERE)

import graphkiln  # noqa: E402  (imported before workers fork, so they start warm)
from fuzz_mutations import mutate  # noqa: E402
from fuzz_seeds import seed_models  # noqa: E402


def run_case(data: bytes, max_tensor_bytes: int) -> tuple[str, str, str]:
    """(outcome, key, detail): outcome 'ok', 'expected' (key: the error class) or 'failure'
    (key: exception type and where it was raised, detail: message and traceback)."""
    try:
        graphkiln.parse_onnx_buffer(data, max_tensor_bytes=max_tensor_bytes)
    except graphkiln.GraphkilnError as exc:
        cause = exc.__cause__
        if isinstance(cause, (MemoryError, RecursionError)):  # refused too late: a bug
            where = _raised_at(cause)
            return (
                "failure",
                f"{type(cause).__name__} at {where} (inside a {type(exc).__name__})",
                "".join(traceback.format_exception(exc))[-3000:],
            )
        wrapped = (
            ""
            if cause is None or isinstance(cause, graphkiln.GraphkilnError)
            else f" wrapping {type(cause).__name__}"
        )
        return "expected", type(exc).__name__ + wrapped, str(exc)[:300]
    except BaseException as exc:  # noqa: BLE001  (everything else is a bug)
        where = _raised_at(exc)
        message = re.sub(r"\d+", "N", str(exc))[:120]
        key = f"{type(exc).__name__} at {where}: {message}"
        return "failure", key, "".join(traceback.format_exception(exc))[-3000:]
    return "ok", "", ""


def _raised_at(exc: BaseException) -> str:
    """file:line of the innermost graphkiln frame that raised `exc`."""
    frames = traceback.extract_tb(exc.__traceback__)
    inside = [f for f in frames if "graphkiln" in f.filename] or frames
    return f"{os.path.basename(inside[-1].filename)}:{inside[-1].lineno}" if inside else "?"


def _worker(conn, max_tensor_bytes: int, memory_limit: int) -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    except (ImportError, ValueError, OSError):
        pass
    while True:
        message = conn.recv()
        if message is None:
            return
        case, data = message
        conn.send((case, *run_case(data, max_tensor_bytes)))


class Worker:
    def __init__(self, args):
        self.args = args
        self.conn, child = mp.get_context("fork").Pipe()
        self.process = mp.get_context("fork").Process(
            target=_worker, args=(child, args.max_tensor_bytes, args.memory_limit), daemon=True
        )
        self.process.start()
        child.close()
        self.case = None  # (number, seed name, mutations, started)

    def give(self, number, name, applied, data) -> None:
        self.case = (number, name, applied, time.monotonic())
        self.conn.send((number, data))

    def kill(self) -> None:
        self.process.kill()
        self.process.join()
        self.conn.close()


def make_case(number: int, args, seeds: dict[str, bytes], names: list[str]):
    rng = random.Random(f"{args.seed}:{number}")
    name = rng.choice(names)
    data, applied = mutate(seeds[name], rng)
    return name, applied, data


def _shape_of(message: str) -> str:
    return re.sub(r"'[^']*'|\d+", "_", message)[:160]


class Report:
    def __init__(self):
        self.executions = 0
        self.outcomes = Counter()
        self.expected = Counter()
        self.messages = Counter()  # documented errors' messages, names and numbers masked
        self.wrapped = Counter()  # those of them wrapping an internal exception
        self.failures: dict[str, list] = {}  # key -> [count, example case, detail]
        self.hangs: list[str] = []
        self.crashes: list[str] = []

    def failure(self, key: str, case: str, detail: str) -> None:
        entry = self.failures.setdefault(key, [0, case, detail])
        entry[0] += 1


def fuzz(args) -> Report:
    seeds = seed_models(args.node_cases, args.seed)
    names = sorted(seeds)
    print(f"seeds: {len(names)} models: {', '.join(names)}", flush=True)
    report = Report()
    workers = [Worker(args) for _ in range(args.workers)]
    next_case = 0
    busy: dict = {}
    printed = 0
    start = time.monotonic()

    def feed(worker):
        nonlocal next_case
        if next_case >= args.iterations:
            return
        name, applied, data = make_case(next_case, args, seeds, names)
        worker.give(next_case, name, applied, data)
        busy[worker.conn] = worker
        next_case += 1

    def describe(worker) -> str:
        number, name, applied, _ = worker.case
        return f"case {number} (seed {name}, {'+'.join(applied)})"

    for w in workers:
        feed(w)
    while busy:
        for conn in wait(list(busy), timeout=0.2):
            worker = busy.pop(conn)
            try:
                _, outcome, key, detail = conn.recv()
            except (EOFError, OSError):
                code = worker.process.exitcode if worker.process.join(5) is None else None
                report.executions += 1
                report.crashes.append(f"{describe(worker)}: worker died (exit code {code})")
                workers[workers.index(worker)] = worker = Worker(args)
            else:
                report.executions += 1
                report.outcomes[outcome] += 1
                if outcome == "expected":
                    report.expected[key] += 1
                    report.messages[_shape_of(detail)] += 1
                    if " wrapping " in key:
                        report.wrapped[_shape_of(detail)] += 1
                elif outcome == "failure":
                    report.failure(key, describe(worker), detail)
            feed(worker)
        now = time.monotonic()
        for conn, worker in list(busy.items()):
            if now - worker.case[3] > args.timeout_per_case:
                busy.pop(conn)
                report.executions += 1
                report.hangs.append(f"{describe(worker)}: over {args.timeout_per_case} s")
                worker.kill()
                workers[workers.index(worker)] = worker = Worker(args)
                feed(worker)
        if args.progress and report.executions // 1000 > printed:
            printed = report.executions // 1000
            print(f"  {report.executions} executions, {time.monotonic() - start:.0f} s", flush=True)
    for w in workers:
        w.conn.send(None)
        w.process.join(5)
    report.seconds = time.monotonic() - start
    return report


def print_report(report: Report, args) -> bool:
    print(f"executions: {report.executions}")
    print(
        f"outcomes: imported={report.outcomes['ok']} "
        f"documented errors={report.outcomes['expected']} "
        f"failures={report.outcomes['failure']} hangs={len(report.hangs)} "
        f"crashes={len(report.crashes)}"
    )
    print(
        "documented errors by class: "
        + ", ".join(f"{k}={v}" for k, v in report.expected.most_common())
    )
    if args.show_errors:
        print(f"most common documented error messages (of {len(report.messages)} shapes):")
        for shape, count in report.messages.most_common(args.show_errors):
            print(f"  [{count}x] {shape}")
        print(f"documented errors wrapping an internal exception ({len(report.wrapped)} shapes):")
        for shape, count in report.wrapped.most_common(args.show_errors):
            print(f"  [{count}x] {shape}")
    print(f"distinct failure messages: {len(report.failures)}")
    for key, (count, case, detail) in sorted(report.failures.items(), key=lambda kv: -kv[1][0]):
        print(f"  [{count}x] {key}\n      first: {case}")
        if args.verbose:
            print("      " + detail.replace("\n", "\n      "))
    for line in report.hangs:
        print(f"  hang: {line}")
    for line in report.crashes:
        print(f"  crash: {line}")
    print(f"hangs: {len(report.hangs)}")
    print(f"crashes: {len(report.crashes)}")
    ok = not (report.failures or report.hangs or report.crashes)
    rate = report.executions / report.seconds if report.seconds else 0.0
    print(
        f"summary: {'PASS' if ok else 'FAIL'}: {report.executions} executions in "
        f"{report.seconds:.1f} s ({rate:.0f}/s) on {args.workers} workers, "
        f"{len(report.failures)} distinct failures, {len(report.hangs)} hangs, "
        f"{len(report.crashes)} crashes"
    )
    return ok


def replay(args) -> int:
    seeds = seed_models(args.node_cases, args.seed)
    name, applied, data = make_case(args.replay, args, seeds, sorted(seeds))
    print(f"case {args.replay}: seed {name}, mutations {'+'.join(applied)}, {len(data)} bytes")
    if args.save:
        with open(args.save, "wb") as f:
            f.write(data)
    outcome, key, detail = run_case(data, args.max_tensor_bytes)
    print(outcome, key)
    print(detail)
    return 0 if outcome != "failure" else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000, help="fuzz cases to run")
    parser.add_argument("--seed", type=int, default=0, help="seed of the mutations")
    parser.add_argument(
        "--timeout-per-case",
        type=float,
        default=10.0,
        help="seconds after which a case counts as a hang",
    )
    parser.add_argument("--workers", type=int, default=max(1, min(8, os.cpu_count() or 1)))
    parser.add_argument(
        "--node-cases",
        type=int,
        default=40,
        help="ONNX backend node cases among the seeds (0: none, faster start)",
    )
    parser.add_argument(
        "--max-tensor-bytes",
        type=int,
        default=256 << 20,
        help="graphkiln's tensor limit during the fuzz",
    )
    parser.add_argument(
        "--memory-limit",
        type=int,
        default=4 << 30,
        help="address-space limit of each worker, bytes",
    )
    parser.add_argument("--replay", type=int, help="run one case in this process and show it")
    parser.add_argument("--save", help="with --replay: write the case's bytes here")
    parser.add_argument(
        "--show-errors",
        type=int,
        default=0,
        metavar="N",
        help="list the N most common documented error messages",
    )
    parser.add_argument("--progress", action="store_true", help="print progress every 1000 cases")
    parser.add_argument("-v", "--verbose", action="store_true", help="tracebacks of failures")
    args = parser.parse_args(argv)
    if args.iterations < 0 or args.workers < 1 or args.timeout_per_case <= 0:
        parser.error("--iterations >= 0, --workers >= 1 and --timeout-per-case > 0")
    if args.replay is not None:
        return replay(args)
    print(
        f"fuzz_import: iterations={args.iterations} seed={args.seed} workers={args.workers} "
        f"timeout-per-case={args.timeout_per_case}s max-tensor-bytes={args.max_tensor_bytes}",
        flush=True,
    )
    return 0 if print_report(fuzz(args), args) else 1


if __name__ == "__main__":
    sys.exit(main())
