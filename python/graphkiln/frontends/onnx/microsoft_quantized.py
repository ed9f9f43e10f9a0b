# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Importers of onnxruntime's com.microsoft quantized ops (as the ContribOperators
documentation defines them), each as IR ops. The QLinear* ops of one tensor or two work on
real values: every quantized input is dequantized (x - zero_point) * scale, the op is
computed in float32 and the result quantized (round half to even, saturated) with the
output's scale and zero point, which is the documented meaning; onnxruntime computes some
of them with lookup tables or integer arithmetic, so a result may differ from it by one
unit where the float value lies on a rounding boundary. A zero point left out is 0 of the
type of the quantized data. QuantizeLinear, DequantizeLinear, QLinearAdd, QLinearMul,
QLinearSigmoid, QLinearSoftmax, QLinearLeakyRelu, QLinearGlobalAveragePool, QLinearConcat,
DynamicQuantizeMatMul, MatMulIntegerToFloat, QGemm, DynamicQuantizeLSTM."""

from __future__ import annotations

from ...ir import DType, Value
from .context import ImportContext
from .microsoft_common import cast, dims, ints, named, rank, refuse


def _dequantize(ctx: ImportContext, x: Value, scale: Value, zero_point: Value | None):
    return ctx.add("DequantizeLinear", x, scale, zero_point)


def _quantize(ctx: ImportContext, y: Value, scale: Value, zero_point: Value | None, like: Value):
    """y quantized to the type of zero_point, else to that of `like` (the quantized input)."""
    attrs = {} if zero_point is not None else {"output_dtype": like.type.dtype}
    return named(ctx, "QuantizeLinear", [y, scale, zero_point], 0, attrs)


def quantize_linear(ctx: ImportContext):
    """QuantizeLinear(x, y_scale, y_zero_point?; axis = 1): saturate(round(x / y_scale) +
    y_zero_point), per tensor or along `axis` (a 1-D scale): the default domain's op."""
    x, scale, zero_point = ctx.input(0), ctx.input(1), ctx.input(2)
    axis = int(ctx.attrs.get("axis", 1))
    return [named(ctx, "QuantizeLinear", [x, scale, zero_point], 0, {"axis": axis})]


def dequantize_linear(ctx: ImportContext):
    """DequantizeLinear(x, x_scale, x_zero_point?; axis = 1): (x - x_zero_point) * x_scale,
    per tensor or along `axis` (a 1-D scale): the default domain's op."""
    x, scale, zero_point = ctx.input(0), ctx.input(1), ctx.input(2)
    axis = int(ctx.attrs.get("axis", 1))
    return [named(ctx, "DequantizeLinear", [x, scale, zero_point], 0, {"axis": axis})]


def _binary(op: str):
    def convert(ctx: ImportContext):
        a, b = ctx.input(0), ctx.input(3)
        real_a = _dequantize(ctx, a, ctx.input(1), ctx.input(2))
        real_b = _dequantize(ctx, b, ctx.input(4), ctx.input(5))
        return [_quantize(ctx, ctx.add(op, real_a, real_b), ctx.input(6), ctx.input(7), a)]

    convert.__doc__ = (
        f"QLinear{op}(A, A_scale, A_zero_point?, B, B_scale, B_zero_point?, C_scale, "
        f"C_zero_point?): C = quantize(dequantize(A) {op} dequantize(B)), A and B "
        "broadcasting as numpy does."
    )
    return convert


def _unary(ctx: ImportContext, op: str, **attrs):
    x = ctx.input(0)
    real = ctx.add(op, _dequantize(ctx, x, ctx.input(1), ctx.input(2)), **attrs)
    return [_quantize(ctx, real, ctx.input(3), ctx.input(4), x)]


def qlinear_sigmoid(ctx: ImportContext):
    """QLinearSigmoid(X, X_scale, X_zero_point?, Y_scale, Y_zero_point?): Y =
    quantize(Sigmoid(dequantize(X)))."""
    return _unary(ctx, "Sigmoid")


def qlinear_leaky_relu(ctx: ImportContext):
    """QLinearLeakyRelu(X, X_scale, X_zero_point?, Y_scale, Y_zero_point?; alpha = 0.01): Y =
    quantize(LeakyRelu(dequantize(X), alpha))."""
    return _unary(ctx, "LeakyRelu", alpha=float(ctx.attrs.get("alpha", 0.01)))


