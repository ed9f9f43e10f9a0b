# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Subcommands that compile and run: compile, run, perf, verify. Each takes an ONNX model or
a saved program; `compile -o` saves one, and run / perf / verify use a saved compiled
program as it is unless --target or --optimize asks for another compilation."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from .common import (
    resolve_target,
    add_model_args,
    add_target_arg,
    describe_array,
    describe_source,
    load_program,
    make_inputs,
)
from .input_files import ACCEPTED, read_inputs


def _add_input_args(p):
    p.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help=f"use this array for an input (others are random): {ACCEPTED}; "
        "never loaded through pickle. The array also fixes the input's "
        "symbolic dims (--input-dim wins)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")


def _add_compile_args(p):
    p.add_argument(
        "--optimize",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="ref only: run the full optimization pipeline (default: on for "
        "compile, off for run/perf/verify)",
    )
    p.add_argument(
        "--fallback",
        choices=["ref"],
        default=None,
        help="cpu only: run the ops the cpu target has no kernel for on ref "
        "(default: such ops are an error naming them)",
    )


def _compile(prog, args, default_optimize: bool, **kwargs):
    options = {}
    target = resolve_target(args)
    if target == "ref":
        options["optimize"] = default_optimize if args.optimize is None else args.optimize
    elif args.optimize is not None:
        raise SystemExit(
            f"graphkiln: --optimize applies to --target ref only ({target} always "
            "runs the full pipeline)"
        )
    if getattr(args, "fallback", None):
        if target != "cpu":
            raise SystemExit("graphkiln: --fallback applies to --target cpu only")
        options["fallback"] = args.fallback
    return prog.compile(target, **options, **kwargs)


def _ready(prog, args, default_optimize: bool):
    """(program, reused): a loaded compiled program as it is (no compiling again), unless
    --optimize is given or --target names another target; else the program compiled."""
    if prog.is_compiled and args.optimize is None and args.target in (None, prog.target.name):
        args.target = prog.target.name
        return prog, True
    if prog.is_compiled and args.target is None:  # recompile for the target it was saved for
        args.target = prog.target.name
    return _compile(prog, args, default_optimize), False


def setup_compile(p):
    add_model_args(p)
    add_target_arg(p)
    _add_compile_args(p)
    p.add_argument(
        "--stats",
        action="store_true",
        help="print JSON: nodes_in (the nodes the pass pipeline received), "
        "nodes_out, kernels, arena_bytes (the activation arena of the plan "
        "cpu / gpu built; null on ref or before a plan is built), naive_bytes "
        "(that plan's arena buffers unshared), passes (each with "
        "nodes_after), plan (cpu / gpu); nodes are counted in the top-level "
        "graph, Constant nodes left out",
    )
    p.add_argument(
        "--print-plan",
        action="store_true",
        help="cpu / gpu: print the plans built (one per input shape signature: "
        "steps in order with kernels, attributes, input / output buffers and "
        "arena offsets); a model with symbolic input dims has none until it "
        "runs unless --shapes or --input-dim fixes them; on stderr with --stats",
    )
    p.add_argument(
        "--trace", action="store_true", help="print the IR after each pass, with its time"
    )
    p.add_argument(
        "--verify-passes",
        action="store_true",
        help="run ref after each pass on random inputs; name the first pass that "
        "changes a result (exit 1), else print that all passes keep the "
        "results (on stderr with --stats)",
    )
    p.add_argument("--graphviz", metavar="FILE.dot", help="write the compiled graph as Graphviz")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE.gkp",
        help="save the compiled program; `graphkiln run FILE.gkp` then loads it without compiling",
    )
    p.add_argument(
        "--format",
        choices=("msgpack", "json"),
        default=None,
        help="format of --output (default: json when it ends in .json, else msgpack; "
        "a .json / .msgpack name must match it)",
    )
    p.add_argument(
        "--shapes",
        metavar="NAME=D0,D1,...;...",
        default=None,
        help="build the plans of these input shapes while compiling (cpu saves "
        "them with -o, gpu their shapes, rebuilt on load; ref only checks "
        "them): specializations separated by ';', inputs within one by "
        'spaces, e.g. "x=1,3,224,224;x=4,3,224,224"',
    )


def parse_shapes(text: str) -> list[dict]:
    """--shapes "x=1,3,224,224;x=4,3,224,224" (several inputs of one specialization
    separated by spaces: "ids=1,8 mask=1,8") as compile's `shapes` option."""
    out = []
    for n, part in enumerate(p for p in text.split(";") if p.strip()):
        entry = {}
        for item in part.split():
            name, eq, dims = item.partition("=")
            try:
                shape = [int(d) for d in dims.split(",") if d.strip()] if eq else None
            except ValueError:
                shape = None
            if not name or shape is None or name in entry:
                raise SystemExit(
                    f"graphkiln: --shapes: {item!r} in specialization {n + 1} is "
                    "not NAME=D0,D1,... (each input once); e.g. --shapes "
                    '"x=1,3,224,224;x=4,3,224,224"'
                )
            entry[name] = shape
        out.append(entry)
    if not out:
        raise SystemExit('graphkiln: --shapes: no shapes given; e.g. --shapes "x=1,3,224,224"')
    return out


