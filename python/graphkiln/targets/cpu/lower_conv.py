# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Lowerings of convolutions and poolings (oneDNN kernels "Conv" and "Pool", our own
"GlobalPool"), and of Fused nodes of kind "conv": the anchor Conv with as much of its
pointwise epilogue as oneDNN post-ops express (bias folds, eltwise, binary with a tensor
broadcasting to the conv output); what is left runs as a pointwise kernel on a temporary.

Window geometry (explicit pads from auto_pad, the extra end padding ceil_mode needs) is
computed here from static shapes, so the kernels take explicit pads_begin / pads_end."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node, Value
from ..native.lower import LoweringContext, LoweringError, static_dims
from ..native.lower_pointwise import emit_pointwise, pointwise_supported
from ..native.lower_support import supports
from ..native.window_attrs import window_attrs as _geometry
from ..native.plan import CHANNELS_LAST, PLAIN
from ..native import lower_conv_transpose as lower_conv_transpose_direct

ANY_LAYOUT = (PLAIN, CHANNELS_LAST)


def _f32(*values) -> bool:
    return all(v is None or v.type.dtype == DType.f32 for v in values)


def _static(value) -> bool:
    dims = getattr(value.type, "dims", None)
    return dims is not None and all(isinstance(d, int) for d in dims)


# -- Conv ------------------------------------------------------------------------------------


def _conv_ok(node: Node, ctx=None) -> bool:
    x, w = node.inputs[0], node.inputs[1]
    b = node.inputs[2] if len(node.inputs) > 2 else None
    if not (_static(x) and _static(w) and _f32(x, w, b, node.outputs[0])):
        return False
    rank = len(x.type.dims)
    return 3 <= rank <= 5 and len(w.type.dims) == rank


class _Operand:
    """A tensor the kernel reads: a value of the graph, or constant data."""

    def __init__(self, value: Value | None = None, data: np.ndarray | None = None):
        self.value, self.data = value, data

    @property
    def constant(self):
        if self.data is not None:
            return self.data
        return None if self.value is None else self.value.constant

    @property
    def dims(self):
        return self.data.shape if self.data is not None else static_dims(self.value)

    def slot(self, ctx: LoweringContext, layouts=(PLAIN,)) -> int:
        if self.data is not None:
            return ctx.constant(np.ascontiguousarray(self.data, dtype=np.float32))
        return ctx.input(self.value, layouts=layouts)


def _post_attrs(attrs: dict, post: list) -> None:
    if post:
        attrs["post_ops"] = [p[0] for p in post]
        attrs["post_alpha"] = [float(p[1]) for p in post]
        attrs["post_beta"] = [float(p[2]) for p in post]
        attrs["post_arg"] = [3 + p[3] if p[3] >= 0 else -1 for p in post]


def _emit_conv(
    ctx: LoweringContext,
    conv: Node,
    x: _Operand,
    w: _Operand,
    b: _Operand | None,
    out_slot: int,
    post: list,
    extra: list[_Operand],
    name: str,
) -> None:
    kernel = list(w.dims[2:])
    attrs, _ = _geometry(conv.inputs[0], kernel, conv.attrs)
    attrs["group"] = int(conv.attrs.get("group") or 1)
    _post_attrs(attrs, post)
    inputs = [x.slot(ctx, ANY_LAYOUT), w.slot(ctx), None if b is None else b.slot(ctx)]
    inputs += [e.slot(ctx, ANY_LAYOUT) for e in extra]
    ctx.emit("Conv", inputs, [out_slot], attrs, name)


@supports(_conv_ok)
def lower_conv(node: Node, ctx: LoweringContext) -> None:
    b = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] is not None else None
    out = ctx.output(node.outputs[0], layouts=ANY_LAYOUT)
    _emit_conv(
        ctx,
        node,
        _Operand(node.inputs[0]),
        _Operand(node.inputs[1]),
        None if b is None else _Operand(b),
        out,
        [],
        [],
        node.name,
    )


# -- Fused kind conv -------------------------------------------------------------------------

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
_COMMUTATIVE = {"Add", "Mul", "Max", "Min"}


