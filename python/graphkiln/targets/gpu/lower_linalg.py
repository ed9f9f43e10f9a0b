# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""MatMul, Gemm, Conv and pooling on the gpu target (float32, float16, bfloat16: every float
tensor of a node in one type; float32 accumulation in the kernels). MatMul and Gemm become
`Gemm` steps with every BLAS argument computed here (batch broadcasting by a zero stride,
or by an expanded copy when the batch dims do not line up); Gemm's C: a row vector (a bias)
with beta 1 is the step's epilogue (attribute epilogue=1, input 2: cuBLASLt adds it), with
another beta the kernel fills the output rows with it first and accumulates with beta, any
other shape is written by a strided copy first. lower_gemm_epilogue.py gives a fused
MatMul + Add(bias) (+ Relu) body the same epilogue. 1-D convolutions and poolings run as
2-D ones over a [N, C, 1, L] view."""

from __future__ import annotations

import numpy as np

from ...ir import DType, Node, TensorType, Value
from ..native.lower import LoweringContext, static_dims
from .conv_layout import channels_last_conv, conv_slots
from .lower_tensor import _strides, emit_copy
from .pointwise_steps import emit_program


FLOATS = (DType.f32, DType.f16, DType.bf16)


def _float(node: Node, ctx=None) -> bool:
    """Every tensor of the node in one of FLOATS, the same one."""
    dtypes = {v.type.dtype for v in (*node.inputs, *node.outputs) if v is not None}
    return len(dtypes) == 1 and dtypes.pop() in FLOATS


def _batched_operand(ctx: LoweringContext, slot: int, batch_dims, out_batch, matrix, name):
    """(slot, batch stride) of an operand whose batch dims broadcast to out_batch."""
    size = int(np.prod(matrix))
    padded = [1] * (len(out_batch) - len(batch_dims)) + list(batch_dims)
    if padded == list(out_batch):
        return slot, size
    if int(np.prod(batch_dims, dtype=np.int64)) == 1:
        return slot, 0
    full = list(out_batch) + list(matrix)
    temp = ctx.temp(ctx.slot(slot).dtype, full)
    src = _strides(padded + list(matrix))
    src = [0 if i < len(out_batch) and padded[i] == 1 else s for i, s in enumerate(src)]
    emit_copy(ctx, slot, temp, full, src, _strides(full), name=f"{name}/broadcast")
    return temp, size


def lower_matmul(node: Node, ctx: LoweringContext) -> None:
    inputs, attrs = matmul_step(node, ctx)
    ctx.emit("Gemm", inputs, [ctx.output(node.outputs[0])], attrs, node.name)


def matmul_step(node: Node, ctx: LoweringContext) -> tuple[list[int], dict]:
    """The Gemm step's input slots and attributes for a MatMul node."""
    a_dims, b_dims = static_dims(node.inputs[0]), static_dims(node.inputs[1])
    a, b = ctx.input(node.inputs[0]), ctx.input(node.inputs[1])
    a_mat = [1, a_dims[0]] if len(a_dims) == 1 else list(a_dims[-2:])
    b_mat = [b_dims[0], 1] if len(b_dims) == 1 else list(b_dims[-2:])
    a_batch, b_batch = list(a_dims[:-2]), list(b_dims[:-2])
    rank = max(len(a_batch), len(b_batch))
    pa = [1] * (rank - len(a_batch)) + a_batch
    pb = [1] * (rank - len(b_batch)) + b_batch
    out_batch = [max(x, y) for x, y in zip(pa, pb)]
    m, k = a_mat
    n = b_mat[1]
    a, stride_a = _batched_operand(ctx, a, a_batch, out_batch, a_mat, node.name)
    b, stride_b = _batched_operand(ctx, b, b_batch, out_batch, b_mat, node.name)
    batch = int(np.prod(out_batch, dtype=np.int64))
    if batch > 1 and stride_b == 0 and stride_a == m * k:
        # one B for every batch (a weight): the batches of A and C stacked are one matrix
        # [batch * m, k] @ [k, n], one large product instead of many small ones
        m, batch, stride_a = batch * m, 1, 0
    return [a, b], {
        "m": m,
        "n": n,
        "k": k,
        "batch": batch,
        "lda": k,
        "ldb": n,
        "ldc": n,
        "stride_a": stride_a,
        "stride_b": stride_b,
        "stride_c": m * n,
        "alpha": 1.0,
        "beta": 0.0,
    }


