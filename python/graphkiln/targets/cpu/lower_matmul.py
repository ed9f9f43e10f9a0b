# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Lowerings of matrix products: MatMul and Gemm (one oneDNN matmul kernel "MatMul"), the
Fused nodes of kind gemm / matmul (the epilogue as oneDNN post-ops, what is left of it on
the pointwise kernel), and Attention (kernel "Attention").

The "MatMul" kernel sees the problem as oneDNN does: equal-rank views of A, B and Y with
batch broadcast as dims of 1 and transposes as strides. A 3-D (or higher) A times a 2-D B
is one 2-D product (rows of all batches at once) when the epilogue operands allow it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...ir import DType, Node, Value
from ..native.lower import LoweringContext, LoweringError, static_dims
from ..native.lower_pointwise import emit_pointwise, node_supported
from ..native.lower_support import supports

_F32_MAX = 3.4028234663852886e38


# -- operands and views ----------------------------------------------------------------------


@dataclass
class _Operand:
    """A tensor an epilogue or anchor reads: a value of the outer graph and/or constant data."""

    value: Value | None = None
    data: np.ndarray | None = None

    @property
    def dims(self) -> tuple[int, ...]:
        if self.data is not None:
            return tuple(self.data.shape)
        return static_dims(self.value)

    @property
    def dtype(self) -> DType:
        if self.value is not None:
            return self.value.type.dtype
        return DType.from_numpy(self.data.dtype)

    @property
    def constant(self) -> np.ndarray | None:
        if self.data is not None:
            return self.data
        if self.value is not None and self.value.constant is not None:
            return np.asarray(self.value.constant)
        return None

    def slot(self, ctx: LoweringContext) -> int:
        if self.value is not None:
            return ctx.input(self.value)
        return ctx.constant(np.ascontiguousarray(self.data))


def _row_major(dims) -> list[int]:
    strides, step = [0] * len(dims), 1
    for i in reversed(range(len(dims))):
        strides[i] = step
        step *= max(int(dims[i]), 1)
    return strides


@dataclass
class _Views:
    """oneDNN's view of one product: dims/strides of A, B and Y (one rank), and for each
    view axis of Y the axes of the logical output it merges (empty: an inserted 1)."""

    a_dims: list
    a_strides: list
    b_dims: list
    b_strides: list
    y_dims: list
    groups: list
    y_logical: tuple

    def operand_dims(self, dims) -> list | None:
        """`dims` (broadcastable to the logical output) as dims of the view, or None when
        a merged group is only partly broadcast."""
        rank = len(self.y_logical)
        if len(dims) > rank:
            return None
        padded = (1,) * (rank - len(dims)) + tuple(dims)
        if any(d != 1 and d != y for d, y in zip(padded, self.y_logical)):
            return None
        out = []
        for group in self.groups:
            sizes = [padded[i] for i in group]
            full = [self.y_logical[i] for i in group]
            if all(s == 1 for s in sizes):
                out.append(1)
            elif sizes == full:
                out.append(int(np.prod(sizes, dtype=np.int64)))
            else:
                return None
        return out

    def attrs(self) -> dict:
        return {
            "a_dims": self.a_dims,
            "a_strides": self.a_strides,
            "b_dims": self.b_dims,
            "b_strides": self.b_strides,
            "y_dims": self.y_dims,
            "y_strides": _row_major(self.y_dims),
        }


def _broadcast(a, b) -> tuple:
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    return tuple(x if y == 1 else y for x, y in zip(a, b))