def _eltwise(node: Node, resolve):
    """(name, alpha, beta) of a oneDNN eltwise post-op computing `node` on its first input,
    or None."""
    op, a = node.op, node.attrs
    if op in _UNARY:
        return _UNARY[op]
    if op == "LeakyRelu":
        return ("relu", a.get("alpha", 0.01), 0.0)
    if op == "Elu":
        return ("elu", a.get("alpha", 1.0), 0.0)
    if op == "HardSigmoid":
        return ("hardsigmoid", a.get("alpha", 0.2), a.get("beta", 0.5))
    if op == "Gelu":
        approx = a.get("approximate") or "none"
        return {"none": ("gelu_erf", 0.0, 0.0), "tanh": ("gelu_tanh", 0.0, 0.0)}.get(approx)
    if op == "Swish":
        return ("swish", a.get("alpha", 1.0), 0.0)
    if op == "Clip":
        bounds = []
        for v in node.inputs[1:3] if len(node.inputs) > 1 else []:
            if v is None:
                bounds.append(None)
                continue
            data = resolve(v)
            if data is None or data.constant is None or np.asarray(data.constant).size != 1:
                return None
            bounds.append(float(np.asarray(data.constant).reshape(())))
        bounds += [None] * (2 - len(bounds))
        lo = -3.4028234663852886e38 if bounds[0] is None else bounds[0]
        hi = 3.4028234663852886e38 if bounds[1] is None else bounds[1]
        return ("clip", lo, hi) if lo <= hi else None
    return None


def _broadcast_kind(dims, out_dims):
    """'scalar', 'channel', 'full' for an operand oneDNN broadcasts fast, else None."""
    rank = len(out_dims)
    if len(dims) > rank:
        return None
    padded = (1,) * (rank - len(dims)) + tuple(dims)
    if all(d == 1 for d in padded):
        return "scalar"
    if tuple(padded) == tuple(out_dims):
        return "full"
    if all(d == 1 for i, d in enumerate(padded) if i != 1) and padded[1] == out_dims[1]:
        return "channel"
    return None


class _Epilogue:
    """The epilogue split: post-ops oneDNN runs, bias additions folded into B, and the
    nodes left for a pointwise kernel (starting at `rest`)."""

    def __init__(self, node: Node):
        self.node = node
        body = node.attrs["body"]
        self.body = body
        self.outer = dict(zip(body.inputs, node.inputs))
        nodes = [n for n in body.nodes if n.op != "Constant"]
        self.anchor, self.tail = nodes[0], nodes[1:]
        self.post: list = []  # (name, alpha, beta, extra index or -1)
        self.extra: list[_Operand] = []
        self.bias_add: list[np.ndarray] = []
        self.chain = self.anchor.outputs[0]
        self.rest = self.tail
        self._split()

    def resolve(self, v: Value) -> _Operand | None:
        if v in self.outer:
            return _Operand(self.outer[v])
        if v.constant is not None:
            return _Operand(data=np.asarray(v.constant))
        return None

    def _users(self) -> dict:
        users: dict = {}
        for n in self.body.nodes:
            for v in n.inputs:
                if v is not None:
                    users.setdefault(v, []).append(n)
        return users

    def _split(self) -> None:
        out_dims = tuple(self.chain.type.dims)
        users = self._users()
        tail, chain = self.tail, self.chain
        i = 0
        while i < len(tail):
            n = tail[i]
            out = n.outputs[0]
            if out.type.dtype != DType.f32 or tuple(out.type.dims or ()) != out_dims:
                break
            readers = users.get(chain, [])
            if (
                n.op == "Sigmoid"
                and n.inputs[0] is chain
                and i + 1 < len(tail)
                and len(readers) == 2
                and set(readers) == {n, tail[i + 1]}
                and users.get(out) == [tail[i + 1]]
                and tail[i + 1].op == "Mul"
                and set(tail[i + 1].inputs) == {chain, out}
                and tail[i + 1].outputs[0].type.dims == out.type.dims
            ):
                self.post.append(("swish", 1.0, 0.0, -1))  # x * sigmoid(x)
                chain = tail[i + 1].outputs[0]
                i += 2
                continue
            if readers != [n]:
                break  # the conv result (or a step of the chain) is read twice
            if n.inputs and n.inputs[0] is chain and chain not in n.inputs[1:]:
                elt = _eltwise(n, self.resolve)
                if elt is not None:
                    self.post.append((*elt, -1))
                    chain = out
                    i += 1
                    continue
            if (
                n.op in _BINARY
                and len(n.inputs) == 2
                and chain in n.inputs
                and n.inputs[0] is not n.inputs[1]
            ):
                swapped = n.inputs[1] is chain
                other = n.inputs[0] if swapped else n.inputs[1]
                operand = self.resolve(other)
                if operand is None or not _f32(other):
                    break
                kind = _broadcast_kind(operand.dims, out_dims)
                if kind is None or (swapped and n.op == "Div"):
                    break
                if (
                    n.op == "Add"
                    and not self.post
                    and kind in ("scalar", "channel")
                    and operand.constant is not None
                ):
                    self.bias_add.append(np.asarray(operand.constant, np.float32).reshape(-1))
                elif (
                    kind == "scalar"
                    and operand.constant is not None
                    and n.op in ("Add", "Sub", "Mul")
                ):
                    c = float(np.asarray(operand.constant).reshape(()))
                    if n.op == "Add":
                        self.post.append(("linear", 1.0, c, -1))
                    elif n.op == "Mul":
                        self.post.append(("linear", c, 0.0, -1))
                    elif swapped:
                        self.post.append(("linear", -1.0, c, -1))
                    else:
                        self.post.append(("linear", 1.0, -c, -1))
                else:
                    self.extra.append(operand)
                    self.post.append((_BINARY[n.op], 0.0, 0.0, len(self.extra) - 1))
                    if swapped and n.op == "Sub":
                        self.post.append(("linear", -1.0, 0.0, -1))
                chain = out
                i += 1
                continue
            break
        self.chain, self.rest = chain, tail[i:]