def qlinear_softmax(ctx: ImportContext):
    """QLinearSoftmax(X, X_scale, x_zero_point?, y_scale, y_zero_point?; axis = -1, opset):
    Y = quantize(Softmax(dequantize(X))) with the meaning of the opset the Softmax came from:
    from 13 on over `axis`, before it over X flattened to 2-D at `axis` (then reshaped)."""
    x = ctx.input(0)
    real = _dequantize(ctx, x, ctx.input(1), ctx.input(2))
    axis = int(ctx.attrs.get("axis", -1))
    opset = ctx.attrs.get("opset")
    if not isinstance(opset, int):
        raise refuse(ctx, "the opset attribute (of the original Softmax) is required")
    if opset >= 13:
        result = ctx.add("Softmax", real, axis=axis)
    else:
        flat = ctx.add("Flatten", real, axis=axis)
        result = ctx.add("Reshape", ctx.add("Softmax", flat, axis=1), ctx.add("Shape", real))
    return [_quantize(ctx, result, ctx.input(3), ctx.input(4), x)]


def qlinear_global_average_pool(ctx: ImportContext):
    """QLinearGlobalAveragePool(X, x_scale, x_zero_point, y_scale, y_zero_point;
    channels_last = 0): Y = quantize(the mean of dequantize(X) over the spatial axes, kept
    as size 1): axes 2.. of NCHW..., or with channels_last axes 1..r-2 of NHW...C."""
    x = ctx.input(0)
    real = _dequantize(ctx, x, ctx.input(1), ctx.input(2))
    if int(ctx.attrs.get("channels_last", 0)):
        r = rank(x)
        if r is None or r < 3:
            raise refuse(ctx, "channels_last needs X of a known rank >= 3")
        mean = ctx.add("ReduceMean", real, ints(ctx, list(range(1, r - 1))), keepdims=1)
    else:
        mean = ctx.add("GlobalAveragePool", real)
    return [_quantize(ctx, mean, ctx.input(3), ctx.input(4), x)]


def qlinear_concat(ctx: ImportContext):
    """QLinearConcat(Y_scale, Y_zero_point, (X, X_scale, X_zero_point) ...; axis): Y =
    quantize(Concat(dequantize(X) ...)) with Y's scale and zero point."""
    triples = ctx.inputs[2:]
    if not triples or len(triples) % 3:
        raise refuse(ctx, "the inputs after Y_scale, Y_zero_point come as (X, scale, zero point)")
    reals = [_dequantize(ctx, *triples[i : i + 3]) for i in range(0, len(triples), 3)]
    joined = ctx.add("Concat", *reals, axis=int(ctx.attrs["axis"]))
    return [_quantize(ctx, joined, ctx.input(0), ctx.input(1), triples[0])]


def _scaled_product(ctx: ImportContext, product: Value, a_scale, b_scale, bias):
    """float(product) * a_scale * b_scale (+ bias): the int32 product as real values; a
    1-D b_scale (per column of B) broadcasts over the last axis (b_scale None: a_scale is
    the whole scale)."""
    if b_scale is not None:
        a_scale = ctx.add("Mul", a_scale, b_scale)
    real = ctx.add("Mul", cast(ctx, product, DType.f32), a_scale)
    if bias is None:
        return [named(ctx, "Identity", [real], 0)]
    return [named(ctx, "Add", [real, bias], 0)]


def matmul_integer_to_float(ctx: ImportContext):
    """MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zero_point?, b_zero_point?, bias?): Y =
    (A - a_zero_point) @ (B - b_zero_point) (in int32, as MatMulInteger) * a_scale * b_scale
    + bias, as float32; the scales and zero points per tensor or (B's) per column."""
    a, b, a_scale, b_scale = ctx.inputs[:4]
    if rank(a_scale) not in (None, 0) and rank(a_scale) != 1:
        raise refuse(ctx, "a_scale of rank > 1")
    product = ctx.add("MatMulInteger", a, b, ctx.input(4), ctx.input(5))
    return _scaled_product(ctx, product, a_scale, b_scale, ctx.input(6))


def dynamic_quantize_matmul(ctx: ImportContext):
    """DynamicQuantizeMatMul(A, B, b_scale, b_zero_point?, bias?): A (float32) quantized to
    uint8 as DynamicQuantizeLinear does (its own scale and zero point over the whole of A),
    then as MatMulIntegerToFloat with those."""
    a, b, b_scale = ctx.inputs[:3]
    qa = ctx.graph.add_node(
        "DynamicQuantizeLinear",
        [a],
        {},
        output_names=[f"{ctx.name or 'dqmm'}_{n}" for n in ("qa", "a_scale", "a_zp")],
        name=ctx.name,
    ).outputs
    product = ctx.add("MatMulInteger", qa[0], b, qa[2], ctx.input(3))
    return _scaled_product(ctx, product, qa[1], b_scale, ctx.input(4))


def _transposed(ctx: ImportContext, value: Value, trans: int, side: str) -> Value:
    if not trans:
        return value
    if rank(value) != 2:
        raise refuse(ctx, f"trans{side} needs a 2-D {side}")
    return ctx.add("Transpose", value, perm=(1, 0))