def _matmul_views(a_dims, b_dims, collapse: bool) -> _Views:
    """numpy matmul of plain A (a_dims) and B (b_dims)."""
    a2 = tuple(a_dims) if len(a_dims) >= 2 else (1,) + tuple(a_dims)
    b2 = tuple(b_dims) if len(b_dims) >= 2 else tuple(b_dims) + (1,)
    batch = _broadcast(a2[:-2], b2[:-2])
    nb = len(batch)
    axis = nb
    m_axis = n_axis = None
    if len(a_dims) >= 2:
        m_axis, axis = axis, axis + 1
    if len(b_dims) >= 2:
        n_axis = axis
    y_logical = (
        batch
        + ((a2[-2],) if m_axis is not None else ())
        + ((b2[-1],) if n_axis is not None else ())
    )
    m_group = [m_axis] if m_axis is not None else []
    n_group = [n_axis] if n_axis is not None else []
    if collapse and len(b2) == 2 and len(a2) > 2:
        rows = int(np.prod(a2[:-1], dtype=np.int64))
        a_v, b_v = [rows, a2[-1]], list(b2)
        y_v = [rows, b2[-1]]
        groups = [list(range(nb)) + m_group, n_group]
    else:
        rank = nb + 2
        a_v = [1] * (rank - len(a2)) + list(a2)
        b_v = [1] * (rank - len(b2)) + list(b2)
        y_v = list(batch) + [a2[-2], b2[-1]]
        groups = [[i] for i in range(nb)] + [m_group, n_group]
    return _Views(a_v, _row_major(a_v), b_v, _row_major(b_v), y_v, groups, y_logical)


def _gemm_views(a_dims, b_dims, trans_a: bool, trans_b: bool) -> _Views:
    m, k = (a_dims[1], a_dims[0]) if trans_a else tuple(a_dims)
    n = b_dims[0] if trans_b else b_dims[1]
    a_strides = [1, a_dims[1]] if trans_a else [a_dims[1], 1]
    b_strides = [1, b_dims[1]] if trans_b else [b_dims[1], 1]
    return _Views([m, k], a_strides, [k, n], b_strides, [m, n], [[0], [1]], (m, n))


# -- the epilogue ----------------------------------------------------------------------------

_UNARY = {
    "Relu": ("relu", 0.0, 0.0),
    "Sigmoid": ("logistic", 0.0, 0.0),
    "Tanh": ("tanh", 0.0, 0.0),
    "Exp": ("exp", 0.0, 0.0),
    "Abs": ("abs", 0.0, 0.0),
    "Sqrt": ("sqrt", 0.0, 0.0),
    "Log": ("log", 0.0, 0.0),
    "HardSwish": ("hardswish", 1.0 / 6.0, 0.5),
    "Softplus": ("soft_relu", 1.0, 0.0),
    "Mish": ("mish", 0.0, 0.0),
    "Neg": ("linear", -1.0, 0.0),
}
_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Max": "max", "Min": "min"}


def _scalar(operand: _Operand | None) -> float | None:
    if operand is None:
        return None
    data = operand.constant
    if data is None or data.size != 1:
        return None
    return float(np.asarray(data, np.float64).reshape(()))


def _eltwise(node: Node, resolve) -> tuple | None:
    """(name, alpha, beta) of the eltwise post-op computing `node` from its first input."""
    op, a = node.op, node.attrs
    if op in _UNARY:
        return _UNARY[op]
    if op == "LeakyRelu":
        return ("relu", float(a.get("alpha", 0.01)), 0.0)
    if op == "Elu":
        return ("elu", float(a.get("alpha", 1.0)), 0.0)
    if op == "HardSigmoid":
        return ("hardsigmoid", float(a.get("alpha", 0.2)), float(a.get("beta", 0.5)))
    if op == "Swish":
        return ("swish", float(a.get("alpha", 1.0)), 0.0)
    if op == "Gelu":
        return {"none": ("gelu_erf", 0.0, 0.0), "tanh": ("gelu_tanh", 0.0, 0.0)}.get(
            a.get("approximate") or "none"
        )
    if op == "Clip":
        bounds = []
        for v in list(node.inputs[1:3]) + [None] * (3 - len(node.inputs)):
            if v is None:
                bounds.append(None)
                continue
            c = _scalar(resolve(v))
            if c is None:
                return None
            bounds.append(c)
        lo = -_F32_MAX if bounds[0] is None else bounds[0]
        hi = _F32_MAX if bounds[1] is None else bounds[1]
        return ("clip", lo, hi)
    return None


