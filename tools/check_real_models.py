# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Run the exported real models on a graphkiln target; compare with onnxruntime's outputs.

Needs only numpy and graphkiln; the models come from tools/export_real_models.py:

    PYTHONPATH=python python tools/check_real_models.py                     # all, target ref
    PYTHONPATH=python python tools/check_real_models.py --models resnet50,bert --target ref
    PYTHONPATH=python python tools/check_real_models.py --record results.md  # also a table
    PYTHONPATH=python python tools/check_real_models.py --option optimize=true  # compile options

For every NAME.onnx with NAME.npz in --dir: parse_onnx, compile(target), run on the saved
feeds and compare each output with the recorded onnxruntime output. Per output, with
scale = max|expected|:
    max abs error  = max |got - expected|
    max rel error  = max |got - expected| / (|expected| + 1e-6 * scale)   (reported only)
    pass           = dtypes and shapes equal, NaN/inf in the same places, and for every element
                     |got - expected| <= rtol * |expected| + rtol * scale, with rtol = 1e-4
                     (np.allclose(got, expected, rtol=1e-4, atol=1e-4 * scale));
                     integer and bool outputs must be equal.
    tol used       = max |got - expected| / (rtol * |expected| + rtol * scale): pass iff <= 1.
"load s" is parse_onnx + compile; "run s" is the wall time of one run() (the fastest of
--repeat runs). Exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
import traceback

import numpy as np

import graphkiln


def compare(got, expected: np.ndarray, rtol: float) -> tuple[bool, float, float, float, str]:
    """Return (ok, max_abs, max_rel, tol_used, note) for one output."""
    got = np.asarray(got)
    nan = float("nan")
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return (
            False,
            nan,
            nan,
            nan,
            (f"got {got.dtype}{list(got.shape)}, expected {expected.dtype}{list(expected.shape)}"),
        )
    if expected.dtype.kind in "biu":
        bad = int(np.count_nonzero(got != expected))
        diff = float(np.max(np.abs(got.astype(np.float64) - expected))) if got.size else 0.0
        return bad == 0, diff, diff, float(bad > 0), f"{bad} elements differ" if bad else ""
    got64, exp64 = got.astype(np.float64), expected.astype(np.float64)
    finite = np.isfinite(exp64)
    if not np.array_equal(got64[~finite], exp64[~finite], equal_nan=True) or not np.all(
        np.isfinite(got64[finite])
    ):
        return False, nan, nan, nan, "NaN/inf differ"
    err = np.abs(got64[finite] - exp64[finite])
    ref = np.abs(exp64)[finite]
    if err.size == 0:
        return True, 0.0, 0.0, 0.0, ""
    scale = float(ref.max())
    max_abs = float(err.max())
    max_rel = float((err / (ref + 1e-6 * scale + np.finfo(np.float64).tiny)).max())
    allowed = rtol * ref + rtol * scale
    ok = bool(np.all(err <= allowed))
    tol_used = float((err / np.maximum(allowed, np.finfo(np.float64).tiny)).max())
    note = "" if ok else f"{int(np.count_nonzero(err > allowed))} of {err.size} elements off"
    return ok, max_abs, max_rel, tol_used, note


