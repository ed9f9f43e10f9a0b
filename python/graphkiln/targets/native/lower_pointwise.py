# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Pointwise ops -> the "Pointwise" kernel: a chain of pointwise IR nodes becomes a small
register program (src/cpu/pointwise_program.hpp) that the kernel runs over tiles of the
output, broadcasting its inputs (numpy rules) and reading / writing any layout. The opcodes,
and which IR ops map straight to one, come from src/core/pointwise_ops.def (through
pointwise_table.py); this module composes the others (Div, Pow, Mod, Clip, Where, Gelu,
Cast, the variadic Sum / Max / Min / Mean) and rounds each result to its IR dtype.

Values are computed in float, or in double when an f64 or a wide integer (i16/u16/i32/u32/
i64) value is involved, so integer results are exact (to 2**53). After each node the value
is rounded to its IR dtype (f16/bf16/f32 rounding, integer truncation and wrap-around), as
the ref target does node by node."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node, Value
from .lower import LoweringContext, LoweringError
from .lower_support import supports
from .plan import CHANNELS_LAST, PLAIN
from .pointwise_table import pointwise_table

OPCODE_TABLE = pointwise_table()  # src/core/pointwise_ops.def, through _core
OPCODES = tuple(row.name for row in OPCODE_TABLE)
OP = {name: index for index, name in enumerate(OPCODES)}

SUPPORTED_DTYPES = frozenset(
    {
        DType.f32,
        DType.f64,
        DType.f16,
        DType.bf16,
        DType.i8,
        DType.i16,
        DType.i32,
        DType.i64,
        DType.u8,
        DType.u16,
        DType.u32,
        DType.bool,
    }
)
_WIDE = frozenset({DType.f64, DType.i16, DType.u16, DType.i32, DType.u32, DType.i64})
_INT_BITS = {
    DType.i8: (8, 1),
    DType.i16: (16, 1),
    DType.i32: (32, 1),
    DType.i64: (64, 1),
    DType.u8: (8, 0),
    DType.u16: (16, 0),
    DType.u32: (32, 0),
}

# IR ops mapping straight to one opcode (the table's ir_op column): one input, with their
# attrs as the instruction's constants (IR attribute names), or two inputs
_DIRECT = [row for row in OPCODE_TABLE if row.ir_op]
_UNARY = {row.ir_op: row.name for row in _DIRECT if row.arity == 1 and not row.attrs}
_UNARY_ATTRS = {row.ir_op: (row.name, row.attrs) for row in _DIRECT if row.arity == 1 and row.attrs}
_BINARY = {row.ir_op: row.name for row in _DIRECT if row.arity == 2}
_VARIADIC = {"Sum": "Add", "Max": "Max", "Min": "Min", "Mean": "Add"}
_OTHER = {"Div", "Pow", "Mod", "Where", "Clip", "Gelu", "Cast"}
HANDLED = (
    frozenset(_UNARY) | frozenset(_UNARY_ATTRS) | frozenset(_BINARY) | frozenset(_VARIADIC) | _OTHER
)
# ops whose integer results need no truncation / wrap-around: the direct ones the table says
# are exact or give 0 / 1, and those composed of such opcodes here
_INT_EXACT = {row.ir_op for row in _DIRECT if row.result == "exact"} | {
    "Max",
    "Min",
    "Where",
    "Clip",
}
_INT_OUT_BOOL = {row.ir_op for row in _DIRECT if row.result == "bool"}


def _dtype(value: Value) -> DType | None:
    t = value.type
    return getattr(t, "dtype", None)


def node_supported(node: Node, ctx=None) -> bool:
    if node.op == "Constant":
        return True
    if node.op not in HANDLED:
        return False
    for v in (*node.inputs, *node.outputs):
        if v is not None and _dtype(v) not in SUPPORTED_DTYPES:
            return False
    if node.op == "Gelu" and node.attrs.get("approximate", "none") not in ("none", "tanh"):
        return False
    if node.op == "Cast" and node.attrs.get("to") not in SUPPORTED_DTYPES:
        return False
    if len(node.outputs) != 1:
        return False
    return True