def lower_gemm(node: Node, ctx: LoweringContext) -> None:
    trans_a, trans_b = int(node.attrs.get("transA", 0)), int(node.attrs.get("transB", 0))
    a_dims, b_dims = static_dims(node.inputs[0]), static_dims(node.inputs[1])
    m, k = (a_dims[1], a_dims[0]) if trans_a else a_dims
    n = b_dims[0] if trans_b else b_dims[1]
    out = ctx.output(node.outputs[0])
    beta = float(node.attrs.get("beta", 1.0))
    c = node.inputs[2] if len(node.inputs) > 2 else None
    inputs = [ctx.input(node.inputs[0]), ctx.input(node.inputs[1])]
    epilogue = {}
    if c is not None and beta == 1.0 and _row_vector(static_dims(c), n):
        inputs.append(ctx.input(c))  # a bias added after the product (cuBLASLt's epilogue)
        beta, epilogue = 0.0, {"epilogue": 1}
    elif c is not None and beta != 0.0 and _row_vector(static_dims(c), n):
        inputs.append(ctx.input(c))  # the kernel fills each output row with it (a bias)
    elif c is not None and beta != 0.0:
        c_dims = static_dims(c)
        strides = _strides(c_dims)
        shift = 2 - len(c_dims)
        src = [0 if i < shift or c_dims[i - shift] == 1 else strides[i - shift] for i in range(2)]
        emit_copy(ctx, ctx.input(c), out, [m, n], src, [n, 1], name=f"{node.name}/C")
    else:
        beta = 0.0
    ctx.emit(
        "Gemm",
        inputs,
        [out],
        {
            "trans_a": trans_a,
            "trans_b": trans_b,
            "m": m,
            "n": n,
            "k": k,
            "lda": m if trans_a else k,
            "ldb": k if trans_b else n,
            "ldc": n,
            "alpha": float(node.attrs.get("alpha", 1.0)),
            "beta": beta,
            **epilogue,
        },
        node.name,
    )


def _row_vector(c_dims, n: int) -> bool:
    """C of n elements broadcast over the rows: [n] or [1, n] (n > 1)."""
    return n > 1 and (tuple(c_dims) == (n,) or tuple(c_dims) == (1, n))


def _spatial_pads(node: Node, in_spatial, out_spatial, kernel, strides, dilations):
    auto = node.attrs.get("auto_pad") or "NOTSET"
    rank = len(in_spatial)
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for i in range(rank):
            total = max(
                0,
                (out_spatial[i] - 1) * strides[i]
                + (kernel[i] - 1) * dilations[i]
                + 1
                - in_spatial[i],
            )
            small, large = total // 2, total - total // 2
            begin.append(large if auto == "SAME_LOWER" else small)
            end.append(small if auto == "SAME_LOWER" else large)
        return begin, end
    if auto == "VALID":
        return [0] * rank, [0] * rank
    pads = list(node.attrs.get("pads") or [0] * (2 * rank))
    return pads[:rank], pads[rank:]


def _as_2d(ctx: LoweringContext, slot: int, dims):
    """A 3-D [N, C, L] slot viewed as [N, C, 1, L]."""
    if len(dims) == 4:
        return slot
    return ctx.alias(None, slot, (dims[0], dims[1], 1, dims[2]))


def _window(node: Node, x_dims, y_dims, kernel):
    rank = len(x_dims) - 2
    strides = list(node.attrs.get("strides") or [1] * rank)
    dilations = list(node.attrs.get("dilations") or [1] * rank)
    begin, end = _spatial_pads(node, x_dims[2:], y_dims[2:], kernel, strides, dilations)
    if rank == 1:
        return [1, kernel[0]], [1, strides[0]], [1, dilations[0]], [0, begin[0], 0, end[0]]
    return list(kernel), strides, dilations, [begin[0], begin[1], end[0], end[1]]