@dataclass
class _PostOps:
    """A oneDNN epilogue: (name, alpha, beta, operand or None) in order, and a bias."""

    ops: list = field(default_factory=list)
    bias: _Operand | None = None

    def eltwise(self, name, alpha=0.0, beta=0.0):
        self.ops.append((name, float(alpha), float(beta), None))

    def binary(self, name, operand: tuple):
        """operand: (_Operand, its dims in the view)."""
        self.ops.append((name, 0.0, 0.0, operand))


def _fast_broadcast(dims, y_dims) -> bool:
    """Whether oneDNN's brgemm matmul takes a binary operand of view dims `dims`: a scalar,
    a row (..., 1, N) or the whole output (others make it pick its slow reference code)."""
    return (
        all(d == 1 for d in dims)
        or list(dims) == list(y_dims)
        or (all(d == 1 for d in dims[:-1]) and dims[-1] == y_dims[-1])
    )


def _add_binary(
    post: _PostOps, views: _Views, op: str, operand: _Operand, swapped: bool, allow_bias: bool
) -> bool:
    """`chain op operand` (operand op chain when swapped) as post-ops; False if impossible."""
    if operand.dtype != DType.f32 or (swapped and op == "Div"):
        return False
    dims = views.operand_dims(operand.dims)
    if dims is None:
        return False
    c = _scalar(operand)
    if c is not None and op in ("Add", "Sub", "Mul", "Div"):
        if op == "Add":
            post.eltwise("linear", 1.0, c)
        elif op == "Mul":
            post.eltwise("linear", c, 0.0)
        elif op == "Sub":
            post.eltwise("linear", -1.0, c) if swapped else post.eltwise("linear", 1.0, -c)
        elif c != 0.0:
            post.eltwise("linear", 1.0 / c, 0.0)
        else:
            return False
        return True
    n = views.y_dims[-1]
    if (
        allow_bias
        and op == "Add"
        and post.bias is None
        and not post.ops
        and all(d == 1 for d in dims[:-1])
        and dims[-1] == n
    ):
        post.bias = operand
        return True
    if not _fast_broadcast(dims, views.y_dims):
        return False
    post.binary(_BINARY[op], (operand, dims))
    if swapped and op == "Sub":
        post.eltwise("linear", -1.0, 0.0)
    return True


def _gemm_c(post: _PostOps, views: _Views, node: Node, c: _Operand | None) -> bool:
    """alpha * A B + beta * C as post-ops (before any epilogue)."""
    alpha = float(node.attrs.get("alpha", 1.0))
    beta = float(node.attrs.get("beta", 1.0))
    if c is None or beta == 0.0:
        if alpha != 1.0:
            post.eltwise("linear", alpha, 0.0)
        return True
    if c.dtype != DType.f32 or views.operand_dims(c.dims) is None:
        return False
    data = c.constant
    if data is not None:
        scaled = _Operand(data=(np.asarray(data, np.float32) * np.float32(beta)).astype(np.float32))
        s = _scalar(scaled)
        if s is not None:
            post.eltwise("linear", alpha, s)
            return True
        if alpha != 1.0:
            post.eltwise("linear", alpha, 0.0)
        if not _fast_broadcast(views.operand_dims(scaled.dims), views.y_dims):
            full = np.broadcast_to(scaled.data, tuple(views.y_logical))
            scaled = _Operand(data=np.ascontiguousarray(full, np.float32))
        return _add_binary(post, views, "Add", scaled, False, allow_bias=True)
    ratio = alpha / beta
    if ratio != 1.0:
        post.eltwise("linear", ratio, 0.0)
    if not _add_binary(post, views, "Add", c, False, allow_bias=alpha == beta):
        # a column (M, 1) input C: correct, on oneDNN's slower reference matmul
        post.binary("add", (c, views.operand_dims(c.dims)))
    if beta != 1.0:
        post.eltwise("linear", beta, 0.0)
    return True