def pointwise_supported(nodes) -> bool:
    """Every node's op and dtypes are handled by the Pointwise interpreter."""
    return all(node_supported(n) for n in nodes)


def _param(value, dtype: DType) -> float:
    """An attribute as the ref kernels use it: rounded to the computing float type."""
    if dtype in (DType.f64,) or dtype is None or dtype.is_int:
        return float(value)
    return float(np.float32(value))


class _Program:
    def __init__(self, num_inputs: int, compute_f64: bool):
        self.code: list[int] = []
        self.params: list[float] = []
        self.num_regs = num_inputs
        self.free: list[int] = []
        self.num_inputs = num_inputs
        self.f64 = compute_f64

    def alloc(self) -> int:
        if self.free:
            return self.free.pop()
        self.num_regs += 1
        return self.num_regs - 1

    def release(self, reg: int) -> None:
        if reg >= self.num_inputs and reg not in self.free:
            self.free.append(reg)

    def emit(
        self, op: str, a: int = -1, b: int = -1, c: int = -1, p0: float = 0.0, p1: float = 0.0
    ) -> int:
        dst = self.alloc()
        self.code += [OP[op], dst, a, b, c]
        self.params += [float(p0), float(p1)]
        return dst

    def replace(self, reg: int, op: str, *args, **kwargs) -> int:
        """emit, then release `reg` (a temporary the new instruction consumed)."""
        out = self.emit(op, *args, **kwargs)
        self.release(reg)
        return out


def _only_cast_to_f32(value: Value, nodes) -> bool:
    """Every reader of `value` among `nodes` is a Cast to float32: loading an integer input
    into a float register rounds it as that Cast does, so the input needs no double
    precision (an int32 GEMM result scaled in float32: dynamic quantization's epilogue)."""
    readers = [n for n in nodes if any(v is value for v in n.inputs)]
    return bool(readers) and all(n.op == "Cast" and n.attrs.get("to") == DType.f32 for n in readers)


