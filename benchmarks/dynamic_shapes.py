# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Dynamic shapes as servers feed them: one program with symbolic dims serving a stream of
requests of many shapes, against onnxruntime's one session on the same stream.

    PYTHONPATH=python python benchmarks/dynamic_shapes.py --target cpu \\
        --record benchmarks/results/dynamic_shapes_cpu.md
    bash tools/gpu_device_run.sh --skip-models --skip-tests --dynamic "--requests 200"  # gpu

Models (tests/concurrency_models.py, seeded weights, batch 1), imported with
parse_onnx_buffer(data, default_dim=None) so that their dims stay symbolic:
- bert: bert_dynamic_seq, input_ids / attention_mask i64[N, S]; the position embedding is
  sliced to S as exporters write it (Shape -> Gather -> Unsqueeze -> Slice -> Gather);
  request lengths S drawn from 8..128;
- ocr: ocr_recognizer, a CRNN-style conv stack over f32[N, 3, 48, W] with the height
  averaged away and a per-column MatMul classifier; widths W drawn from 160..960 (multiples
  of 16).
Both streams come from --seed (default 0), --requests long (default 200).

Figures, per model:
- compile(): the program's compile call (passes; with symbolic inputs nothing is lowered);
  first shape: the first request's run minus a hit run of its shape (specialize + lower +
  build); first compile = the two together. New shape: for each later first-seen shape,
  its first two runs minus two hit runs (the second run is where the gpu captures its
  graph), median and max; new / first is the median over the first compile.
- hit overhead: Python-side time of Program.run at a known shape minus the C++ executor's
  own time: Program.run and a direct call of that shape's executor (found in the executable's
  plan cache; its run(arrays) is what Program.run ends in) on the same arrays, in pairs,
  alternately in either order, --hit-runs pairs at the stream's shortest shape. It covers
  the feed checks, the plan lookup, array conversions and the hand-over to the executor.
  The headline is a tiny build of the same model (its executor takes µs, so the median of
  the paired differences is not lost in run-to-run noise); in parentheses the model itself,
  as the difference of the two minimums (a median of differences of long runs on a busy
  machine is mostly noise). "-": the plan is not one executor (a fallback plan).
- latency: the stream served in order by onnxruntime (intra_op_num_threads =
  GRAPHKILN_NUM_THREADS on cpu; on gpu the CUDA provider when onnxruntime-gpu is importable,
  else the CPU one on all cores), then by graphkiln, twice each: the cold pass includes
  graphkiln's plans built on first sight, the warm pass is all hits unless the plan cache
  (size: its default, or --compile-options) evicted plans: the rebuilds are counted. Whole
  streams, not interleaved requests: onnxruntime's threads spin a while after each run and
  would slow a graphkiln run that follows at once.
- every graphkiln output of both passes is compared with onnxruntime's (allclose, rtol
  1e-3, atol 1e-4 * max |onnxruntime|); mismatches are counted.
If the native compile or a run fails on cpu, the error is printed and the model is measured
again with fallback='ref' (mode "fallback"); on gpu the error is the row.
onnxruntime is the peer here, never part of graphkiln."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))  # the model builders


def bert_case(args, tiny: bool = False):
    """(model bytes, request shapes, feeds_of(i, length), shape name)."""
    import concurrency_models as cm

    size = (
        dict(hidden=16, heads=2, layers=1)
        if tiny
        else dict(hidden=args.hidden, heads=args.heads, layers=args.layers)
    )
    model = cm.bert_dynamic_seq(seed=0, vocab=1000, **size)
    lengths = np.random.default_rng(args.seed).integers(8, 129, args.requests).tolist()
    return (
        model.SerializeToString(),
        lengths,
        lambda i, s: cm.bert_feeds(i, seq=s, vocab=1000),
        "S",
    )


def ocr_case(args, tiny: bool = False):
    import concurrency_models as cm

    model = cm.ocr_recognizer(seed=0, **(dict(widths=(4, 4, 4), classes=8) if tiny else {}))
    widths = (16 * np.random.default_rng(args.seed + 1).integers(10, 61, args.requests)).tolist()

    def feeds_of(i, w):
        rng = np.random.default_rng(i)
        return {"x": rng.standard_normal((1, 3, 48, w)).astype(np.float32)}

    return model.SerializeToString(), widths, feeds_of, "W"


