# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""src/core/pointwise_ops.def is the only definition of the pointwise opcodes: the Python
table is read from the core, no source repeats the opcode list or an opcode's case, the
numbering only grows (saved plans store opcode numbers), every expression uses names the
gpu code generator defines, and the cpu interpreter, the generated gpu source (compiled as
host C++ here) and the emulator agree with the ref target on every direct opcode."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

from graphkiln._native import load_core
from graphkiln.targets.gpu import codegen
from graphkiln.targets.native.lower_pointwise import OP, OPCODES
from graphkiln.targets.native.pointwise_table import pointwise_table

ROOT = pathlib.Path(__file__).resolve().parents[3]

# the opcodes as saved plans number them (format versions up to 4): new ones go after these
SAVED_NUMBERING = (
    "Mov Const Add Sub Mul Div DivInt Pow ModFloor Fmod Max Min "
    "Neg Abs Exp Log Sqrt Recip Floor Ceil Round Sign Sin Cos Tan "
    "Asin Acos Atan Sinh Cosh Asinh Acosh Atanh Tanh Sigmoid Erf "
    "Relu LeakyRelu Elu Selu Celu HardSigmoid HardSwish Softplus Softsign "
    "Gelu GeluTanh Mish Swish ThresholdedRelu PRelu Shrink "
    "Equal Less LessEqual Greater GreaterEqual And Or Xor Not IsNaN IsInf "
    "Where ToF16 ToBF16 ToF32 ToInt ToBool MulAdd"
).split()


def test_python_opcodes_are_the_core_table():
    names = [row[0] for row in load_core().pointwise_ops()]
    assert list(OPCODES) == names
    assert all(OP[name] == index for index, name in enumerate(names))


def test_numbering_only_grows():
    assert list(OPCODES[: len(SAVED_NUMBERING)]) == SAVED_NUMBERING


def _sources():
    for pattern in (
        "src/**/*.cpp",
        "src/**/*.hpp",
        "src/**/*.hip",
        "src/**/*.inc",
        "python/**/*.py",
    ):
        yield from ROOT.glob(pattern)


def test_no_other_source_lists_the_opcodes():
    """No enum of opcodes, no hand-written `case kHardSwish:` and no Python list of the
    opcode names outside pointwise_ops.def (the macros expand it everywhere)."""
    hand_written = re.compile(r"case k(" + "|".join(OPCODES) + r")\s*:")
    offenders = []
    for path in _sources():
        text = path.read_text()
        rel = path.relative_to(ROOT)
        if "enum PwOp" in text and str(rel) != "src/core/pointwise_ops.hpp":
            offenders.append(f"{rel}: enum PwOp")
        # (other kernels have enums of their own: bitwise kAnd, scatter kAdd)
        if path.suffix != ".py" and "pointwise" in path.name and hand_written.search(text):
            offenders.append(f"{rel}: {hand_written.search(text).group(0)}")
        if path.suffix == ".py" and "LeakyRelu Elu Selu Celu" in text:
            offenders.append(f"{rel}: an opcode list")
    assert offenders == []


def test_every_expression_uses_known_names():
    for row in pointwise_table():
        text = codegen.expression_text(
            row.expression, dict.fromkeys(("a", "b", "c", "p0", "p1", "T"), "x")
        )
        assert "gk_" in text or "x" in text, row.name


def test_unknown_name_in_an_expression_is_refused():
    with pytest.raises(codegen.CodegenError, match="unknown name 'expf'"):
        codegen.expression_text("expf(a)", {"a": "x"})


def test_table_rows_are_consistent():
    for row in pointwise_table():
        assert 0 <= row.arity <= 3
        assert row.result in ("same", "exact", "bool")
        names = set(re.findall(r"\b(a|b|c)\b", row.expression))
        assert names <= set("abc"[: row.arity]), f"{row.name} reads more than {row.arity}"
        if row.attrs:
            assert row.ir_op, f"{row.name}: attributes without an IR op"


def test_direct_opcodes_reach_every_target_from_the_table():
    """What a new line of pointwise_ops.def gets without another edit: its IR op is a
    pointwise op of the schemas, the ref target has its kernel, and both native tables
    lower it (through lower_pointwise's tables derived from the .def)."""
    from graphkiln.ir.schema import get_schema
    from graphkiln.targets.cpu.table import LOWERINGS as CPU
    from graphkiln.targets.gpu.table import LOWERINGS as GPU
    from graphkiln.targets.ref.table import KERNELS

    for row in pointwise_table():
        if not row.ir_op:
            continue
        schema = get_schema(row.ir_op)
        assert "pointwise" in schema.traits, row.ir_op
        assert set(row.attrs) <= set(schema.attr_map), row.ir_op
        assert row.ir_op in KERNELS and row.ir_op in CPU and row.ir_op in GPU, row.ir_op


def test_emulator_models_every_opcode():
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "targets" / "gpu"))
    import plan_emulator

    rng = np.random.default_rng(0)
    a, b, c = (rng.uniform(0.1, 0.9, 8).astype(np.float32) for _ in range(3))
    for row in pointwise_table():
        p0, p1 = (
            (np.float32(8), np.float32(1))
            if row.name == "ToInt"
            else (np.float32(0.5), np.float32(0.25))
        )
        with np.errstate(all="ignore"):
            out = plan_emulator._apply(row.name, a, b, c, p0, p1, np.float32)
        assert np.asarray(out).shape in ((), (8,)), row.name