def emit_pointwise(
    ctx: LoweringContext, nodes, bindings: dict, result: Value, out_slot: int, name: str
) -> None:
    """Emit ONE "Pointwise" step computing IR value `result` from `nodes` (pointwise IR nodes
    in order; Constant nodes allowed among them); every value read by `nodes` and not
    produced by them is either a key of `bindings` (IR Value -> slot id already holding it)
    or a constant (value.constant is not None -> use ctx.constant / ctx.slot_of). The output
    goes to slot `out_slot` (which may be channels-last: strides in ctx.slot(out_slot))."""
    nodes = [n for n in nodes if n.op != "Constant"]
    for n in nodes:
        if not node_supported(n):
            raise LoweringError(
                f"the Pointwise kernel cannot run {n.op} (node {n.name!r}) "
                "with these types or attributes"
            )
    produced = {v for n in nodes for v in n.outputs if v is not None}
    # inputs: slots in first-use order; small constants become Const instructions
    input_slots: list[int] = []
    slot_reg: dict[int, int] = {}
    external: dict[Value, object] = {}  # value -> input slot or ("const", scalar)
    dtypes: set = set()
    uses: dict[Value, int] = {}
    for n in nodes:
        for v in n.inputs:
            if v is None:
                continue
            uses[v] = uses.get(v, 0) + 1
            if v in produced or v in external:
                continue
            if v in bindings:
                slot = bindings[v]
            elif v.constant is not None:
                data = np.asarray(v.constant)
                if data.size == 1:
                    external[v] = ("const", data.reshape(-1)[0])
                    dtypes.add(_dtype(v))
                    continue
                slot = ctx.slot_of(v)
            else:
                raise LoweringError(f"emit_pointwise: {v.name!r} is neither bound nor constant")
            external[v] = slot
            if not _only_cast_to_f32(v, nodes):
                dtypes.add(ctx.slot(slot).dtype)
            if slot not in slot_reg:
                slot_reg[slot] = len(input_slots)
                input_slots.append(slot)
    for n in nodes:
        for v in n.outputs:
            if v is not None:
                dtypes.add(_dtype(v))
    dtypes.add(ctx.slot(out_slot).dtype)
    if result not in produced and result not in external:
        if result in bindings:
            external[result] = bindings[result]
        else:
            raise LoweringError(f"emit_pointwise: result {result.name!r} is not computed")
    prog = _Program(len(input_slots), bool(dtypes & _WIDE))
    regs: dict[Value, int] = {}
    uses[result] = uses.get(result, 0) + 1

    def reg_of(v: Value) -> int:
        if v in regs:
            return regs[v]
        source = external[v]
        if isinstance(source, tuple):
            regs[v] = prog.emit("Const", p0=float(source[1]))
        elif source in slot_reg:
            regs[v] = slot_reg[source]
        else:
            raise LoweringError(f"emit_pointwise: {v.name!r} has no register")
        return regs[v]

    def consumed(v: Value) -> None:
        uses[v] -= 1
        if uses[v] == 0 and v in regs:
            prog.release(regs[v])

    for n in nodes:
        out = _lower_node(prog, n, [None if v is None else reg_of(v) for v in n.inputs])
        out = _round_to(prog, n, out, _dtype(n.outputs[0]))
        regs[n.outputs[0]] = out
        uses.setdefault(n.outputs[0], 0)
        for v in n.inputs:
            if v is not None:
                consumed(v)
        if uses[n.outputs[0]] == 0:
            prog.release(out)
    final = reg_of(result)
    if final < prog.num_inputs:
        final = prog.emit("Mov", final)
    ctx.emit(
        "Pointwise",
        input_slots,
        [out_slot],
        {
            "program": list(prog.code),
            "params": list(prog.params),
            "num_regs": prog.num_regs,
            "result": final,
            "compute": "f64" if prog.f64 else "f32",
        },
        name,
    )


def _round_to(prog: _Program, node: Node, reg: int, dtype: DType) -> int:
    """Round a node's result to its IR dtype."""
    if node.op == "Cast":
        return reg  # _cast did it
    if dtype in (DType.f32,) and prog.f64:
        return prog.replace(reg, "ToF32", reg)
    if dtype is DType.f16:
        return prog.replace(reg, "ToF16", reg)
    if dtype is DType.bf16:
        return prog.replace(reg, "ToBF16", reg)
    if dtype in _INT_BITS and node.op not in _INT_EXACT and node.op not in _INT_OUT_BOOL:
        if dtype is DType.i64 and node.op in ("Add", "Sub", "Mul", "Neg", "Abs", "Sum"):
            return reg
        bits, signed = _INT_BITS[dtype]
        return prog.replace(reg, "ToInt", reg, p0=bits, p1=signed)
    return reg


def _cast(prog: _Program, reg: int, source: DType, to: DType) -> int:
    if to is DType.bool:
        return prog.emit("ToBool", reg)
    if to in _INT_BITS:
        if source in _INT_BITS or source is DType.bool:
            if source is to or (source is DType.bool) or _fits(source, to):
                return prog.emit("Mov", reg)
        bits, signed = _INT_BITS[to]
        return prog.emit("ToInt", reg, p0=bits, p1=signed)
    if to is DType.f16:
        return prog.emit("ToF16", reg)
    if to is DType.bf16:
        return prog.emit("ToBF16", reg)
    if to is DType.f32 and prog.f64:
        return prog.emit("ToF32", reg)
    return prog.emit("Mov", reg)


def _fits(source: DType, to: DType) -> bool:
    """Every value of integer type `source` is a value of `to`."""
    info_s, info_t = np.iinfo(source.numpy), np.iinfo(to.numpy)
    return info_t.min <= info_s.min and info_s.max <= info_t.max