CASES = {"bert": bert_case, "ocr": ocr_case}


def _executors(plan) -> list:
    """The executors inside a plan-cache value (a cpu plan is a list of segments, a gpu plan
    holds one executor)."""
    if hasattr(plan, "executor"):
        return [plan.executor]
    if isinstance(plan, (list, tuple)):
        return [e for item in plan for e in _executors(item)]
    return _executors(plan.segments) if hasattr(plan, "segments") else []


def _plan_items(prog) -> list | None:
    """[(key, plan)] of the executable's plan cache (None when it has none to read)."""
    plans = getattr(prog._executable, "_plans", None)
    if plans is None:
        return None
    inner = getattr(plans, "_plans", None)  # gpu: a PlanCache around an OrderedDict
    lock = getattr(plans, "_lock", None)
    if inner is not None and lock is not None:
        with lock:
            return list(inner.items())
    if hasattr(plans, "items"):
        return list(plans.items())
    return [(None, p) for p in plans.values()]


def new_plans(prog, seen: dict) -> int:
    """How many plans hold executors not seen before (they are kept in `seen`, so that their
    ids are not reused): plans built since the last call."""
    new = 0
    for _, plan in _plan_items(prog) or []:
        fresh = [e for e in _executors(plan) if id(e) not in seen]
        for e in fresh:
            seen[id(e)] = e
        new += bool(fresh)
    return new


def hit_overhead_us(prog, feeds: dict, runs: int) -> tuple[float, float] | None:
    """(median of the differences, difference of the minimums) of Program.run and the plan's
    executor run on the same arrays, µs, runs made in pairs, alternately in either order;
    None unless the plan of this shape is one executor taking the inputs (not a fallback
    plan)."""
    prog.run(feeds)
    arrays = [np.ascontiguousarray(feeds[n]) for n in prog.get_parameter_names()]
    shapes = tuple(a.shape for a in arrays)
    matching = [plan for key, plan in _plan_items(prog) or [] if key is None or key[0] == shapes]
    executors = _executors(matching[0]) if len(matching) == 1 else []
    if len(executors) != 1 or any(
        getattr(s, "ref_nodes", 0) for s in (matching[0] if isinstance(matching[0], list) else [])
    ):
        return None
    calls = (lambda: prog.run(feeds), lambda: executors[0].run(arrays))
    whole, inner = [], []
    for i in range(runs):
        times = [0.0, 0.0]
        for which in (0, 1) if i % 2 else (1, 0):
            start = time.perf_counter()
            calls[which]()
            times[which] = time.perf_counter() - start
        whole.append(times[0])
        inner.append(times[1])
    diffs = np.subtract(whole, inner)
    return float(np.median(diffs)) * 1e6, (min(whole) - min(inner)) * 1e6


def ort_session(data: bytes, target: str, threads: int):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    provider = "CPUExecutionProvider"
    if target == "gpu" and "CUDAExecutionProvider" in ort.get_available_providers():
        provider = "CUDAExecutionProvider"
    session = ort.InferenceSession(data, opts, providers=[provider])
    return (lambda feeds: session.run(None, feeds)), provider.replace("ExecutionProvider", "")


def matches(got, want) -> bool:
    return len(got) == len(want) and all(
        g.shape == w.shape
        and np.allclose(g, w, rtol=1e-3, atol=1e-4 * max(float(np.abs(w).max()), 1e-30))
        for g, w in zip(got, want)
    )


def timed(fn, feeds):
    start = time.perf_counter()
    out = fn(feeds)
    return time.perf_counter() - start, out