def qgemm(ctx: ImportContext):
    """QGemm(A, a_scale, a_zero_point, B, b_scale, b_zero_point, C?, y_scale?, y_zero_point?;
    alpha = 1, transA, transB): the real Y = alpha * A' @ B' + C with A' = dequantize(A)
    (transposed if transA), B' likewise (b_scale / b_zero_point per tensor or per column N),
    C an int32 of scale alpha * a_scale * b_scale and zero point 0. Computed as the int32
    MatMulInteger plus C, times alpha * a_scale * b_scale; quantized with y_scale /
    y_zero_point when y_scale is given, else the float32 Y."""
    a = _transposed(ctx, ctx.input(0), int(ctx.attrs.get("transA", 0)), "A")
    b = _transposed(ctx, ctx.input(3), int(ctx.attrs.get("transB", 0)), "B")
    product = ctx.add("MatMulInteger", a, b, ctx.input(2), ctx.input(5))
    if ctx.input(6) is not None:
        product = ctx.add("Add", product, ctx.input(6))
    scale = ctx.add("Mul", ctx.input(1), ctx.input(4))
    alpha = float(ctx.attrs.get("alpha", 1.0))
    if alpha != 1.0:
        scale = ctx.add("Mul", scale, ctx.constant(alpha, dtype="float32"))
    y_scale = ctx.input(7)
    if y_scale is None:
        return _scaled_product(ctx, product, scale, None, None)
    real = ctx.add("Mul", cast(ctx, product, DType.f32), scale)
    return [_quantize(ctx, real, y_scale, ctx.input(8), ctx.input(0))]


def _lstm_weights(ctx: ImportContext, w: Value, scale: Value, zero_point: Value | None):
    """int8 weights [D, K, 4H] with scales / zero points of shape [D] or [D, 4H] -> the
    float32 [D, 4H, K] weights of an LSTM: (w - zero_point) * scale, transposed."""
    w_dims = dims(w)
    if w_dims is None or len(w_dims) != 3 or not all(isinstance(d, int) for d in w_dims):
        raise refuse(ctx, "W and R must be 3-D of known dims [directions, K, 4 * hidden]")
    per = ints(ctx, [w_dims[0], 1, -1])  # [D] -> [D, 1, 1]; [D, 4H] -> [D, 1, 4H]
    real = cast(ctx, w, DType.f32)
    if zero_point is not None:
        real = ctx.add("Sub", real, ctx.add("Reshape", cast(ctx, zero_point, DType.f32), per))
    real = ctx.add("Mul", real, ctx.add("Reshape", scale, per))
    return ctx.add("Transpose", real, perm=(0, 2, 1))


def dynamic_quantize_lstm(ctx: ImportContext):
    """DynamicQuantizeLSTM(X, W, R, B?, sequence_lens?, initial_h?, initial_c?, P?, W_scale,
    W_zero_point, R_scale, R_zero_point): an LSTM (the default domain's attributes, layout 0)
    whose int8 weights W [D, input, 4H] and R [D, H, 4H] (transposed against the LSTM's)
    are dequantized per direction or per gate row ([D] or [D, 4H] scales); onnxruntime also
    quantizes X and the hidden state on the fly, so its results differ from this float LSTM
    by that quantization's error."""
    if ctx.input(8) is None or ctx.input(10) is None:
        raise refuse(ctx, "W_scale and R_scale are required")
    w = _lstm_weights(ctx, ctx.input(1), ctx.input(8), ctx.input(9))
    r = _lstm_weights(ctx, ctx.input(2), ctx.input(10), ctx.input(11))
    inputs = [ctx.input(0), w, r, *(ctx.input(i) for i in range(3, 8))]
    while inputs and inputs[-1] is None:
        inputs.pop()
    attrs = {k: v for k, v in ctx.attrs.items() if k != "layout"}
    return ctx.emit("LSTM", inputs, attrs)


OPS = {
    "QuantizeLinear": quantize_linear,
    "DequantizeLinear": dequantize_linear,
    "QLinearAdd": _binary("Add"),
    "QLinearMul": _binary("Mul"),
    "QLinearSigmoid": qlinear_sigmoid,
    "QLinearSoftmax": qlinear_softmax,
    "QLinearLeakyRelu": qlinear_leaky_relu,
    "QLinearGlobalAveragePool": qlinear_global_average_pool,
    "QLinearConcat": qlinear_concat,
    "MatMulIntegerToFloat": matmul_integer_to_float,
    "DynamicQuantizeMatMul": dynamic_quantize_matmul,
    "QGemm": qgemm,
    "DynamicQuantizeLSTM": dynamic_quantize_lstm,
}
