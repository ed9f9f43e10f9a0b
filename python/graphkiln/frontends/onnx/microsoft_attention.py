# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Importers of onnxruntime's com.microsoft attention ops (as the ContribOperators
documentation defines them): Attention (packed Q/K/V projection) and MultiHeadAttention
(separate Q, K, V). Both become the IR Attention over 3-D Q, K, V (q_num_heads =
kv_num_heads = num_heads) with an additive mask built from the op's mask forms; the key /
value caches (past / present) are refused."""

from __future__ import annotations

from ...ir import DType, Value
from .context import ImportContext
from .microsoft_common import cast, dims, ints, named, node, output_wanted, rank, refuse

MASK_FILTER_VALUE = -10000.0  # what a masked-out key adds to its scores, by default


def _same_dim(a, b) -> bool:
    return a is b or a == b


def _kv_positions(ctx: ImportContext, kv_source: Value) -> Value:
    """0 .. kv_sequence_length - 1 as int64 of shape [1, T] (axis 1 of `kv_source`)."""
    length = ctx.add("Squeeze", ctx.add("Shape", kv_source, start=1, end=2), ints(ctx, [0]))
    zero, one = ctx.constant(0, dtype="int64"), ctx.constant(1, dtype="int64")
    return ctx.add("Unsqueeze", ctx.add("Range", zero, length, one), ints(ctx, [0]))


def additive_mask(
    ctx: ImportContext, mask: Value, batch, kv_source: Value, like: Value, what: str
) -> Value:
    """The scores' additive mask of `mask` (0 keeps a key, mask_filter_value drops it), shaped
    to broadcast over [batch, heads, sequence, kv_sequence]. Forms: [batch, kv_sequence] and
    [batch, sequence, kv_sequence] of 0 (masked) / 1, and [batch] (right padding: each row's
    count of keys kept). The [2 * batch] / [3 * batch + 2] index forms are refused."""
    filter_value = float(ctx.attrs.get("mask_filter_value", MASK_FILTER_VALUE))
    r, shape = rank(mask), dims(mask)
    if r == 1:
        if not _same_dim(shape[0], batch):
            raise refuse(
                ctx,
                f"a 1-D {what} must be [batch] (key lengths); the [2 * batch] and "
                "[3 * batch + 2] forms are not imported",
            )
        lengths = ctx.add("Unsqueeze", cast(ctx, mask, DType.i64), ints(ctx, [1]))
        keep = ctx.add("Less", _kv_positions(ctx, kv_source), lengths)  # [batch, T]
        r = 2
    elif r in (2, 3):
        keep = mask
    else:
        raise refuse(ctx, f"{what} of rank {r} (imported: [batch], [batch, T], [batch, S, T])")
    dtype = like.type.dtype
    keep = cast(ctx, keep, dtype)
    one = ctx.constant(1.0, dtype=dtype.numpy)
    dropped = ctx.add("Sub", one, keep)
    scaled = ctx.add("Mul", dropped, ctx.constant(filter_value, dtype=dtype.numpy))
    return ctx.add("Unsqueeze", scaled, ints(ctx, [1, 2] if r == 2 else [1]))


def _scale_attrs(ctx: ImportContext, num_heads: int) -> dict:
    attrs = {"q_num_heads": num_heads, "kv_num_heads": num_heads}
    scale = ctx.attrs.get("scale")
    if scale:  # 0 (or absent): 1 / sqrt(head_size), the IR default
        attrs["scale"] = float(scale)
    if int(ctx.attrs.get("unidirectional", 0)):
        attrs["is_causal"] = 1
    return attrs


def _attend(ctx: ImportContext, q, k, v, mask, attention_bias, num_heads):
    if attention_bias is not None:
        mask = attention_bias if mask is None else ctx.add("Add", mask, attention_bias)
    inputs = [q, k, v] + ([mask] if mask is not None else [])
    return named(ctx, "Attention", inputs, 0, _scale_attrs(ctx, num_heads))


def _split_last(ctx: ImportContext, value: Value, sizes: list[int]) -> list[Value]:
    base = ctx.name or ctx.op_type.lower()
    names = [f"{base}_{part}" for part in ("q", "k", "v")]
    return node(ctx, "Split", [value, ints(ctx, sizes)], {"axis": -1}, names)


def _num_heads(ctx: ImportContext) -> int:
    heads = ctx.attrs.get("num_heads")
    if not isinstance(heads, int) or heads <= 0:
        raise refuse(ctx, "num_heads (a positive int) is required")
    return heads


def attention(ctx: ImportContext):
    """Attention(input, weights, bias?, mask_index?, past?, attention_bias?; num_heads,
    qkv_hidden_sizes?, unidirectional, scale, mask_filter_value): Q, K, V = input @ weights
    (+ bias), split on the last axis by qkv_hidden_sizes (default: three equal parts); then
    multi-head scaled dot-product attention, a causal mask when unidirectional, mask_index
    as additive_mask says, attention_bias added to the scores. Refused: past / present,
    past_sequence_length, do_rotary, past_present_share_buffer."""
    a = ctx.attrs
    if ctx.input(4) is not None or output_wanted(ctx, 1) or ctx.input(6) is not None:
        raise refuse(ctx, "the past / present key-value cache is not imported")
    if int(a.get("do_rotary", 0)) or int(a.get("past_present_share_buffer", 0)):
        raise refuse(ctx, "do_rotary / past_present_share_buffer are not imported")
    heads = _num_heads(ctx)
    x, weights, bias, mask = ctx.inputs[:2] + [ctx.input(2), ctx.input(3)]
    sizes = a.get("qkv_hidden_sizes")
    if sizes:
        sizes = [int(s) for s in sizes]
    else:
        width = (dims(weights) or (None, None))[-1]
        if not isinstance(width, int) or width % 3:
            raise refuse(ctx, "without qkv_hidden_sizes the weights' width must be 3 * hidden")
        sizes = [width // 3] * 3
    if len(sizes) != 3 or sizes[0] != sizes[1] or any(s % heads for s in sizes):
        raise refuse(ctx, f"qkv_hidden_sizes {sizes}: Q and K sizes equal, multiples of heads")
    qkv = ctx.add("MatMul", x, weights)
    if bias is not None:
        qkv = ctx.add("Add", qkv, bias)
    q, k, v = _split_last(ctx, qkv, sizes)
    if mask is not None:
        batch = (dims(x) or (None,))[0]
        mask = additive_mask(ctx, mask, batch, x, q, "mask_index")
    return [_attend(ctx, q, k, v, mask, ctx.input(5), heads), None]


def multi_head_attention(ctx: ImportContext):
    """MultiHeadAttention(query, key, value, bias?, key_padding_mask?, attention_bias?;
    num_heads, unidirectional, scale, mask_filter_value): Q, K, V of [batch, seq, hidden]
    each (+ the bias's three parts, [q_hidden, k_hidden, v_hidden]), multi-head scaled
    dot-product attention, key_padding_mask as additive_mask says, attention_bias added to
    the scores. Refused: packed QKV / KV, the 4-D past-key form of key / value, past / present
    caches, past_sequence_length, cache_indirection and the qk output."""
    heads = _num_heads(ctx)
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    if k is None or v is None or rank(q) != 3 or rank(k) != 3 or rank(v) != 3:
        raise refuse(
            ctx, "only separate 3-D query, key and value are imported (not packed QKV / KV)"
        )
    if any(ctx.input(i) is not None for i in (6, 7, 8, 9)) or any(
        output_wanted(ctx, i) for i in (1, 2, 3)
    ):
        raise refuse(ctx, "past / present caches, cache_indirection and qk are not imported")
    bias = ctx.input(3)
    if bias is not None:
        sizes = [dims(t)[-1] for t in (q, k, v)]
        if not all(isinstance(s, int) for s in sizes):
            raise refuse(ctx, "a bias needs static hidden sizes of query, key and value")
        bq, bk, bv = _split_last(ctx, bias, sizes)
        q, k, v = ctx.add("Add", q, bq), ctx.add("Add", k, bk), ctx.add("Add", v, bv)
    mask = ctx.input(4)
    if mask is not None:
        mask = additive_mask(ctx, mask, dims(q)[0], k, q, "key_padding_mask")
    return [_attend(ctx, q, k, v, mask, ctx.input(5), heads), None, None, None]


def _positions_from_offset(ctx: ImportContext, x: Value, offset: Value) -> Value:
    """position_ids [batch, seq] of offset, offset + 1, ... (seq: axis 1 of a 3-D x, axis 2
    of a 4-D one)."""
    seq_axis = 1 if rank(x) == 3 else 2
    length = ctx.add("Squeeze", ctx.add("Shape", x, start=seq_axis, end=seq_axis + 1))
    zero, one = ctx.constant(0, dtype="int64"), ctx.constant(1, dtype="int64")
    start = ctx.add("Squeeze", cast(ctx, offset, DType.i64))
    row = ctx.add("Add", ctx.add("Range", zero, length, one), start)
    shape = ctx.add(
        "Concat",
        ctx.add("Shape", x, start=0, end=1),
        ctx.add("Shape", x, start=seq_axis, end=seq_axis + 1),
        axis=0,
    )
    return ctx.add("Expand", ctx.add("Unsqueeze", row, ints(ctx, [0])), shape)


def rotary_embedding(ctx: ImportContext):
    """RotaryEmbedding(input, position_ids, cos_cache, sin_cache; interleaved, num_heads,
    rotary_embedding_dim, scale, is_packed_batching): rotary positional embedding of a 3-D
    [batch, seq, hidden] or 4-D [batch, heads, seq, head] input, the cache rows picked by
    position_ids ([batch, seq], or [1]: the first position, then one per token): the IR
    RotaryEmbedding (ONNX's, its inputs in another order). num_heads of a 3-D input, when 0,
    is hidden / (2 * cos_cache's width). Refused: scale other than 1, packed batching."""
    a = ctx.attrs
    if float(a.get("scale", 1.0)) != 1.0 or int(a.get("is_packed_batching", 0)):
        raise refuse(ctx, "scale other than 1 and is_packed_batching are not imported")
    x, position_ids, cos, sin = ctx.inputs[:4]
    r = rank(x)
    if r not in (3, 4) or rank(position_ids) not in (1, 2):
        raise refuse(ctx, "input must be 3-D or 4-D, position_ids [1] or [batch, seq]")
    attrs = {
        "interleaved": int(a.get("interleaved", 0)),
        "rotary_embedding_dim": int(a.get("rotary_embedding_dim", 0)),
    }
    heads = int(a.get("num_heads", 0))
    if r == 3:
        if not heads:
            hidden, half = dims(x)[2], (dims(cos) or (None, None))[-1]
            if not isinstance(hidden, int) or not isinstance(half, int) or hidden % (2 * half):
                raise refuse(ctx, "num_heads 0 needs static hidden and cache widths")
            heads = hidden // (2 * half)
        attrs["num_heads"] = heads
    if rank(position_ids) == 1:
        position_ids = _positions_from_offset(ctx, x, position_ids)
    else:
        position_ids = cast(ctx, position_ids, DType.i64)
    return [named(ctx, "RotaryEmbedding", [x, cos, sin, position_ids], 0, attrs)]


OPS = {
    "RotaryEmbedding": rotary_embedding,
    "Attention": attention,
    "MultiHeadAttention": multi_head_attention,
}
