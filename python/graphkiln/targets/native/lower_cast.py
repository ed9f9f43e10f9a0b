# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Cast: between the native types -> the Pointwise kernel (lower_pointwise.py); from or to
the one-byte types (float8 e4m3fn / e4m3fnuz / e5m2 / e5m2fnuz / e8m0, float4e2m1, int4,
uint4, int2, uint2; stored one per byte, the core sees them as u8) -> the kernels of
src/cpu/cast_bytes.cpp, whose tables and breakpoints come from the ref conversion itself
(so saturate, round_mode and rounding match ref bit for bit):

- a one- or two-byte source: "CastLookup" over all 256 / 65536 bit patterns;
- float32 / float64 -> a small float type: "CastSteps", the conversion as a step function
  of |x|'s bit pattern (found by bisection on ref, checked on samples; refused if it is not
  one, e.g. float8e8m0 without saturation);
- float32 / float64 / wider integers -> int4 / uint4 / int2 / uint2: "CastSubByteInt"."""

from __future__ import annotations

import functools

import numpy as np

from ...ir import DType, Node
from ..ref.cast import convert
from .lower import LoweringContext, LoweringError, static_dims
from .lower_pointwise import lower_pointwise_op, node_supported as pointwise_node_supported
from .lower_support import supports
from .plan import BYTE_DTYPES

_SUB_BYTE_INTS = {
    DType.i4: (4, True),
    DType.u4: (4, False),
    DType.i2: (2, True),
    DType.u2: (2, False),
}
_LOOKUP_SOURCES = (
    frozenset({DType.f16, DType.bf16, DType.i16, DType.u16, DType.i8, DType.u8, DType.bool})
    | BYTE_DTYPES
)
_STEP_SOURCES = {DType.f32: (np.uint32, 0x7F800000), DType.f64: (np.uint64, 0x7FF0000000000000)}
_INT_SOURCES = frozenset({DType.f32, DType.f64, DType.i32, DType.i64, DType.u32, DType.u64})


def _dtype(v):
    return None if v is None else getattr(v.type, "dtype", None)


def _as_bytes(array: np.ndarray, to: DType) -> np.ndarray:
    return array.view(np.uint8) if to in BYTE_DTYPES else array


@functools.cache
def _table(source: DType, to: DType, saturate: bool, round_mode: str) -> np.ndarray:
    count = 256 if np.dtype(source.numpy).itemsize == 1 else 65536
    patterns = np.arange(count, dtype=np.uint8 if count == 256 else np.uint16)
    values = patterns.view(source.numpy)
    out = np.ascontiguousarray(convert(values, to, saturate, round_mode))
    return _as_bytes(out, to)


@functools.cache
def _steps(source: DType, to: DType, saturate: bool, round_mode: str):
    return step_function(source, to, lambda v: convert(v, to, saturate, round_mode))


def step_function(source: DType, to: DType, fn):
    """`fn` (an array of `source` -> an array of one-byte type `to`) as (pos_breaks,
    pos_codes, neg_breaks, neg_codes, nan_code) over the magnitude's bit pattern (see
    CastSteps), or None when it is no such step function."""
    uint, inf_bits = _STEP_SOURCES[source]
    width = np.dtype(uint).itemsize * 8
    sign = 1 << (width - 1)

    def code(bits):
        values = np.asarray(bits, np.uint64).astype(uint).view(source.numpy)
        with np.errstate(all="ignore"):
            return _as_bytes(np.ascontiguousarray(fn(values)), to)

    # candidates: every representable magnitude of the target, the midpoints between them
    # and their neighbours in the source type, 0, inf
    decoded = np.unique(np.abs(convert(np.arange(256, dtype=np.uint8).view(to.numpy), source)))
    decoded = decoded[np.isfinite(decoded)].astype(np.float64)
    mids = (decoded[1:] + decoded[:-1]) / 2
    top = decoded[-1] * 2 if decoded.size else 1.0
    with np.errstate(over="ignore"):
        points = np.concatenate([decoded, mids, [0.0, top]]).astype(source.numpy)
    cand = np.abs(points).view(uint).astype(np.uint64)
    ends = np.array([0, inf_bits], np.uint64)
    cand = np.concatenate([cand, cand + 1, np.maximum(cand, 1) - 1, ends])
    cand = np.unique(np.minimum(cand, ends[1]))
    result = []
    for negative in (False, True):
        offset = sign if negative else 0
        cand_codes = code(cand + offset)
        breaks, codes = [], [int(cand_codes[0])]
        change = np.nonzero(cand_codes[1:] != cand_codes[:-1])[0]
        lo = cand[change].copy()  # code(lo) is the old code
        hi = cand[change + 1].copy()  # code(hi) is the new code
        old = cand_codes[change]
        while True:
            gap = hi - lo > 1
            if not gap.any():
                break
            mid = lo + (hi - lo) // 2
            mid_codes = code(mid + offset)
            same = (mid_codes == old) & gap
            lo = np.where(same, mid, lo)
            hi = np.where(gap & ~same, mid, hi)
        breaks = [int(b) for b in hi]
        codes += [int(c) for c in cand_codes[change + 1]]
        result += [breaks, codes]
    nan_code = int(code(np.array([inf_bits + 1], np.uint64))[0])
    if not _steps_match(source, result, nan_code, code):
        return None
    return (*result, nan_code)


def _steps_match(source: DType, steps, nan_code, code) -> bool:
    uint, inf_bits = _STEP_SOURCES[source]
    width = np.dtype(uint).itemsize * 8
    rng = np.random.default_rng(0)
    samples = [
        rng.integers(0, 1 << (width - 1), size=20000, dtype=np.uint64),
        rng.integers(0, inf_bits + 1, size=20000, dtype=np.uint64),
    ]
    pos_breaks, pos_codes, neg_breaks, neg_codes = steps
    for b in (pos_breaks, neg_breaks):
        arr = np.asarray(b, np.uint64)
        samples.append(np.concatenate([arr, arr - np.uint64(1), arr + np.uint64(1)]))
    mags = np.concatenate(samples)
    mags = mags[mags <= np.uint64(inf_bits)]
    for negative, breaks, codes in ((False, pos_breaks, pos_codes), (True, neg_breaks, neg_codes)):
        expected = code(mags + ((1 << (width - 1)) if negative else 0))
        got = np.asarray(codes, np.uint8)[
            np.searchsorted(np.asarray(breaks, np.uint64), mags, side="right")
        ]
        if not np.array_equal(expected.view(np.uint8), got):
            return False
    nans = np.array([inf_bits + 1, inf_bits | (1 << (width - 2)) | 5], np.uint64)
    return bool(np.all(code(nans).view(np.uint8) == nan_code))


def _byte_plan(node: Node):
    """(kernel, extra) for a Cast the byte kernels run, or None."""
    source, to = _dtype(node.inputs[0]), node.attrs.get("to")
    if source is None or to is None or (source not in BYTE_DTYPES and to not in BYTE_DTYPES):
        return None
    saturate = bool(node.attrs.get("saturate", 1))
    round_mode = node.attrs.get("round_mode", "up") or "up"
    if to not in BYTE_DTYPES and np.dtype(to.numpy).itemsize not in (1, 2, 4, 8):
        return None
    if source in _LOOKUP_SOURCES:
        if np.dtype(source.numpy).itemsize == 2 and to not in BYTE_DTYPES:
            return None
        try:
            return "CastLookup", _table(source, to, saturate, round_mode)
        except (ValueError, TypeError):
            return None
    if to in _SUB_BYTE_INTS and source in _INT_SOURCES:
        bits, signed = _SUB_BYTE_INTS[to]
        low = np.arange(1 << bits)
        values = np.where(signed & (low >= 1 << (bits - 1)), low - (1 << bits), low)
        codes = np.asarray(values, np.int64).astype(to.numpy).view(np.uint8)
        return "CastSubByteInt", {"bits": bits, "codes": [int(c) for c in codes]}
    if to in BYTE_DTYPES and to not in _SUB_BYTE_INTS and source in _STEP_SOURCES:
        try:
            steps = _steps(source, to, saturate, round_mode)
        except (ValueError, TypeError):
            return None
        if steps is None:
            return None
        names = ("pos_breaks", "pos_codes", "neg_breaks", "neg_codes", "nan_code")
        return "CastSteps", dict(zip(names, steps))
    return None


def _cast_ok(node: Node, ctx=None) -> bool:
    if pointwise_node_supported(node):
        return True
    return _byte_plan(node) is not None


@supports(_cast_ok)
def lower_cast(node: Node, ctx: LoweringContext) -> None:
    if pointwise_node_supported(node):
        return lower_pointwise_op(node, ctx)
    emit_byte_cast(node, ctx)


def emit_byte_cast(node: Node, ctx: LoweringContext) -> None:
    """A Cast from or to a byte-coded type (float8, float4, int4, int2): a lookup table or
    a step function over the input's bits (the cpu and gpu targets share this)."""
    plan = _byte_plan(node)
    if plan is None:
        raise LoweringError(f"Cast {node.name!r}: no kernel for these types")
    kernel, extra = plan
    static_dims(node.inputs[0])
    x = ctx.input(node.inputs[0])
    out = ctx.output(node.outputs[0])
    if kernel == "CastLookup":
        ctx.emit(kernel, [x, ctx.constant(extra)], [out], {}, node.name)
    else:
        ctx.emit(kernel, [x], [out], extra, node.name)


lower_cast.byte_dtypes = True

LOWERINGS = {"Cast": lower_cast}
