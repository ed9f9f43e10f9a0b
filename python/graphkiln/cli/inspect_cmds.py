# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Subcommands that look without running: read, params, ops, doctor."""

from __future__ import annotations

import sys

from ..ir import print_graph
from .common import (
    add_dim_args,
    add_model_args,
    add_target_arg,
    is_saved_program,
    load_program,
    parse_dims,
    resolve_target,
)


def setup_read(p):
    add_model_args(p)
    p.add_argument(
        "--full",
        action="store_true",
        help="print every constant's data (the text then parses back exactly)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the readable JSON form of the saved-program format instead "
        "(large tensors shortened unless --full)",
    )


def cmd_read(args) -> int:
    prog = load_program(args)
    if args.json:
        from ..serialize import to_json_text

        sys.stdout.write(to_json_text(prog, elide=not args.full))
        return 0
    graph = prog.graph
    if prog.compiled_graph is not None:  # a saved compiled program: show what runs
        graph = prog.compiled_graph
        print(
            f"# saved program compiled for {prog.target.name} with {prog.options}; "
            f"{len(prog.graph.nodes)} nodes as imported, {len(graph.nodes)} compiled"
        )
    sys.stdout.write(print_graph(graph, elide=not args.full))
    return 0


def setup_params(p):
    add_model_args(p)


def cmd_params(args) -> int:
    prog = load_program(args)
    print("inputs:")
    for name, t in prog.get_parameter_shapes().items():
        print(f"  {name}: {t}")
    print("outputs:")
    for name, t in zip(prog.get_output_names(), prog.get_output_shapes()):
        print(f"  {name}: {t}")
    return 0


def setup_ops(p):
    p.add_argument(
        "--model",
        metavar="MODEL.onnx",
        help="instead, list the model's ops (subgraphs included), each `ok` when "
        "graphkiln imports it and --target runs it natively, else `MISSING` "
        "with its domain, opset and what lacks it; exit 1 when one is missing",
    )
    add_target_arg(p)
    add_dim_args(p)


def cmd_ops(args) -> int:
    from ..frontends.onnx import MAX_OPSET, supported_ops

    table = supported_ops()
    if args.model:
        return _model_ops(args)
    print(f"ONNX ops graphkiln imports (default domain, opsets up to {MAX_OPSET}): {len(table)}")
    for op, since in table.items():
        print(f"  {op:<32} opset {since}-{MAX_OPSET}")
    return 0


def _model_ops(args) -> int:
    from ..errors import GraphkilnError
    from ..frontends.onnx.importer import import_model, read_model_file
    from ..targets import get_target
    from .ops_report import report

    if is_saved_program(args.model):
        raise SystemExit(
            f"graphkiln ops: --model {args.model} is a saved program; it takes an "
            "ONNX model (a saved program's ops: `graphkiln read FILE.gkp`)"
        )
    model, _ = read_model_file(args.model)
    try:
        graph = import_model(model, parse_dims(args.input_dim), args.default_dim)
    except GraphkilnError as exc:
        graph = exc
    lines, code = report(model, graph, get_target(resolve_target(args)), args.model)
    print("\n".join(lines))
    return code


def setup_doctor(p):
    pass


def cmd_doctor(args) -> int:
    from .doctor import run_doctor

    return run_doctor(args)