def _chain_post_ops(
    post: _PostOps, views: _Views, tail: list[Node], chain: Value, resolve, users: dict
) -> tuple[Value, int]:
    """Adds the longest prefix of `tail` that oneDNN can run; returns (the value it ends
    with, how many nodes it took)."""
    out_dims = tuple(static_dims(chain))
    taken = 0
    for n in tail:
        out = n.outputs[0]
        if out.type.dtype != DType.f32 or tuple(out.type.dims or ()) != out_dims:
            break
        if users.get(chain, []) != [n]:
            break
        if n.inputs and n.inputs[0] is chain and chain not in n.inputs[1:]:
            elt = _eltwise(n, resolve)
            if elt is not None:
                post.eltwise(*elt)
                chain, taken = out, taken + 1
                continue
        if (
            n.op in _BINARY
            and len(n.inputs) == 2
            and chain in n.inputs
            and n.inputs[0] is not n.inputs[1]
        ):
            swapped = n.inputs[1] is chain
            operand = resolve(n.inputs[0] if swapped else n.inputs[1])
            if operand is None or not _add_binary(
                post, views, n.op, operand, swapped, allow_bias=True
            ):
                break
            chain, taken = out, taken + 1
            continue
        break
    return chain, taken


# -- emitting the kernel ---------------------------------------------------------------------


def _emit_product(
    ctx: LoweringContext,
    a: _Operand,
    b: _Operand,
    views: _Views,
    post: _PostOps,
    out_slot: int,
    name: str,
) -> None:
    inputs = [a.slot(ctx), b.slot(ctx)]
    attrs = views.attrs()
    if post.bias is not None:
        data = post.bias.constant
        slot = (
            ctx.constant(np.asarray(data, np.float32).reshape(-1))
            if data is not None
            else post.bias.slot(ctx)
        )
        inputs.append(slot)
        attrs["bias_arg"] = len(inputs) - 1
    names, alphas, betas, args = [], [], [], []
    for op_name, alpha, beta, operand in post.ops:
        names.append(op_name)
        alphas.append(alpha)
        betas.append(beta)
        if operand is None:
            args.append(-1)
            continue
        operand, dims = operand
        slot = operand.slot(ctx)
        inputs.append(ctx.alias(None, slot, tuple(dims)))
        args.append(len(inputs) - 1)
    if names:
        attrs.update(post_ops=names, post_alpha=alphas, post_beta=betas, post_arg=args)
    ctx.emit("MatMul", inputs, [out_slot], attrs, name)


def _f32(*values) -> bool:
    return all(v is None or v.type.dtype == DType.f32 for v in values)


def _contraction(node: Node) -> int | None:
    """The product's inner (summed) length, None while unknown."""
    dims = node.inputs[0].type.dims
    if not dims or not isinstance(dims[-1], int):
        return None
    if node.op == "Gemm" and node.attrs.get("transA", 0):
        return dims[0] if isinstance(dims[0], int) else None
    return dims[-1]


def _empty_matmul(node: Node) -> bool:
    """A MatMul summing over nothing: its output is zeros (oneDNN's is not)."""
    return (
        node.op == "MatMul"
        and _contraction(node) == 0
        and node.outputs[0].type.dtype in (DType.f32, DType.f16, DType.bf16, DType.f64)
    )


def _product_ok(node: Node) -> bool:
    if not _f32(node.inputs[0], node.inputs[1], node.outputs[0]):
        return False
    if _contraction(node) == 0:
        return False  # oneDNN leaves the output unwritten: _empty_matmul fills zeros
    if node.op == "Gemm":
        c = node.inputs[2] if len(node.inputs) > 2 else None
        return (
            _f32(c)
            and len(node.inputs[0].type.dims or ()) == 2
            and len(node.inputs[1].type.dims or ()) == 2
        )
    ranks = [len(v.type.dims or ()) for v in node.inputs[:2]]
    return all(r >= 1 for r in ranks)