def fused_conv_supported(node: Node) -> bool:
    body = node.attrs["body"]
    nodes = [n for n in body.nodes if n.op != "Constant"]
    if not nodes or nodes[0].op not in ("Conv", "ConvTranspose"):
        return False
    if not all(_static(v) for v in [*node.inputs, *node.outputs] if v is not None):
        return False
    anchor = nodes[0]
    epi = _Epilogue(node)
    if anchor.op == "Conv" and not _conv_ok(anchor):
        return False
    if anchor.op == "ConvTranspose":
        w = epi.resolve(anchor.inputs[1])
        if w is None or not _deconv_ok(anchor, w_constant=w.constant):
            return False
    for v in anchor.inputs[:3] if len(anchor.inputs) > 2 else anchor.inputs[:2]:
        if v is not None and epi.resolve(v) is None:
            return False
    if not epi.rest:
        return True
    return bool(pointwise_supported(epi.rest))


def lower_fused_conv(node: Node, ctx: LoweringContext) -> None:
    epi = _Epilogue(node)
    anchor = epi.anchor
    x, w = epi.resolve(anchor.inputs[0]), epi.resolve(anchor.inputs[1])
    b_value = anchor.inputs[2] if len(anchor.inputs) > 2 else None
    b = None if b_value is None else epi.resolve(b_value)
    if x is None or w is None or (b_value is not None and b is None):
        raise LoweringError(f"Fused conv {node.name!r}: the anchor's inputs are not body inputs")
    if epi.bias_add:
        channels = static_dims(anchor.outputs[0])[1]
        total = np.zeros(channels, np.float32)
        if b is not None and b.constant is None:
            epi = _drop_bias_fold(epi)
        else:
            if b is not None:
                total = total + np.asarray(b.constant, np.float32).reshape(-1)
            for add in epi.bias_add:
                total = total + add  # a scalar broadcasts too
            b = _Operand(data=total.astype(np.float32))
    result = node.outputs[0]
    emit = _emit_conv if anchor.op == "Conv" else _emit_deconv
    if not epi.rest:
        out = ctx.output(result, layouts=ANY_LAYOUT)
        emit(ctx, anchor, x, w, b, out, epi.post, epi.extra, node.name)
        return
    dims = static_dims(epi.chain)
    # the layout analysis chose the result's layout from these dims (rank 3 to 5)
    layout = CHANNELS_LAST if result in ctx.channels_last and len(dims) >= 3 else PLAIN
    temp = ctx.temp(DType.f32, dims, layout)
    emit(ctx, anchor, x, w, b, temp, epi.post, epi.extra, node.name + "/conv")
    bindings = {epi.chain: temp}
    needed = {v for n in epi.rest for v in n.inputs if v is not None}
    for inner, outer in epi.outer.items():
        if inner in needed:
            bindings[inner] = ctx.input(outer, layouts=ANY_LAYOUT)
    rest = set(epi.rest)
    after = epi.body.nodes[epi.body.nodes.index(epi.anchor) + 1 :]
    nodes = [n for n in after if n in rest or n.op == "Constant"]
    out = ctx.output(result, layouts=ANY_LAYOUT)
    emit_pointwise(ctx, nodes, bindings, result_value(epi), out, node.name)


