# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Subcommands that look without running: read, params, ops, doctor."""

from __future__ import annotations

import sys

from ..ir import print_graph
from .common import add_model_args, load_program


def setup_read(p):
    add_model_args(p)
    p.add_argument("--full", action="store_true",
                   help="print every constant's data (the text then parses back exactly)")
    p.add_argument("--json", action="store_true",
                   help="print the readable JSON form of the saved-program format instead "
                        "(large tensors shortened unless --full)")


def cmd_read(args) -> int:
    prog = load_program(args)
    if args.json:
        from ..serialize import to_json_text

        sys.stdout.write(to_json_text(prog, elide=not args.full))
        return 0
    graph = prog.graph
    if prog.compiled_graph is not None:  # a saved compiled program: show what runs
        graph = prog.compiled_graph
        print(f"# saved program compiled for {prog.target.name} with {prog.options}; "
              f"{len(prog.graph.nodes)} nodes as imported, {len(graph.nodes)} compiled")
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
    p.add_argument("--model", help="instead, list the model's ops and whether each is supported")


def cmd_ops(args) -> int:
    from ..frontends.onnx import MAX_OPSET, supported_ops

    table = supported_ops()
    if args.model:
        from ..frontends.onnx.importer import read_model_file

        model, _ = read_model_file(args.model)
        counts: dict[str, int] = {}
        for node in model.graph.node:
            counts[node.op_type] = counts.get(node.op_type, 0) + 1
        missing = 0
        for op, n in sorted(counts.items()):
            ok = op in table
            missing += not ok
            print(f"{'ok     ' if ok else 'MISSING'} {op} x{n}")
        return 1 if missing else 0
    print(f"ONNX ops graphkiln imports (default domain, opsets up to {MAX_OPSET}): {len(table)}")
    for op, since in table.items():
        print(f"  {op:<32} opset {since}-{MAX_OPSET}")
    return 0


def setup_doctor(p):
    pass


def cmd_doctor(args) -> int:
    from .doctor import run_doctor

    return run_doctor(args)