def _lower_node(prog: _Program, node: Node, r: list) -> int:
    op = node.op
    x_dtype = _dtype(node.inputs[0]) if node.inputs and node.inputs[0] is not None else None
    out_dtype = _dtype(node.outputs[0])
    if op in _UNARY:
        return prog.emit(_UNARY[op], r[0])
    if op in _UNARY_ATTRS:
        code, names = _UNARY_ATTRS[op]
        params = [_param(node.attrs[k], x_dtype) for k in names]
        return prog.emit(code, r[0], -1, -1, *params)
    if op in _BINARY:
        return prog.emit(_BINARY[op], r[0], r[1])
    if op in _VARIADIC:
        present = [x for x in r if x is not None]
        acc = present[0]
        if len(present) == 1:
            acc = prog.emit("Mov", acc)
        for index, other in enumerate(present[1:]):
            new = prog.emit(_VARIADIC[op], acc, other)
            if index > 0:
                prog.release(acc)
            acc = new
        if op == "Mean":
            count = prog.emit("Const", p0=float(len(present)))
            new = prog.emit("DivInt" if out_dtype in _INT_BITS else "Div", acc, count)
            prog.release(count)
            prog.release(acc)
            acc = new
        return acc
    if op == "Div":
        return prog.emit("DivInt" if out_dtype in _INT_BITS else "Div", r[0], r[1])
    if op == "Pow":
        exponent = node.inputs[1].constant
        if exponent is not None and np.asarray(exponent).size == 1 and out_dtype.is_float:
            if float(np.asarray(exponent).reshape(-1)[0]) == 2.0:  # x * x is exact, pow is slow
                return prog.emit("Mul", r[0], r[0])
        return prog.emit("Pow", r[0], r[1])
    if op == "Mod":
        return prog.emit("Fmod" if node.attrs.get("fmod", 0) else "ModFloor", r[0], r[1])
    if op == "Where":
        return prog.emit("Where", r[0], r[1], r[2])
    if op == "Clip":
        acc = r[0]
        if len(r) > 1 and r[1] is not None:
            acc = prog.emit("Max", acc, r[1])
        if len(r) > 2 and r[2] is not None:
            new = prog.emit("Min", acc, r[2])
            if acc != r[0]:
                prog.release(acc)
            acc = new
        if acc == r[0]:
            acc = prog.emit("Mov", acc)
        return acc
    if op == "Gelu":
        return prog.emit("GeluTanh" if node.attrs.get("approximate") == "tanh" else "Gelu", r[0])
    if op == "Cast":
        return _cast(prog, r[0], x_dtype, node.attrs["to"])
    raise LoweringError(f"no pointwise lowering for {op}")


# -- lowerings -------------------------------------------------------------------------------

_LAYOUTS = (PLAIN, CHANNELS_LAST)


@supports(node_supported)
def lower_pointwise_op(node: Node, ctx: LoweringContext) -> None:
    bindings = {
        v: ctx.input(v, layouts=_LAYOUTS)
        for v in node.inputs
        if v is not None and v.constant is None
    }
    out = ctx.output(node.outputs[0], layouts=_LAYOUTS)
    emit_pointwise(ctx, [node], bindings, node.outputs[0], out, node.name)


def fused_pointwise_supported(node: Node) -> bool:
    return pointwise_supported(node.attrs["body"].nodes)


def lower_fused_pointwise(node: Node, ctx: LoweringContext) -> None:
    body = node.attrs["body"]
    bindings = {
        inner: ctx.input(outer, layouts=_LAYOUTS) for inner, outer in zip(body.inputs, node.inputs)
    }
    out = ctx.output(node.outputs[0], layouts=_LAYOUTS)
    emit_pointwise(ctx, body.nodes, bindings, body.outputs[0], out, node.name)


# Cast: lower_cast.py (it sends the native casts back to lower_pointwise_op)
LOWERINGS = {op: lower_pointwise_op for op in sorted(HANDLED) if op != "Cast"}