class _Product:
    """An anchor (MatMul or Gemm) with the post-ops of a prefix of its epilogue."""

    def __init__(self, anchor: Node, resolve, tail: list[Node], users: dict):
        self.anchor = anchor
        self.a = resolve(anchor.inputs[0])
        self.b = resolve(anchor.inputs[1])
        c_value = anchor.inputs[2] if anchor.op == "Gemm" and len(anchor.inputs) > 2 else None
        self.c = resolve(c_value) if c_value is not None else None
        if self.a is None or self.b is None or (c_value is not None and self.c is None):
            raise LoweringError(f"{anchor.name!r}: the product's inputs are not body inputs")
        best = None
        for collapse in (True, False) if anchor.op == "MatMul" else (False,):
            views = self._views(collapse)
            post = _PostOps()
            if anchor.op == "Gemm" and not _gemm_c(post, views, anchor, self.c):
                continue
            chain, taken = _chain_post_ops(post, views, tail, anchor.outputs[0], resolve, users)
            if best is None or taken > best[3]:
                best = (views, post, chain, taken)
            if taken == len(tail):
                break
        if best is None:
            raise LoweringError(f"Gemm {anchor.name!r}: C does not broadcast to the output")
        self.views, self.post, self.chain, self.taken = best

    def _views(self, collapse: bool) -> _Views:
        if self.anchor.op == "Gemm":
            a = self.anchor.attrs
            return _gemm_views(
                self.a.dims, self.b.dims, bool(a.get("transA", 0)), bool(a.get("transB", 0))
            )
        return _matmul_views(self.a.dims, self.b.dims, collapse)

    def emit(self, ctx: LoweringContext, out_slot: int, name: str) -> None:
        _emit_product(ctx, self.a, self.b, self.views, self.post, out_slot, name)


def _gemm_c_ok(node: Node) -> bool:
    if node.op != "Gemm" or len(node.inputs) < 3 or node.inputs[2] is None:
        return True
    out = static_dims(node.outputs[0])
    dims = static_dims(node.inputs[2])
    return len(dims) <= 2 and all(d in (1, o) for d, o in zip(reversed(dims), reversed(out)))


def _plain_resolve(v: Value | None) -> _Operand | None:
    return None if v is None else _Operand(v)


@supports(lambda node, ctx: (_product_ok(node) and _gemm_c_ok(node)) or _empty_matmul(node))
def lower_product(node: Node, ctx: LoweringContext) -> None:
    if _empty_matmul(node):
        ctx.emit("Fill", [], [ctx.output(node.outputs[0])], {"bits": 0}, node.name)
        return
    product = _Product(node, _plain_resolve, [], {})
    product.emit(ctx, ctx.output(node.outputs[0]), node.name)


# -- Fused kind gemm / matmul ----------------------------------------------------------------


class _FusedBody:
    def __init__(self, node: Node):
        self.body = node.attrs["body"]
        self.outer = dict(zip(self.body.inputs, node.inputs))
        nodes = [n for n in self.body.nodes if n.op != "Constant"]
        self.anchor = nodes[0] if nodes else None
        self.tail = nodes[1:]
        users: dict = {}
        for n in self.body.nodes:
            for v in n.inputs:
                if v is not None:
                    users.setdefault(v, []).append(n)
        self.users = users

    def resolve(self, v: Value | None) -> _Operand | None:
        if v is None:
            return None
        if v in self.outer:
            return _Operand(self.outer[v])
        if v.constant is not None:
            return _Operand(data=np.asarray(v.constant))
        return None


def fused_matmul_supported(node: Node) -> bool:
    fused = _FusedBody(node)
    anchor = fused.anchor
    if anchor is None or anchor.op not in ("MatMul", "Gemm"):
        return False
    values = [*node.inputs, *node.outputs, *anchor.inputs, *anchor.outputs]
    if not all(
        v is None or v.type.dims is not None and all(isinstance(d, int) for d in v.type.dims)
        for v in values
    ):
        return False
    if not _product_ok(anchor) or not _gemm_c_ok(anchor):
        return False
    inputs = anchor.inputs[:3] if anchor.op == "Gemm" else anchor.inputs[:2]
    if any(v is not None and fused.resolve(v) is None for v in inputs):
        return False
    try:
        product = _Product(anchor, fused.resolve, fused.tail, fused.users)
    except LoweringError:
        return False
    rest = fused.tail[product.taken :]
    if not rest:
        return True
    return all(node_supported(n) for n in rest)