def parse_option(text: str) -> tuple[str, object]:
    """KEY=VALUE; VALUE is read as JSON (true, 3, "x") or else kept as a string."""
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def check(
    name: str, folder: str, target: str, options: dict, rtol: float, repeat: int, verbose: bool
) -> dict:
    """Check one model; the row has model, status, the errors, load_s, run_s and detail."""
    nan = float("nan")
    row = {
        "model": name,
        "status": "FAIL",
        "max_abs": nan,
        "max_rel": nan,
        "tol_used": nan,
        "load_s": nan,
        "run_s": nan,
        "detail": "",
    }
    data = np.load(os.path.join(folder, f"{name}.npz"))
    feeds = {k[len("input:") :]: data[k] for k in data.files if k.startswith("input:")}
    expected = [data[f"output:{n}"] for n in data["output_names"]]
    try:
        start = time.perf_counter()
        program = graphkiln.parse_onnx(os.path.join(folder, f"{name}.onnx"))
        program.compile(target, **options)
        row["load_s"] = time.perf_counter() - start
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            outputs = program.run(feeds)
            times.append(time.perf_counter() - start)
        row["run_s"] = min(times)
    except Exception as exc:  # noqa: BLE001 - a failing model is a result, not a crash
        if verbose:
            traceback.print_exc()
        last = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{os.path.basename(last.filename)}:{last.lineno}"
        row["detail"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]} ({where})"
        return row
    if len(outputs) != len(expected):
        row["detail"] = f"{len(outputs)} outputs, expected {len(expected)}"
        return row
    results = [
        (n, *compare(got, exp, rtol))
        for n, got, exp in zip(data["output_names"], outputs, expected)
    ]
    row["max_abs"] = float(np.max([r[2] for r in results]))  # nan if any output is nan
    row["max_rel"] = float(np.max([r[3] for r in results]))
    row["tol_used"] = float(np.max([r[4] for r in results]))
    row["status"] = "PASS" if all(r[1] for r in results) else "FAIL"
    row["detail"] = "; ".join(f"{r[0]}: {r[5]}" for r in results if not r[1])
    return row


def fmt(value: float, spec: str) -> str:
    return "-" if value != value else format(value, spec)


def table(rows: list[dict], target: str, options: dict, rtol: float) -> str:
    lines = [
        f"Target `{target}` {json.dumps(options)}, "
        f"pass = np.allclose(rtol={rtol:g}, atol={rtol:g}*max|expected|) "
        "against onnxruntime CPU.",
        "",
        "| model | result | max abs err | max rel err | tol used | load s | run s | detail |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        detail = r["detail"].replace("|", "\\|")
        lines.append(
            f"| {r['model']} | {r['status']} | {fmt(r['max_abs'], '.3g')} "
            f"| {fmt(r['max_rel'], '.3g')} | {fmt(r['tol_used'], '.3g')} "
            f"| {fmt(r['load_s'], '.2f')} "
            f"| {fmt(r['run_s'], '.3f')} | {detail} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--dir", default="/work/models", help="exported models (default %(default)s)"
    )
    parser.add_argument(
        "--models", default="", help="comma-separated names (default: all in --dir)"
    )
    parser.add_argument("--target", default="ref")
    parser.add_argument(
        "--option",
        action="append",
        type=parse_option,
        default=[],
        metavar="KEY=VALUE",
        help="compile option, repeatable",
    )
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per model; the fastest is shown"
    )
    parser.add_argument("--record", help="write a markdown table of the results to this file")
    parser.add_argument("-v", "--verbose", action="store_true", help="print tracebacks")
    args = parser.parse_args()

    found = sorted(
        os.path.basename(p)[:-5]
        for p in glob.glob(os.path.join(args.dir, "*.onnx"))
        if os.path.exists(p[:-5] + ".npz")
    )
    names = [m for m in args.models.split(",") if m] or found
    missing = [m for m in names if m not in found]
    if missing:
        parser.error(f"not in {args.dir}: {', '.join(missing)}; found: {', '.join(found)}")
    rows = []
    for name in names:
        print(f"{name:22s} ...", end=" ", flush=True)
        row = check(
            name,
            args.dir,
            args.target,
            dict(args.option),
            args.rtol,
            max(1, args.repeat),
            args.verbose,
        )
        rows.append(row)
        print(
            f"{row['status']}  max_abs={fmt(row['max_abs'], '.3g')} "
            f"max_rel={fmt(row['max_rel'], '.3g')} tol_used={fmt(row['tol_used'], '.3g')} "
            f"load={fmt(row['load_s'], '.2f')}s "
            f"run={fmt(row['run_s'], '.3f')}s  {row['detail']}",
            flush=True,
        )
    failed = [r["model"] for r in rows if r["status"] != "PASS"]
    print(f"{len(rows) - len(failed)} passed, {len(failed)} failed")
    if args.record:
        with open(args.record, "w") as f:
            f.write(table(rows, args.target, dict(args.option), args.rtol))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
