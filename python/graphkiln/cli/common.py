# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""What the subcommands share: loading the model (ONNX or a saved program), making inputs,
printing arrays."""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from ..ir import DType, SequenceType, TensorType
from ..program import Program

EXAMPLE_MODEL = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models", "example_cnn.onnx"
)


def add_model_args(parser: argparse.ArgumentParser, optional: bool = False) -> None:
    if optional:
        parser.add_argument(
            "model",
            nargs="?",
            default=None,
            help="ONNX model or saved program (.gkp, from `graphkiln compile "
            "-o`; default: the example CNN shipped with graphkiln)",
        )
    else:
        parser.add_argument("model", help="ONNX model file or saved program (.gkp)")
    add_dim_args(parser)


def add_dim_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input-dim",
        action="append",
        default=[],
        metavar="NAME=D0,D1,...",
        help="fix the shape of an input, e.g. --input-dim x=1,3,224,224",
    )
    parser.add_argument(
        "--default-dim",
        type=int,
        default=None,
        metavar="N",
        help="set the symbolic input dims --input-dim does not fix to N "
        "(default: they stay symbolic, and random inputs use 1 there)",
    )


def add_target_arg(parser: argparse.ArgumentParser) -> None:
    from ..targets.registry import registered_targets

    # every registered name: --target gpu on a build without GPU code says why it cannot run
    parser.add_argument(
        "--target",
        default=None,
        choices=registered_targets(),
        help="where to run: ref (numpy, the oracle) or cpu (the C++ core); "
        "default: cpu when graphkiln's C++ core loads, else ref",
    )


def resolve_target(args) -> str:
    """--target, or the default: cpu when the C++ core loads, else ref."""
    if getattr(args, "target", None):
        return args.target
    from ..targets.registry import default_target

    args.target = default_target()
    return args.target


def is_saved_program(path: str | None) -> bool:
    """Whether `path` is a program saved by graphkiln (told by its first bytes, whatever its
    name), not an ONNX model."""
    from ..serialize import is_saved_program as starts_like_saved

    return path is not None and starts_like_saved(path)


def load_program(args, given: dict | None = None, default_dim: int | None = None) -> Program:
    """The ONNX model imported, or the saved program loaded (compiled if it was saved so).
    `given` (input_files.read_inputs: the --input arrays) fixes the symbolic dims of the
    inputs it feeds that --input-dim does not; --default-dim (else `default_dim`) the
    others, which otherwise stay symbolic."""
    path = args.model or EXAMPLE_MODEL
    if is_saved_program(path):
        from ..serialize import load

        if args.input_dim:
            raise SystemExit(
                "graphkiln: --input-dim does not apply to a saved program: its "
                "shapes were fixed when it was imported"
            )
        return load(path)
    from ..frontends.onnx.importer import import_model, read_model_file
    from .input_files import input_shapes_from_arrays

    model, _ = read_model_file(path)
    shapes = input_shapes_from_arrays(model.graph, given or {}, parse_dims(args.input_dim))
    dim = args.default_dim if args.default_dim is not None else default_dim
    return Program(import_model(model, shapes, dim))


def describe_source(args, prog: Program, reused_compiled: bool) -> str:
    """How `run` / `perf` name what they ran."""
    if args.model is None:
        return "example CNN (shipped with graphkiln)"
    if reused_compiled:
        return f"{args.model} (saved program, compiled with {prog.options}, not recompiled)"
    return args.model


def parse_dims(items: list[str]) -> dict[str, list[int]]:
    shapes = {}
    for item in items:
        name, sep, dims = item.rpartition("=")
        if not sep or not name:
            raise SystemExit(f"graphkiln: --input-dim {item!r}: expected NAME=D0,D1,...")
        try:
            shapes[name] = [int(d) for d in dims.split(",")] if dims else []
        except ValueError:
            raise SystemExit(f"graphkiln: --input-dim {item!r}: dims must be integers") from None
    return shapes


def make_inputs(prog: Program, given: dict, seed: int, default_dim: int | None = None) -> dict:
    """Random inputs (seeded) for every parameter, replaced by the --input arrays `given`
    (input_files.read_inputs), each checked against its input's type. A symbolic dim takes
    its size from a given array that has the symbol, else `default_dim` (None: 1), and one
    line on stderr says which dims were set to what and how to choose them."""
    from .input_files import check_given

    unknown = sorted(set(given) - set(prog.get_parameter_names()))
    if unknown:
        raise SystemExit(
            f"graphkiln: --input names {unknown} "
            f"({', '.join(given[n].label for n in unknown)}), which are not "
            f"inputs; inputs: {prog.get_parameter_names()}"
        )
    types = prog.get_parameter_shapes()
    for name, g in given.items():
        check_given(name, g, types[name])
    sizes = _symbol_sizes(types, given, default_dim)
    rng = np.random.default_rng(seed)
    return {
        name: given[name].array if name in given else random_value(t, rng, sizes)
        for name, t in types.items()
    }


def _symbol_sizes(types: dict, given: dict, default_dim: int | None) -> dict[str, int]:
    """{symbol: size} for the random inputs: sizes the --input arrays give their symbols,
    then `default_dim` (None: 1) for the rest, reported in one line on stderr."""
    sizes: dict[str, int] = {}
    for name, g in given.items():
        t = types[name]
        if isinstance(t, TensorType) and t.dims is not None and g.array.ndim == len(t.dims):
            for d, n in zip(t.dims, g.array.shape):
                if isinstance(d, str):
                    sizes.setdefault(d, int(n))
    chosen: dict[str, list[str]] = {}
    value = 1 if default_dim is None else default_dim
    for name, t in types.items():
        while isinstance(t, SequenceType):
            t = t.elem
        if name in given or not isinstance(t, TensorType) or t.dims is None:
            continue
        for axis, d in enumerate(t.dims):
            if isinstance(d, str) and (d not in sizes or d in chosen):
                sizes[d] = value
                chosen.setdefault(d, []).append(f"{name}[{axis}]")
    if chosen:
        where = ", ".join(f"{d}={value} ({' '.join(at)})" for d, at in chosen.items())
        print(
            f"graphkiln: symbolic input dims set for the random inputs: {where}; choose "
            "them with --input-dim NAME=D0,D1,..., --default-dim N or --input NAME=FILE.npy",
            file=sys.stderr,
        )
    return sizes


def random_value(t, rng: np.random.Generator, sizes: dict[str, int] | None = None):
    """A random value of type `t`; symbolic dims take their size from `sizes`."""
    if isinstance(t, SequenceType):
        return [random_value(t.elem, rng, sizes)]
    if not isinstance(t, TensorType):
        raise SystemExit(f"graphkiln: cannot make a random input of type {t}")
    sizes = sizes or {}
    if t.dims is None or any(isinstance(d, str) and d not in sizes for d in t.dims):
        raise SystemExit(f"graphkiln: an input has dims {t}; fix them with --input-dim")
    shape = tuple(sizes[d] if isinstance(d, str) else d for d in t.dims)
    if t.dtype.is_float:
        return rng.standard_normal(shape).astype(t.dtype.numpy)
    if t.dtype is DType.bool:
        return rng.random(shape) < 0.5
    if t.dtype.is_int:
        # 0 or 1: integer inputs are mostly indices (token ids, token types, masks), and
        # those two are in range of any table
        return rng.integers(0, 2, shape).astype(t.dtype.numpy)
    if t.dtype is DType.str:
        return np.full(shape, "graphkiln", dtype=object)
    raise SystemExit(f"graphkiln: cannot make a random input of type {t}")


def describe_array(name: str, value) -> str:
    if isinstance(value, list):
        return f"{name}: sequence of {len(value)}"
    if value is None:
        return f"{name}: (empty optional)"
    a = np.asarray(value)
    head = f"{name}: {a.dtype} {list(a.shape)}"
    if a.size == 0 or a.dtype == object:
        return f"{head} {a.reshape(-1)[:6].tolist()}"
    flat = a.reshape(-1)
    stats = ""
    if a.dtype.kind in "fiu":
        f = flat.astype(np.float64)
        stats = f" min {f.min():.6g} max {f.max():.6g} mean {f.mean():.6g}"
    shown = np.array2string(flat[:8], precision=5, separator=", ")
    more = " ..." if flat.size > 8 else ""
    return f"{head}{stats}\n  {shown}{more}"