def lower_fused_matmul(node: Node, ctx: LoweringContext) -> None:
    fused = _FusedBody(node)
    anchor = fused.anchor
    if anchor is None or anchor.op not in ("MatMul", "Gemm"):
        raise LoweringError(f"Fused {node.name!r}: the body does not start with MatMul/Gemm")
    product = _Product(anchor, fused.resolve, fused.tail, fused.users)
    result = node.outputs[0]
    rest = fused.tail[product.taken :]
    if not rest:
        product.emit(ctx, ctx.output(result), node.name)
        return
    temp = ctx.temp(DType.f32, static_dims(product.chain))
    product.emit(ctx, temp, node.name + "/" + anchor.op.lower())
    needed = {v for n in rest for v in n.inputs if v is not None}
    bindings = {product.chain: temp}
    for inner, outer in fused.outer.items():
        if inner in needed:
            bindings[inner] = ctx.input(outer)
    rest_set = set(rest)
    after = fused.body.nodes[fused.body.nodes.index(anchor) + 1 :]
    nodes = [n for n in after if n in rest_set or n.op == "Constant"]
    emit_pointwise(ctx, nodes, bindings, fused.body.outputs[0], ctx.output(result), node.name)


# -- Attention -------------------------------------------------------------------------------


def _attention_ok(node: Node, ctx=None) -> bool:
    ins = list(node.inputs) + [None] * (7 - len(node.inputs))
    outs = list(node.outputs) + [None] * (4 - len(node.outputs))
    if ins[6] is not None or outs[3] is not None:
        return False  # nonpad_kv_seqlen / qk_matmul_output
    if (ins[4] is None) != (ins[5] is None):
        return False
    if not _f32(*ins[:3], node.outputs[0], *[v for v in ins[4:6] + outs[1:3] if v is not None]):
        return False
    if ins[4] is not None and (len(static_dims(ins[4])) != 4 or len(static_dims(ins[5])) != 4):
        return False
    if node.attrs.get("softmax_precision") not in (None, 1):
        return False
    q, k, v = (static_dims(x) for x in ins[:3])
    if len(q) not in (3, 4) or len(k) not in (3, 4) or len(v) not in (3, 4):
        return False
    if len(q) == 3 and node.attrs.get("q_num_heads") is None:
        return False
    if (len(k) == 3 or len(v) == 3) and node.attrs.get("kv_num_heads") is None:
        return False
    mask = ins[3]
    if mask is not None:
        if mask.type.dtype not in (DType.f32, DType.bool):
            return False
        if _mask_view(node) is None:
            return False
    return True


def _heads_view(dims, heads) -> tuple[list, list]:
    """(batch, heads, seq, features) dims and strides of a plain 3-D or 4-D tensor."""
    if len(dims) == 4:
        return list(dims), _row_major(dims)
    batch, seq, hidden = dims
    size = hidden // heads
    return [batch, heads, seq, size], [seq * hidden, size, hidden, 1]


def _attention_shapes(node: Node):
    a = node.attrs
    q, k, v = (static_dims(x) for x in node.inputs[:3])
    qv, qs = _heads_view(q, a.get("q_num_heads"))
    kv, ks = _heads_view(k, a.get("kv_num_heads"))
    vv, vs = _heads_view(v, a.get("kv_num_heads"))
    return (qv, qs), (kv, ks), (vv, vs)


def _past_len(node: Node) -> int:
    past = node.inputs[4] if len(node.inputs) > 4 else None
    return 0 if past is None else static_dims(past)[2]