def cmd_compile(args) -> int:
    if args.format and not args.output:
        raise SystemExit("graphkiln compile: --format needs -o/--output")
    if args.output:  # a name that contradicts --format fails before compiling
        from ..serialize import format_for_path

        fmt = format_for_path(args.output, args.format)
    prog = load_program(args)
    if args.verify_passes and not prog.is_compiled and _symbolic(prog):
        print(
            f"graphkiln: --verify-passes runs on static shapes: symbolic input dims "
            f"{', '.join(_symbolic(prog))} set to 1; choose them with --input-dim "
            "NAME=D0,D1,... or --default-dim N",
            file=sys.stderr,
        )
        prog = load_program(args, default_dim=1)
    extra = {}
    if args.shapes is not None:
        extra["shapes"] = parse_shapes(args.shapes)
    try:
        _compile(
            prog, args, True, trace=args.trace or None, verify_passes=args.verify_passes, **extra
        )
    except ValueError as exc:
        if not extra:
            raise
        raise SystemExit(f"graphkiln: --shapes: {exc}") from None
    stats = prog.stats()
    if args.verify_passes:  # a pass that changed a result raised CompileError above
        from ..compiler import VERIFY_RTOL, VERIFY_ATOL

        n = len(prog.pass_records)
        verdict = (
            f"all {n} passes keep ref's results on random inputs (seed 0, rtol "
            f"{VERIFY_RTOL:g}, atol {VERIFY_ATOL:g})"
            if n
            else "no pass ran, so none could change a result"
        )
        print(f"verify-passes: {verdict}", file=sys.stderr if args.stats else sys.stdout)
    if args.stats:
        print(json.dumps(stats, indent=2))
    else:
        print(
            f"compiled for {args.target} in {stats['compile_ms']:.1f} ms: "
            f"{stats['nodes_in']} nodes in, {stats['nodes_out']} out, {stats['kernels']} kernels"
            f"{_arena_text(stats)}"
        )
    if args.print_plan:
        if not hasattr(prog._executable, "print_plan"):
            raise SystemExit(
                f"graphkiln compile: --print-plan needs --target cpu or gpu "
                f"(the {args.target} target makes no plans)"
            )
        prog.print_plan(file=sys.stderr if args.stats else None)  # --stats: JSON alone on stdout
    if args.graphviz:
        from ..ir.dot import to_dot

        with open(args.graphviz, "w", encoding="utf-8") as f:
            f.write(to_dot(prog.compiled_graph, os.path.basename(args.model)))
        print(f"wrote {args.graphviz}")
    if args.output:
        from ..serialize import save

        save(prog, args.output, fmt)
        print(
            f"saved the compiled program to {args.output} ({fmt}, "
            f"{os.path.getsize(args.output)} bytes)"
        )
    return 0


def _arena_text(stats: dict) -> str:
    """The arena of the plan built, if one is (cpu / gpu with its input shapes known)."""
    if stats.get("arena_bytes") is None:
        return "" if "plan" not in stats else "; no plan built yet (symbolic input dims)"
    naive = stats.get("naive_bytes")
    return f"; arena {stats['arena_bytes']} bytes" + (
        f" for {naive} of intermediates" if naive is not None else ""
    )


def _symbolic(prog) -> list[str]:
    """The program's symbolic input dims, as `x[0] (N)`."""
    return [
        f"{name}[{axis}] ({d})"
        for name, t in prog.get_parameter_shapes().items()
        for axis, d in enumerate(getattr(t, "dims", None) or ())
        if isinstance(d, str)
    ]


def setup_run(p):
    add_model_args(p, optional=True)
    add_target_arg(p)
    _add_compile_args(p)
    _add_input_args(p)
    p.add_argument("--save", metavar="FILE.npz", help="write the outputs to this .npz file")


def cmd_run(args) -> int:
    given = read_inputs(args.input)
    prog, reused = _ready(load_program(args, given), args, False)
    feeds = make_inputs(prog, given, args.seed, args.default_dim)
    outputs = prog.run(feeds)
    print(f"model: {describe_source(args, prog, reused)}, target: {args.target}")
    for name, value in zip(prog.get_output_names(), outputs):
        print(describe_array(name, value))
        if (
            isinstance(value, np.ndarray)
            and value.ndim == 2
            and value.shape[0] == 1
            and value.shape[1] > 1
        ):
            top = np.argsort(-value[0].astype(np.float64))[:3]
            print(f"  top classes: {', '.join(f'{i} ({value[0, i]:.4f})' for i in top)}")
    if args.save:
        np.savez(args.save, **{n: np.asarray(v) for n, v in zip(prog.get_output_names(), outputs)})
        print(f"saved outputs to {args.save}")
    return 0


