# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`graphkiln tune`: measure the tunable kernels of a model and store the winners in the
tuning database; `--export FILE` / `--import FILE` move the database's rows between
machines (see graphkiln/tuning/README.md)."""

from __future__ import annotations

import os
import sys
import time

from .common import add_model_args, load_program, make_inputs


def setup_tune(p):
    add_model_args(p, optional=True)
    p.add_argument(
        "--target",
        default="cpu",
        help="target to tune for (default cpu; a target tunes only if it accepts "
        "the exhaustive_tune option)",
    )
    p.add_argument(
        "--db",
        metavar="FILE",
        help="tuning database (default: GRAPHKILN_TUNING_DB, else "
        "$XDG_CACHE_HOME/graphkiln/tuning.sqlite)",
    )
    p.add_argument(
        "--fallback",
        choices=["ref"],
        default=None,
        help="cpu only: run ops the cpu target lacks on ref (they are not tuned)",
    )
    p.add_argument(
        "--export", metavar="FILE.json", help="write the database's rows to FILE.json (no tuning)"
    )
    p.add_argument(
        "--import",
        dest="import_file",
        metavar="FILE.json",
        help="add the rows of FILE.json (from --export) to the database (no tuning)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


class ProgressBar:
    """A one-line progress bar on stderr: [#####.....] done/total name."""

    def __init__(self, stream=None, width: int = 30):
        self.stream, self.width = stream or sys.stderr, width
        self.start = time.perf_counter()
        self.tty = self.stream.isatty()
        self.last = -1

    def __call__(self, done: int, total: int, name: str) -> None:
        if total <= 0:
            return
        filled = self.width * done // total
        elapsed = time.perf_counter() - self.start
        line = (
            f"tuning [{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} "
            f"{elapsed:5.1f}s {name[:40]}"
        )
        if self.tty:
            self.stream.write("\r" + line.ljust(100))
            if done == total:
                self.stream.write("\n")
        elif done == total or done * 10 // total != self.last:  # a line per 10% in logs
            self.last = done * 10 // total
            self.stream.write(line + "\n")
        self.stream.flush()


def cmd_tune(args) -> int:
    from .. import tuning
    from ..tuning import cpu as cpu_tuning
    from ..tuning import gpu as gpu_tuning
    from ..tuning.db import TuningDB

    if args.db:
        os.environ["GRAPHKILN_TUNING_DB"] = args.db
    path = tuning.default_path()
    if args.export or args.import_file:
        if args.model:
            raise SystemExit("graphkiln tune: --export / --import take no model")
        db = TuningDB(path)
        if args.import_file:
            n = db.import_json(args.import_file)
            print(f"imported {n} rows from {args.import_file} into {path}")
        if args.export:
            n = db.export_json(args.export)
            print(f"exported {n} rows of {path} to {args.export}")
        return 0

    from ..targets.registry import get_target

    target = get_target(args.target)
    if "exhaustive_tune" not in target.options:
        raise SystemExit(f"graphkiln tune: the {args.target} target has no tunables yet")
    options = {"exhaustive_tune": True}
    if args.fallback:
        options["fallback"] = args.fallback
    prog = load_program(args)
    before = tuning.counters()
    if not args.no_progress:
        bar = ProgressBar()
        cpu_tuning.set_progress(bar)
        gpu_tuning.set_progress(bar)
    start = time.perf_counter()
    try:
        prog.compile(args.target, **options)
        prog.run(make_inputs(prog, {}, 0))  # makes the plans of dynamic-shape models too
    finally:
        cpu_tuning.set_progress(None)
        gpu_tuning.set_progress(None)
    after = tuning.counters()
    print(
        f"tuned {after['tuned'] - before['tuned']} kernels "
        f"({after['benchmarks'] - before['benchmarks']} candidates measured) in "
        f"{time.perf_counter() - start:.1f} s; database {path}"
    )
    return 0