def _with_past(ctx: LoweringContext, node: Node, index: int, view) -> tuple:
    """K (index 1) or V (2) with past_key / past_value before it along the sequence, in
    present_key / present_value (or a temporary): (slot, 4-D dims, strides)."""
    (dims, strides), src = view, ctx.input(node.inputs[index])
    past = node.inputs[3 + index] if len(node.inputs) > 3 + index else None
    present = node.outputs[index] if len(node.outputs) > index else None
    if past is None and present is None:
        return src, dims, strides
    p_len = _past_len(node)
    full = [dims[0], dims[1], dims[2] + p_len, dims[3]]
    out = ctx.output(present) if present is not None else ctx.temp(DType.f32, tuple(full))
    ds = _row_major(full)
    ins, regions = [src], []
    if past is not None:
        ins.append(ctx.input(past))
        pdims = list(static_dims(past))
        if pdims != [dims[0], dims[1], p_len, dims[3]]:
            raise LoweringError(f"Attention {node.name!r}: past {pdims} does not fit {dims}")
        if p_len:
            regions.append((1, 0, pdims, _row_major(pdims), ds, 0, 0))
    if dims[2]:
        regions.append((0, 0, list(dims), list(strides), ds, 0, p_len * ds[2]))
    from ..native.lower_data import _emit_regions

    _emit_regions(ctx, node, ins, [out], regions)
    return out, full, ds


def _mask_view(node: Node):
    """(strides over (batch, heads, q_seq, keys) with 0 where broadcast, mask_len: the
    keys the mask covers) or None."""
    (qv, _), (kv, _), _ = _attention_shapes(node)
    dims = static_dims(node.inputs[3])
    if len(dims) > 4 or len(dims) < 1:
        return None
    padded = (1,) * (4 - len(dims)) + tuple(dims)
    full = (qv[0], qv[1], qv[2], kv[2] + _past_len(node))
    strides = _row_major(padded)
    for i in range(3):
        if padded[i] == 1:
            strides[i] = 0
        elif padded[i] != full[i]:
            return None
    # the key axis never broadcasts: a short mask leaves the keys past it unattended
    if padded[3] > full[3]:
        return None
    return strides, padded[3]


def _int_attr(attrs, name: str, default: int) -> int:
    value = attrs.get(name)
    return default if value is None else int(value)


@supports(_attention_ok)
def lower_attention(node: Node, ctx: LoweringContext) -> None:
    a = node.attrs
    (qv, qs), (kv, ks), (vv, vs) = _attention_shapes(node)
    batch, q_heads, q_seq, head = qv
    kv_heads, kv_seq, v_head = kv[1], kv[2], vv[3]
    if (
        kv_heads <= 0
        or q_heads % kv_heads
        or kv != [batch, kv_heads, kv_seq, head]
        or vv[:3] != [batch, kv_heads, kv_seq]
    ):
        raise LoweringError(f"Attention {node.name!r}: inconsistent Q/K/V shapes {qv} {kv} {vv}")
    k_slot, kv, ks = _with_past(ctx, node, 1, (kv, ks))
    v_slot, vv, vs = _with_past(ctx, node, 2, (vv, vs))
    kv_seq = kv[2]
    y_dims = static_dims(node.outputs[0])
    if len(y_dims) == 4:
        ys = _row_major(y_dims)
    else:
        ys = [q_seq * q_heads * v_head, v_head, q_heads * v_head, 1]
    scale = a.get("scale")
    attrs = {
        "batch": batch,
        "q_heads": q_heads,
        "kv_heads": kv_heads,
        "q_seq": q_seq,
        "kv_seq": kv_seq,
        "head": head,
        "v_head": v_head,
        "q_strides": qs,
        "k_strides": ks,
        "v_strides": vs,
        "y_strides": ys,
        "scale": float(scale) if scale is not None else 1.0 / math.sqrt(head),
        "softcap": float(a.get("softcap") or 0.0),
        "is_causal": int(a.get("is_causal") or 0),
        "left_window": _int_attr(a, "left_window_size", -1),
        "right_window": _int_attr(a, "right_window_size", -1),
        "pos_offset": _past_len(node),
    }
    inputs = [ctx.input(node.inputs[0]), k_slot, v_slot]
    mask = node.inputs[3] if len(node.inputs) > 3 else None
    if mask is not None:
        strides, mask_len = _mask_view(node)
        attrs.update(mask_strides=strides, mask_len=mask_len)
        inputs.append(ctx.input(mask))
    else:
        inputs.append(None)
    ctx.emit("Attention", inputs, [ctx.output(node.outputs[0])], attrs, node.name)


LOWERINGS = {
    "MatMul": lower_product,
    "Gemm": lower_product,
    "Attention": lower_attention,
}
