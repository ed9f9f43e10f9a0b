#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Fuzz graphkiln.load_buffer: mutate saved programs and check that loading one either
succeeds or raises graphkiln.FormatError: any other exception counts as a crash.

    PYTHONPATH=python python tools/fuzz_load.py --iterations 10000 --seed 0
    PYTHONPATH=python python tools/fuzz_load.py --iterations 10000 --target cpu

Seeds: the example CNN (as imported, and compiled with optimize=True) and a model with an
If whose branches capture outer values, each saved as msgpack and as JSON; with --target
cpu, the example CNN compiled for cpu instead (its saved plan and packed weights too).
Mutations: byte level (truncation, bit flips, insertions, deletions, overwrites; the msgpack
document's CRC then rejects most of them) and structure level: the msgpack document or the
JSON object is
decoded, one field somewhere in it is changed (number, string, list or map edits, another
type) and the file is rebuilt with valid lengths and CRCs, so the checks behind the CRC run.
Exit status 1 when anything crashed.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sys
import traceback

import msgpack
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import graphkiln  # noqa: E402
from graphkiln.serialize import msgpack_container  # noqa: E402


def if_model_bytes() -> bytes:
    """y = If(cond, then: x + 1, else: x * [2, 3]) with x captured by both branches."""
    from onnx import TensorProto, helper

    def branch(name, op, values):
        const = helper.make_node(
            "Constant",
            [],
            [f"{name}_c"],
            value=helper.make_tensor(f"{name}_t", TensorProto.FLOAT, [len(values)], values),
        )
        node = helper.make_node(op, ["x", f"{name}_c"], [f"{name}_y"])
        out = helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, [2])
        return helper.make_graph([const, node], name, [], [out])

    node = helper.make_node(
        "If",
        ["cond"],
        ["y"],
        then_branch=branch("then", "Add", [1.0, 1.0]),
        else_branch=branch("else", "Mul", [2.0, 3.0]),
    )
    graph = helper.make_graph(
        [node],
        "if_model",
        [
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString()


def seed_files(target: str = "ref") -> list[tuple[str, bytes]]:
    from graphkiln.cli.common import EXAMPLE_MODEL

    if target == "cpu":
        programs = {"cnn_cpu": graphkiln.parse_onnx(EXAMPLE_MODEL).compile("cpu")}
    else:
        programs = {
            "cnn": graphkiln.parse_onnx(EXAMPLE_MODEL),
            "cnn_compiled": graphkiln.parse_onnx(EXAMPLE_MODEL).compile("ref", optimize=True),
            "if_compiled": graphkiln.parse_onnx_buffer(if_model_bytes()).compile("ref"),
        }
    for prog in programs.values():  # timings vary run to run; the seed files must not
        prog.compile_ms = 0.0
        for record in prog.pass_records:
            record.ms = 0.0
    return [
        (f"{name}.{fmt}", graphkiln.save_buffer(prog, fmt))
        for name, prog in programs.items()
        for fmt in ("msgpack", "json")
    ]


# -- byte-level mutations ------------------------------------------------------------------


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data))]


def flip_bits(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def insert_bytes(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.randbytes(rng.randint(1, 16)) + data[at:]


def delete_bytes(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data))
    return data[:at] + data[at + rng.randint(1, 64) :]


def overwrite_bytes(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data))
    chunk = rng.randbytes(rng.randint(1, 16))
    return data[:at] + chunk + data[at + len(chunk) :]


# -- structure-level mutations -------------------------------------------------------------

INTERESTING_INTS = [0, 1, -1, 2, 7, 63, 64, 255, 1 << 31, (1 << 63) - 1, -(1 << 63), (1 << 64) - 1]
INTERESTING_STRS = [
    "",
    "f32",
    "str",
    "bool",
    "i4",
    "tensor",
    "graph",
    "none",
    "ints",
    "Loop",
    "If",
    "Constant",
    "Fused",
    "NoSuchOp",
    "value",
    "x" * 300,
    "\udcff",
    "nan",
]