def setup_perf(p):
    add_model_args(p, optional=True)
    add_target_arg(p)
    _add_compile_args(p)
    _add_input_args(p)
    p.add_argument("--runs", "-n", type=int, default=100, help="timed runs (default 100)")
    p.add_argument("--warmup", type=int, default=5, help="untimed runs first (default 5)")
    p.add_argument(
        "--profile",
        action="store_true",
        help="cpu: also time every kernel call; print the time per kernel type and "
        "the slowest calls",
    )


def cmd_perf(args) -> int:
    if args.runs < 1 or args.warmup < 0:
        raise SystemExit("graphkiln perf: --runs must be >= 1 and --warmup >= 0")
    given = read_inputs(args.input)
    prog, reused = _ready(load_program(args, given), args, False)
    feeds = make_inputs(prog, given, args.seed, args.default_dim)
    for _ in range(args.warmup):
        prog.run(feeds)
    executable = prog._executable
    if args.profile:
        if not hasattr(executable, "set_profiling"):
            raise SystemExit(f"graphkiln perf: --profile needs the cpu target, not {args.target}")
        executable.set_profiling(True)
    times = []
    last_report = time.perf_counter()
    for i in range(args.runs):
        start = time.perf_counter()
        prog.run(feeds)
        now = time.perf_counter()
        times.append(now - start)
        if now - last_report > 1.0:
            print(
                f"  {i + 1}/{args.runs} runs, median so far {np.median(times) * 1e3:.3f} ms",
                file=sys.stderr,
                flush=True,
            )
            last_report = now
    ms = np.array(times) * 1e3
    batch = _batch_size(prog)
    print(
        f"model: {describe_source(args, prog, reused)}, target: {args.target}, "
        f"{args.runs} runs after {args.warmup} warm-up"
    )
    print(
        f"latency ms: mean {ms.mean():.3f}  p50 {np.percentile(ms, 50):.3f}  "
        f"p90 {np.percentile(ms, 90):.3f}  p99 {np.percentile(ms, 99):.3f}  "
        f"min {ms.min():.3f}  max {ms.max():.3f}"
    )
    print(
        f"throughput: {1e3 / np.median(ms):.2f} runs/s ({batch * 1e3 / np.median(ms):.2f} "
        f"items/s at batch {batch})"
    )
    if args.profile:
        _print_profile(executable.step_times(), float(ms.mean()))
    return 0


def _print_profile(step_times, mean_ms: float, top: int = 15) -> None:
    """Per kernel type and per call: mean ms per run and share of the mean latency."""
    by_kernel: dict[str, list] = {}
    for kernel, _, total, runs in step_times:
        entry = by_kernel.setdefault(kernel, [0.0, 0])
        entry[0] += total / max(runs, 1)
        entry[1] += 1
    print("time per kernel type (ms per run, calls, share of latency):")
    for kernel, (per_run, calls) in sorted(by_kernel.items(), key=lambda kv: -kv[1][0]):
        print(f"  {kernel:<14} {per_run:9.3f}  x{calls:<4} {100 * per_run / mean_ms:5.1f}%")
    print(f"slowest {top} calls (ms per run):")
    calls = sorted(step_times, key=lambda t: -t[2] / max(t[3], 1))[:top]
    for kernel, name, total, runs in calls:
        print(f"  {total / max(runs, 1):9.3f}  {kernel:<14} {name}")


def _batch_size(prog) -> int:
    for t in prog.get_parameter_shapes().values():
        dims = getattr(t, "dims", None)
        if dims and isinstance(dims[0], int):
            return dims[0]
    return 1


def setup_verify(p):
    add_model_args(p)
    add_target_arg(p)
    _add_compile_args(p)
    _add_input_args(p)
    p.add_argument("--rtol", type=float, default=1e-3, help="relative tolerance (default 1e-3)")
    p.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance (default 1e-5)")


def cmd_verify(args) -> int:
    given = read_inputs(args.input)
    reference = load_program(args, given).compile("ref")
    prog, _ = _ready(load_program(args, given), args, True)
    feeds = make_inputs(prog, given, args.seed, args.default_dim)
    expected = reference.run(feeds)
    got = prog.run(feeds)
    failed = 0
    for name, g, e in zip(prog.get_output_names(), got, expected):
        g, e = np.asarray(g), np.asarray(e)
        if g.shape != e.shape:
            print(f"FAIL {name}: shape {list(g.shape)}, ref {list(e.shape)}")
            failed += 1
            continue
        if e.dtype.kind in "fc":
            diff = np.abs(g.astype(np.float64) - e.astype(np.float64))
            ok = bool(np.all(diff <= args.atol + args.rtol * np.abs(e.astype(np.float64))))
            err = f"max abs {diff.max() if diff.size else 0:.3g}"
        else:
            ok = bool(np.array_equal(g, e))
            err = "exact" if ok else "values differ"
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {err}")
        failed += not ok
    print(f"{args.target} vs ref: {'PASS' if not failed else f'{failed} output(s) differ'}")
    return 1 if failed else 0