def measure(prog, compile_s: float, peer, shapes, feeds_of, args) -> dict:
    executors: dict = {}
    new_plans(prog, executors)
    seen: set = set()
    first_cost = None
    new_costs, cold_gk, cold_ort, warm_gk, warm_ort, wanted = [], [], [], [], [], []
    for i, s in enumerate(shapes):  # onnxruntime's stream first: the oracle of every run
        t, want = timed(peer, feeds_of(i, s))
        cold_ort.append(t)
        wanted.append(want)
    mismatches = checked = 0
    for i, s in enumerate(shapes):  # cold pass: plans built on first sight
        feeds = feeds_of(i, s)
        t, got = timed(prog.run, feeds)
        cold_gk.append(t)
        mismatches += not matches(got, wanted[i])
        checked += 1
        if s not in seen:
            seen.add(s)
            second = timed(prog.run, feeds)[0]
            hit = min(timed(prog.run, feeds)[0] for _ in range(3))
            if first_cost is None:
                first_cost = t - hit
            else:
                new_costs.append(t + second - 2 * hit)
        new_plans(prog, executors)
    rebuilds = 0
    for i, s in enumerate(shapes):  # warm pass: hits unless the plan cache evicted
        t, got = timed(prog.run, feeds_of(i, s))
        warm_gk.append(t)
        mismatches += not matches(got, wanted[i])
        checked += 1
        rebuilds += new_plans(prog, executors)
    for i, s in enumerate(shapes):
        warm_ort.append(timed(peer, feeds_of(i, s))[0])
    plan = prog.stats().get("plan", {})
    return {
        "distinct": len(seen),
        "compile": compile_s,
        "first": first_cost,
        "first_compile": compile_s + first_cost,
        "new_median": float(np.median(new_costs)) if new_costs else float("nan"),
        "new_max": max(new_costs) if new_costs else float("nan"),
        "overhead_us": hit_overhead_us(prog, feeds_of(0, min(shapes)), args.hit_runs),
        "cold_gk": cold_gk,
        "cold_ort": cold_ort,
        "warm_gk": warm_gk,
        "warm_ort": warm_ort,
        "mismatches": mismatches,
        "checked": checked,
        "rebuilds": rebuilds,
        "ref_nodes": plan.get("ref_nodes", 0),
        "plans": plan.get("plans"),
    }