def lower_conv(node: Node, ctx: LoweringContext) -> None:
    x_dims, w_dims = static_dims(node.inputs[0]), static_dims(node.inputs[1])
    y_dims = static_dims(node.outputs[0])
    kernel, strides, dilations, pads = _window(node, x_dims, y_dims, list(w_dims[2:]))
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    if channels_last_conv(ctx, node, node.outputs[0], node.inputs[1]):
        x, w, _, y = conv_slots(ctx, node, node.outputs[0], node.inputs[1], None)
    else:
        x = _as_2d(ctx, ctx.input(node.inputs[0]), x_dims)
        w = _as_2d(ctx, ctx.input(node.inputs[1]), w_dims)
        y = _as_2d(ctx, ctx.output(node.outputs[0]), y_dims)
    ctx.emit(
        "Conv",
        [x, w, ctx.input(bias) if bias is not None else None],
        [y],
        {
            "group": int(node.attrs.get("group", 1)),
            "strides": strides,
            "pads": pads,
            "dilations": dilations,
        },
        node.name,
    )


# MaxPool over a quantized CNN's u8 / i8 maps (QOperator models keep it on the codes): these
# types convert to float32 exactly and the cast keeps their order, so the pool runs on the
# float kernel between two casts
_EXACT_IN_F32 = frozenset({DType.u8, DType.i8, DType.u16, DType.i16})


def _integer_max_pool(node: Node) -> bool:
    dtypes = {v.type.dtype for v in (node.inputs[0], node.outputs[0])}
    return node.op == "MaxPool" and len(dtypes) == 1 and dtypes.pop() in _EXACT_IN_F32


def _lower_integer_max_pool(node: Node, ctx: LoweringContext) -> None:
    x, y = node.inputs[0], node.outputs[0]
    as_float = []
    for role, value in (("input", x), ("output", y)):
        dims = static_dims(value)
        view = Value(f"{node.name}/{role}_as_float", TensorType(DType.f32, dims))
        ctx.bind(view, ctx.temp(DType.f32, dims))
        as_float.append(view)
    to_float = Node("Cast", [x], [as_float[0]], {"to": DType.f32}, f"{node.name}/to_float")
    emit_program([to_float], as_float[0], ctx, to_float.name)
    lower_pool(Node("MaxPool", [as_float[0]], [as_float[1]], dict(node.attrs), node.name), ctx)
    back = Node("Cast", [as_float[1]], [y], {"to": y.type.dtype}, f"{node.name}/back")
    emit_program([back], y, ctx, back.name)


def lower_pool(node: Node, ctx: LoweringContext) -> None:
    if _integer_max_pool(node):
        return _lower_integer_max_pool(node, ctx)
    x_dims, y_dims = static_dims(node.inputs[0]), static_dims(node.outputs[0])
    kernel, strides, dilations, pads = _window(
        node, x_dims, y_dims, list(node.attrs["kernel_shape"])
    )
    x = _as_2d(ctx, ctx.input(node.inputs[0]), x_dims)
    y = _as_2d(ctx, ctx.output(node.outputs[0]), y_dims)
    ctx.emit(
        node.op,
        [x],
        [y],
        {
            "kernel_shape": kernel,
            "strides": strides,
            "pads": pads,
            "dilations": dilations,
            "count_include_pad": int(node.attrs.get("count_include_pad", 0)),
        },
        node.name,
    )


def _conv_ok(node: Node, ctx=None) -> bool:
    return _float(node) and len(static_dims(node.inputs[0])) in (3, 4)


def _pool_ok(node: Node, ctx=None) -> bool:
    return (
        (_float(node) or _integer_max_pool(node))
        and len(static_dims(node.inputs[0])) in (3, 4)
        and (len(node.outputs) < 2 or node.outputs[1] is None)
    )


lower_matmul.supports = _float
lower_gemm.supports = _float
lower_conv.supports = _conv_ok
lower_pool.supports = _pool_ok

LOWERINGS = {
    "MatMul": lower_matmul,
    "Gemm": lower_gemm,
    "Conv": lower_conv,
    "MaxPool": lower_pool,
    "AveragePool": lower_pool,
}
