# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`graphkiln SUBCOMMAND ...`: import, compile, run and measure ONNX models."""

from __future__ import annotations

import argparse
import sys

from ..errors import GraphkilnError
from . import inspect_cmds, quantize_cmd, run_cmds, serve_cmd, triton_cmd, tune_cmd
from .messages import error_text

# name -> (setup(parser), run(args) -> exit code, one-line help)
COMMANDS = {
    "read": (inspect_cmds.setup_read, inspect_cmds.cmd_read, "print the model as graphkiln IR"),
    "params": (
        inspect_cmds.setup_params,
        inspect_cmds.cmd_params,
        "list inputs and outputs with their types",
    ),
    "compile": (run_cmds.setup_compile, run_cmds.cmd_compile, "compile the model for a target"),
    "run": (
        run_cmds.setup_run,
        run_cmds.cmd_run,
        "run once on random or given inputs; print the outputs",
    ),
    "perf": (run_cmds.setup_perf, run_cmds.cmd_perf, "measure latency percentiles and throughput"),
    "verify": (
        run_cmds.setup_verify,
        run_cmds.cmd_verify,
        "compare a target with ref; exit 1 on mismatch",
    ),
    "ops": (
        inspect_cmds.setup_ops,
        inspect_cmds.cmd_ops,
        "list the ONNX ops graphkiln imports; with --model, whether --target runs each "
        "op of the model",
    ),
    "tune": (
        tune_cmd.setup_tune,
        tune_cmd.cmd_tune,
        "measure kernel choices, store them in the tuning database; --export/--import",
    ),
    "quantize": (
        quantize_cmd.setup_quantize,
        quantize_cmd.cmd_quantize,
        "post-training static int8 quantization: write the QDQ model, its activation "
        "ranges calibrated on sample inputs (--int8 --calibrate DATA -o OUT.onnx)",
    ),
    "serve": (
        serve_cmd.setup_serve,
        serve_cmd.cmd_serve,
        "serve models over HTTP (the Open Inference Protocol v2 of KServe / Triton) "
        "with dynamic batching; --ray for Ray Serve",
    ),
    "export-triton": (
        triton_cmd.setup_export_triton,
        triton_cmd.cmd_export_triton,
        "write a Triton Inference Server model repository (Python backend) "
        "that runs the model with graphkiln",
    ),
    "doctor": (
        inspect_cmds.setup_doctor,
        inspect_cmds.cmd_doctor,
        "report versions, the C++ core and settings",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="graphkiln",
        description="graphkiln: import ONNX models, compile them for a target and run them. "
        "`run` and `perf` without a model use a small example CNN.",
        epilog="examples:\n  graphkiln run\n  graphkiln read model.onnx\n"
        "  graphkiln perf model.onnx --input-dim x=1,3,224,224 --runs 50\n"
        "  graphkiln verify model.onnx --target ref",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"graphkiln {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (setup, run, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        setup(p)
        p.set_defaults(run=run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return args.run(args)
    except GraphkilnError as exc:
        print(f"graphkiln {args.command}: {type(exc).__name__}: {error_text(exc)}", file=sys.stderr)
        return 1
    except (ValueError, TypeError, RuntimeError) as exc:  # bad input, or a kernel failing on it
        print(f"graphkiln {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