def tiny_overhead_us(name: str, args, options: dict) -> float | None:
    """The hit overhead on the same model built tiny (executor time a few µs to tens of µs,
    so that the difference is not lost in its noise), at the stream's shortest shape."""
    import graphkiln

    data, shapes, feeds_of, _ = CASES[name](args, tiny=True)
    try:
        prog = graphkiln.parse_onnx_buffer(data, default_dim=None).compile(args.target, **options)
        return hit_overhead_us(prog, feeds_of(0, min(shapes)), args.hit_runs)
    except Exception as exc:  # noqa: BLE001 - the figure is "-", the model's run goes on
        print(f"tiny {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None


def compile_options(text: str) -> dict:
    options = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = item.partition("=")
        for cast in (int, float):
            try:
                value = cast(value)
                break
            except ValueError:
                pass
        else:
            value = {"True": True, "False": False, "None": None}.get(value, value)
        options[key.strip()] = value
    return options


def bench(name: str, args, threads: int) -> tuple[dict, list[str]]:
    import graphkiln

    data, shapes, feeds_of, dim = CASES[name](args)
    peer, provider = ort_session(data, args.target, threads)
    notes = []
    attempts = [{}] + ([{"fallback": "ref"}] if args.target == "cpu" else [])
    for extra in attempts:
        options = {**compile_options(args.compile_options), **extra}
        try:
            prog = graphkiln.parse_onnx_buffer(data, default_dim=None)
            inputs = ", ".join(f"{k}: {v}" for k, v in prog.get_parameter_shapes().items())
            start = time.perf_counter()
            prog.compile(args.target, **options)
            result = measure(prog, time.perf_counter() - start, peer, shapes, feeds_of, args)
            result["tiny_us"] = tiny_overhead_us(name, args, options)
        except Exception as exc:  # noqa: BLE001 - reported, then the fallback is tried
            text = " ".join(f"{type(exc).__name__}: {exc}".split())
            notes.append(f"{name} with {options or 'no options'}: {text[:400]}")
            continue
        mode = "fallback=ref" if extra else "native"
        if not extra and result["ref_nodes"]:
            mode = f"native, {result['ref_nodes']} ref nodes"
        result.update(
            name=name,
            mode=mode,
            provider=provider,
            dim=dim,
            inputs=inputs,
            cache_size=getattr(prog._executable, "plan_cache_size", None)
            or getattr(getattr(prog._executable, "_plans", None), "limit", "?"),
            lo=min(shapes),
            hi=max(shapes),
        )
        return result, notes
    return {"name": name, "mode": "error", "provider": provider, "dim": dim}, notes


def ms(x) -> str:
    return "-" if x is None or x != x else f"{x * 1e3:.2f}"


def tables(results: list[dict]) -> list[str]:
    lines = [
        "| model | mode | requests (distinct shapes) | compile() ms | first shape ms | "
        "first compile ms | new shape ms, median (max) | new / first | "
        "hit overhead µs: tiny (this model) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        if r["mode"] == "error":
            lines.append(f"| {r['name']} | error | - | - | - | - | - | - | - |")
            continue
        ratio = r["new_median"] / r["first_compile"]
        tiny, own = r["tiny_us"], r["overhead_us"]
        over = (
            f"{'-' if tiny is None else f'{tiny[0]:.1f}'} "
            f"({'-' if own is None else f'{own[1]:.1f}'})"
        )
        lines.append(
            f"| {r['name']} ({r['dim']} {r['lo']}..{r['hi']}) | {r['mode']} | "
            f"{len(r['cold_gk'])} ({r['distinct']}) | {ms(r['compile'])} | {ms(r['first'])} | "
            f"{ms(r['first_compile'])} | {ms(r['new_median'])} ({ms(r['new_max'])}) | "
            f"{ratio:.1%} | {over} |"
        )
    lines += [
        "",
        "| model | peer | warm median ms gk | ort | gk/ort | cold median ms gk | ort | "
        "cold total s gk | ort | warm-pass rebuilds | mismatches |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        if r["mode"] == "error":
            lines.append(f"| {r['name']} | {r['provider']} | - | - | - | - | - | - | - | - | - |")
            continue
        med = {k: float(np.median(r[k])) for k in ("warm_gk", "warm_ort", "cold_gk", "cold_ort")}
        lines.append(
            f"| {r['name']} | onnxruntime {r['provider']} | {ms(med['warm_gk'])} | "
            f"{ms(med['warm_ort'])} | {med['warm_gk'] / med['warm_ort']:.2f} | "
            f"{ms(med['cold_gk'])} | {ms(med['cold_ort'])} | {sum(r['cold_gk']):.2f} | "
            f"{sum(r['cold_ort']):.2f} | {r['rebuilds']} | {r['mismatches']} of {r['checked']} |"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--target", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--models", default="bert,ocr", help="comma-separated: bert, ocr")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--hit-runs", type=int, default=200, help="runs per shape of the hit-overhead measure"
    )
    parser.add_argument("--hidden", type=int, default=256, help="bert hidden size")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument(
        "--compile-options", default="", help="k=v,... passed to compile() (e.g. max_concurrency=1)"
    )
    parser.add_argument("--record", help="append the tables to this Markdown file")
    args = parser.parse_args()
    for name in args.models.split(","):
        if name.strip() not in CASES:
            parser.error(f"--models: unknown model {name.strip()!r}; accepted: {', '.join(CASES)}")
    try:
        import onnxruntime  # noqa: F401 - the peer and the oracle of every request
    except ImportError:
        parser.error(
            "onnxruntime is needed (the peer, and the outputs every request is "
            "checked against): pip install onnxruntime"
        )
    from graphkiln.targets.cpu.threads import num_threads, physical_cores

    # the cpu peer runs the same threads; on gpu a CPU peer (no onnxruntime-gpu) gets them all
    threads = num_threads() if args.target == "cpu" else physical_cores()
    header = [
        f"## {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"{platform.node()}, {os.cpu_count()} cpus, target {args.target}, "
        f"GRAPHKILN_NUM_THREADS={os.environ.get('GRAPHKILN_NUM_THREADS', '(default)')} "
        f"(onnxruntime intra_op_num_threads={threads})",
        "",
        "command: " + " ".join([os.path.basename(sys.executable)] + sys.argv),
        "",
    ]
    results, notes = [], []
    for name in args.models.split(","):
        result, model_notes = bench(name.strip(), args, threads)
        results.append(result)
        notes += model_notes
    body = tables(results) + [""]
    body += [
        f"- {r['name']} inputs as imported: {r['inputs']}; plans held at the end: "
        f"{r['plans']} (plan cache size {r['cache_size']})"
        for r in results
        if "inputs" in r
    ]
    body += [f"- failed: {n}" for n in notes]
    text = "\n".join(header + body) + "\n"
    print(text)
    if args.record:
        with open(args.record, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