def containers(tree, found: list) -> list:
    """Every (parent, key) pair of the tree, depth first."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            found.append((tree, key))
            containers(value, found)
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            found.append((tree, index))
            containers(value, found)
    return found


def mutate_tree(tree, rng: random.Random) -> None:
    spots = containers(tree, [])
    if not spots:
        return
    parent, key = rng.choice(spots)
    value = parent[key]
    choice = rng.randrange(8)
    if isinstance(value, bool) or choice == 0:
        parent[key] = rng.choice([None, True, 1.5, "x", [], {}, b"\x00", [[[[]]]]])
    elif isinstance(value, int):
        parent[key] = rng.choice(
            [value + 1, value - 1, rng.choice(INTERESTING_INTS), rng.randint(-(1 << 40), 1 << 40)]
        )
    elif isinstance(value, float):
        parent[key] = rng.choice([float("nan"), -0.0, 1e308, value * 2, "inf"])
    elif isinstance(value, str):
        parent[key] = rng.choice(INTERESTING_STRS)
    elif isinstance(value, list):
        if value and choice < 4:
            del value[rng.randrange(len(value))]
        elif value and choice < 6:
            value.insert(rng.randrange(len(value) + 1), rng.choice(value))
        else:
            value.append(rng.choice([None, 0, "x", [], {}]))
    elif isinstance(value, dict):
        if value and choice < 5:
            del value[rng.choice(list(value))]
        else:
            value[rng.choice(["extra", "id", "name", "offset", "nbytes", "strings"])] = 0
    elif value is None:
        parent[key] = rng.choice([0, "x", [], {}])


def mutate_msgpack_document(data: bytes, rng: random.Random, byte_level: bool) -> bytes:
    document, section, _ = msgpack_container.split(data)
    document, section = bytes(document), bytes(section)
    if byte_level:  # damage the document itself, then fix the CRC: exercises msgpack decoding
        document = (
            rng.choice([flip_bits, insert_bytes, delete_bytes, truncate])(document, rng) or b"\x80"
        )
    else:
        tree = msgpack.unpackb(document, raw=False, unicode_errors="surrogatepass")
        for _ in range(rng.randint(1, 3)):
            mutate_tree(tree, rng)
        document = msgpack.packb(tree, use_bin_type=True, unicode_errors="surrogatepass")
    return b"".join(msgpack_container.seal(document, [section]))


def mutate_json_document(data: bytes, rng: random.Random) -> bytes:
    tree = json.loads(data)
    for _ in range(rng.randint(1, 3)):
        mutate_tree(tree, rng)
    return json.dumps(tree, default=lambda b: b.hex()).encode("utf-8", "surrogatepass")


BYTE_MUTATIONS = [truncate, flip_bits, insert_bytes, delete_bytes, overwrite_bytes]


def mutate(name: str, data: bytes, rng: random.Random) -> tuple[str, bytes]:
    if rng.random() < 0.4:
        fn = rng.choice(BYTE_MUTATIONS)
        return fn.__name__, fn(data, rng)
    if name.endswith(".json"):
        return "json_field", mutate_json_document(data, rng)
    if rng.random() < 0.25:
        return "msgpack_bytes_resealed", mutate_msgpack_document(data, rng, byte_level=True)
    return "msgpack_field", mutate_msgpack_document(data, rng, byte_level=False)


def run_fuzz(iterations: int, seed: int, report=print, target: str = "ref") -> dict:
    rng = random.Random(seed)
    seeds = seed_files(target) if target != "ref" else seed_files()
    outcomes: collections.Counter = collections.Counter()
    by_mutation: collections.Counter = collections.Counter()
    messages: set[str] = set()
    unexpected: set[str] = set()
    crashes: list[str] = []
    for i in range(iterations):
        name, data = seeds[i % len(seeds)]
        mutation, damaged = mutate(name, data, rng)
        by_mutation[mutation] += 1
        try:
            graphkiln.load_buffer(damaged)
            outcomes["loaded"] += 1
        except graphkiln.FormatError as exc:
            outcomes["FormatError"] += 1
            messages.add(str(exc))
            if exc.__cause__ is not None:  # the loader's catch-all wrapped an unexpected error
                outcomes["catch_all"] += 1
                unexpected.add(f"{type(exc.__cause__).__name__}: {str(exc.__cause__)[:120]}")
        except BaseException as exc:  # noqa: BLE001  the point: anything else is a crash
            outcomes["crash"] += 1
            crashes.append(
                f"iteration {i} ({name}, {mutation}): {type(exc).__name__}: {exc}\n"
                + traceback.format_exc(limit=6)
            )
    stats = {
        "executions": iterations,
        "loaded": outcomes["loaded"],
        "format_errors": outcomes["FormatError"],
        "distinct_messages": len(messages),
        "crashes": outcomes["crash"],
        "catch_all": outcomes["catch_all"],
        "by_mutation": dict(by_mutation),
        "crash_reports": crashes,
        "messages": messages,
    }
    report(f"seed files: {', '.join(f'{n} ({len(d)} bytes)' for n, d in seeds)}")
    report("mutations: " + ", ".join(f"{k} {v}" for k, v in sorted(by_mutation.items())))
    for text in crashes[:10]:
        report("CRASH " + text)
    report(f"executions: {iterations}")
    report(f"loaded without error: {stats['loaded']}")
    report(
        f"FormatError: {stats['format_errors']} ({stats['distinct_messages']} distinct messages)"
    )
    report(
        f"  of which from the loader's catch-all (an unexpected error, wrapped): "
        f"{stats['catch_all']}" + "".join(f"\n    {t}" for t in sorted(unexpected)[:10])
    )
    report(f"crashes (any other exception): {stats['crashes']}")
    report(
        f"summary: {iterations} executions, {stats['format_errors']} FormatError with "
        f"{stats['distinct_messages']} distinct messages, {stats['loaded']} loaded, "
        f"{stats['crashes']} crashes"
    )
    return stats


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--show-messages",
        type=int,
        default=12,
        metavar="N",
        help="print N sample FormatError messages (default 12)",
    )
    parser.add_argument(
        "--target",
        choices=("ref", "cpu"),
        default="ref",
        help="seed programs: ref (imported and compiled ones, default) or cpu "
        "(a compiled cpu program with its saved plan)",
    )
    args = parser.parse_args()
    np.seterr(all="ignore")
    stats = run_fuzz(args.iterations, args.seed, target=args.target)
    sample = sorted(stats["messages"])
    step = max(1, len(sample) // max(1, args.show_messages))
    for text in sample[::step][: args.show_messages]:
        print(f"  e.g. {text[:160]}")
    return 1 if stats["crashes"] else 0


if __name__ == "__main__":
    sys.exit(main())