def result_value(epi: _Epilogue) -> Value:
    return epi.body.outputs[0]


def _drop_bias_fold(epi: _Epilogue) -> _Epilogue:
    """A non-constant B: the constant adds become binary post-ops instead."""
    adds, epi.bias_add = epi.bias_add, []
    post = []
    for add in adds:
        epi.extra.append(
            _Operand(
                data=add.reshape((1, -1) + (1,) * (len(epi.anchor.outputs[0].type.dims) - 2))
                if add.size > 1
                else add.reshape(())
            )
        )
        post.append(("add", 0.0, 0.0, len(epi.extra) - 1))
    epi.post = post + epi.post
    return epi


# -- ConvTranspose ---------------------------------------------------------------------------


def _deconv_geometry(node: Node):
    from ..ref.conv import transpose_geometry

    x, w = node.inputs[0], node.inputs[1]
    sizes, kernel = static_dims(x)[2:], static_dims(w)[2:]
    n = len(sizes)
    a = node.attrs
    strides = list(a.get("strides") or (1,) * n)
    dilations = list(a.get("dilations") or (1,) * n)
    begin, out = transpose_geometry(
        sizes,
        kernel,
        strides,
        dilations,
        a.get("pads"),
        a.get("auto_pad") or "NOTSET",
        a.get("output_padding"),
        a.get("output_shape"),
    )
    end = [
        (sizes[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - begin[i] - out[i]
        for i in range(n)
    ]
    return {
        "strides": strides,
        "dilations": dilations,
        "pads_begin": list(begin),
        "pads_end": end,
    }, out


def _deconv_ok(node: Node, ctx=None, w_constant=None) -> bool:
    x, w = node.inputs[0], node.inputs[1]
    b = node.inputs[2] if len(node.inputs) > 2 else None
    if not (_static(x) and _static(w) and _f32(x, w, b, node.outputs[0])):
        return False
    if w_constant is None:
        w_constant = w.constant
    if w_constant is None or not 3 <= len(x.type.dims) <= 5:
        return False
    attrs, out = _deconv_geometry(node)
    return (
        min(attrs["pads_begin"]) >= 0
        and min(attrs["pads_end"]) >= 0
        and list(node.outputs[0].type.dims[2:]) == list(out)
    )


def _emit_deconv(
    ctx: LoweringContext,
    node: Node,
    x: _Operand,
    w: _Operand,
    b: _Operand | None,
    out_slot: int,
    post: list,
    extra: list[_Operand],
    name: str,
) -> None:
    attrs, _ = _deconv_geometry(node)
    group = int(node.attrs.get("group") or 1)
    attrs["group"] = group
    _post_attrs(attrs, post)
    data = np.asarray(w.constant, np.float32)
    ic, ocg, kernel = data.shape[0], data.shape[1], data.shape[2:]
    # ONNX (I, O/G, k...) -> oneDNN (G, O/G, I/G, k...) or (O, I, k...)
    data = data.reshape(group, ic // group, ocg, *kernel).swapaxes(1, 2)
    if group == 1:
        data = data[0]
    inputs = [
        x.slot(ctx, ANY_LAYOUT),
        ctx.constant(np.ascontiguousarray(data)),
        None if b is None else b.slot(ctx),
    ]
    inputs += [e.slot(ctx, ANY_LAYOUT) for e in extra]
    ctx.emit("ConvTranspose", inputs, [out_slot], attrs, name)


def _conv_transpose_ok(node: Node, ctx=None) -> bool:
    """oneDNN's deconvolution, else the direct kernel (lower_conv_transpose.py: run-time
    weights, negative pads)."""
    return _deconv_ok(node) or lower_conv_transpose_direct.supported(node)


@supports(_conv_transpose_ok)
def lower_conv_transpose(node: Node, ctx: LoweringContext) -> None:
    if not _deconv_ok(node):
        lower_conv_transpose_direct.lower_direct(node, ctx)
        return
    b = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] is not None else None
    _emit_deconv(
        ctx,
        node,
        _Operand(node.inputs[0]),
        _Operand(node.inputs[1]),
        None if b is None else _Operand(b),
        ctx.output(node.outputs[0]),
        [],
        [],
        node.name,
    )


# -- pooling ---------------------------------------------------------------------------------


def _int8_max_pool(node: Node) -> bool:
    """A MaxPool of u8 / i8 data (a quantized CNN's): oneDNN takes it as it is."""
    dtypes = {node.inputs[0].type.dtype, node.outputs[0].type.dtype}
    return node.op == "MaxPool" and len(dtypes) == 1 and dtypes <= {DType.u8, DType.i8}


def _pool_ok(node: Node, ctx=None) -> bool:
    x = node.inputs[0]
    if not (_static(x) and 3 <= len(x.type.dims) <= 5):
        return False
    if not (_f32(x, node.outputs[0]) or _int8_max_pool(node)):
        return False
    if node.op == "MaxPool":
        if len(node.outputs) > 1 and node.outputs[1] is not None:
            return False  # Indices output
    if node.op == "AveragePool" and node.attrs.get("count_include_pad"):
        # oneDNN would count the extra end padding ceil_mode adds; ONNX does not
        kernel = list(node.attrs["kernel_shape"])
        attrs, _ = _geometry(x, kernel, node.attrs, node.attrs.get("ceil_mode"))
        n = len(kernel)
        declared = list(node.attrs.get("pads") or [0] * 2 * n)[n:]
        if (node.attrs.get("auto_pad") or "NOTSET") == "NOTSET" and attrs["pads_end"] != declared:
            return False
    return True


@supports(_pool_ok)
def lower_pool(node: Node, ctx: LoweringContext) -> None:
    kernel = list(node.attrs["kernel_shape"])
    attrs, _ = _geometry(node.inputs[0], kernel, node.attrs, node.attrs.get("ceil_mode"))
    attrs["kernel_shape"] = kernel
    if node.op == "MaxPool":
        attrs["algorithm"] = "max"
    elif node.attrs.get("count_include_pad"):
        attrs["algorithm"] = "avg_include_padding"
    else:
        attrs["algorithm"] = "avg_exclude_padding"
    x = ctx.input(node.inputs[0], layouts=ANY_LAYOUT)
    y = ctx.output(node.outputs[0], layouts=ANY_LAYOUT)
    ctx.emit("Pool", [x], [y], attrs, node.name)


def _global_ok(node: Node, ctx=None) -> bool:
    x = node.inputs[0]
    return _static(x) and _f32(x, node.outputs[0]) and len(x.type.dims) >= 3


@supports(_global_ok)
def lower_global_pool(node: Node, ctx: LoweringContext) -> None:
    x = ctx.input(node.inputs[0], layouts=ANY_LAYOUT)
    y = ctx.output(node.outputs[0], layouts=ANY_LAYOUT)
    mode = "max" if node.op == "GlobalMaxPool" else "avg"
    ctx.emit("GlobalPool", [x], [y], {"mode": mode}, node.name)


LOWERINGS = {
    "Conv": lower_conv,
    "ConvTranspose": lower_conv_transpose,
    "MaxPool": lower_pool,
    "AveragePool": lower_pool,
    "GlobalAveragePool": lower_global_pool,
    "GlobalMaxPool": lower_global_pool,
}
