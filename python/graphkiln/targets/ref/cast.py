# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""numpy kernels of element type conversions: Cast, CastLike, BitCast."""

import ml_dtypes
import numpy as np

from ...ir import DType

# float8 types whose `saturate` clamps out-of-range values to the largest finite value
_FLOAT8 = {DType.f8e4m3fn, DType.f8e4m3fnuz, DType.f8e5m2, DType.f8e5m2fnuz}
# integer types numpy keeps in one byte each: their width in bits and signedness
_SUB_BYTE_INTS = {
    DType.i4: (4, True),
    DType.u4: (4, False),
    DType.i2: (2, True),
    DType.u2: (2, False),
}
_NATIVE = {np.dtype(t) for t in (np.float16, np.float32, np.float64)}


def Cast(x, *, to, saturate=1, round_mode="up"):
    return convert(np.asarray(x), to, bool(saturate), round_mode)


def CastLike(x, target_type, *, saturate=1, round_mode="up"):
    return convert(np.asarray(x), DType.from_numpy(target_type.dtype), bool(saturate), round_mode)


def convert(x: np.ndarray, to: DType, saturate: bool = True, round_mode: str = "up") -> np.ndarray:
    """x converted to element type `to` by the rules of the ONNX Cast doc."""
    if to is DType.str:
        return _to_strings(x)
    if x.dtype.kind in "OUS":
        x = _parse_strings(x, to)
    with np.errstate(all="ignore"):
        source = DType.from_numpy(x.dtype)
        if to is DType.bool:
            return _widen(x, source) != 0
        if to is DType.f8e8m0:
            return _to_e8m0(_widen(x, source).astype(np.float64), saturate, round_mode)
        if to in _FLOAT8:
            wide = _widen(x, source)
            if wide.dtype.kind != "f":
                wide = wide.astype(np.float64)
            if saturate:
                limit = float(ml_dtypes.finfo(to.numpy).max)
                wide = np.clip(wide, -limit, limit)  # inf too; NaN stays NaN
            return _narrow_float(wide, to.numpy)
        if to in _SUB_BYTE_INTS:
            # out of range (undefined by ONNX) wraps like an integer cast, NaN / inf give 0;
            # never ml_dtypes' float -> int4 cast, which wraps in 0.6 and gives 0 in 0.7
            return _wrap_sub_byte(_to_int64(x, source), *_SUB_BYTE_INTS[to]).astype(to.numpy)
        if to.is_int and source.is_float:
            wide = np.trunc(_widen(x, source))
            if to.numpy.kind == "u" and to.itemsize == 8:
                return wide.astype(to.numpy)
            # out of range is undefined by ONNX; going through int64 gives the wrap-around
            # of the integer rules instead of numpy's platform-dependent float->int cast
            return np.where(np.isfinite(wide), wide, 0).astype(np.int64).astype(to.numpy)
        if to.is_float and to.numpy not in _NATIVE:
            wide = _widen(x, source)
            return _narrow_float(
                wide if wide.dtype.kind == "f" else wide.astype(np.float64), to.numpy
            )
        return _widen(x, source).astype(to.numpy)


def _narrow_float(x: np.ndarray, target: np.dtype) -> np.ndarray:
    """float16/32/64 -> an ml_dtypes float (bfloat16, float8, float4), rounded once.

    ml_dtypes converts float64 through float32, which rounds twice (1 + 2**-8 + 2**-40 gives
    bfloat16 1.0, not 1.0078125). Rounding to float32 with round-to-odd first keeps the
    information the second rounding needs, since float32 has more than two extra bits."""
    if x.dtype != np.float64:
        return x.astype(target)
    nearest = x.astype(np.float32)
    inexact = np.isfinite(nearest) & (nearest.astype(np.float64) != x)
    toward_x = np.where(
        nearest > x,
        np.nextafter(nearest, np.float32(-np.inf)),
        np.nextafter(nearest, np.float32(np.inf)),
    )
    even = (nearest.view(np.uint32) & 1) == 0
    return np.where(inexact & even, toward_x, nearest).astype(target)


def _widen(x: np.ndarray, source: DType) -> np.ndarray:
    """Bring the sub-byte and ml_dtypes types to types numpy handles natively, exactly."""
    if source in _SUB_BYTE_INTS:
        return x.astype(np.int8 if _SUB_BYTE_INTS[source][1] else np.uint8)
    if source.is_float and x.dtype not in _NATIVE:
        return x.astype(np.float32)  # every bfloat16 / float8 / float4 value is a float32
    return x


def _to_int64(x: np.ndarray, source: DType) -> np.ndarray:
    wide = _widen(x, source)
    if wide.dtype.kind == "f":
        wide = np.where(np.isfinite(wide), np.trunc(wide), 0)
    return wide.astype(np.int64)


def _wrap_sub_byte(values: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    """Keep the low `bits` bits (two's complement when signed), as integer casts do."""
    low = values & ((1 << bits) - 1)
    if signed:
        low = np.where(low >= 1 << (bits - 1), low - (1 << bits), low)
    return low


def _to_e8m0(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """float64 -> float8e8m0 (a bare power-of-two exponent, bias 127, 0xFF = NaN).

    round_mode: "up" goes to the next power of two unless x is one, "down" to the one below,
    "nearest" to the closer one (ties up). Out of range: the extreme exponent when
    saturating, NaN otherwise. Negative input is undefined; its magnitude is used."""
    if round_mode not in ("up", "down", "nearest"):
        raise ValueError(f"Cast round_mode must be up, down or nearest, got {round_mode!r}")
    magnitude = np.abs(x)
    mantissa, exponent = np.frexp(
        magnitude
    )  # magnitude = mantissa * 2**exponent, mantissa in [0.5, 1)
    exponent = exponent.astype(np.int64) - 1  # magnitude in [2**exponent, 2**(exponent + 1))
    if round_mode == "up":
        exponent += mantissa > 0.5
    elif round_mode == "nearest":
        exponent += mantissa >= 0.75
    biased = exponent + 127
    too_small = (biased < 0) | (magnitude == 0)
    too_large = (biased > 254) | np.isinf(magnitude)
    if saturate:
        biased = np.where(too_small, 0, np.where(too_large, 254, biased))
    else:
        biased = np.where(too_small | too_large, 255, biased)
    biased = np.where(np.isnan(magnitude), 255, biased)
    return biased.astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)


# -- strings ---------------------------------------------------------------------------------


def _to_strings(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "OUS":
        return x.astype(object)
    source = DType.from_numpy(x.dtype)
    if source.is_float:
        fmt = _format_float
        x = _widen(x, source)
    elif source is DType.bool:
        fmt = lambda v: "1" if v else "0"  # noqa: E731
    else:
        x = _widen(x, source)
        fmt = lambda v: str(int(v))  # noqa: E731
    out = np.empty(x.shape, dtype=object)
    flat_in, flat_out = x.reshape(-1), out.reshape(-1)
    for i in range(flat_in.size):
        flat_out[i] = fmt(flat_in[i])
    return out


def _format_float(value) -> str:
    """Shortest digits that read back as the same value of the source type: plain notation
    for ordinary magnitudes, scientific for very large or small ones."""
    if np.isnan(value):
        return "NaN"
    if np.isinf(value):
        return "INF" if value > 0 else "-INF"
    magnitude = abs(float(value))
    if magnitude == 0 or 1e-4 <= magnitude < 1e16:
        return np.format_float_positional(value, unique=True, trim="-")
    return np.format_float_scientific(value, unique=True, trim="-")


def _parse_strings(x: np.ndarray, to: DType) -> np.ndarray:
    """Strings -> int64 for integer and bool targets (float text truncated), else float64.
    "INF", "+INF", "-INF" and "NaN" are read case-insensitively (float() does)."""
    integer = to.is_int  # bool is read as a number: "0.5" is True
    parse = _parse_int if integer else _parse_float
    out = np.empty(x.shape, dtype=np.int64 if integer else np.float64)
    flat_in, flat_out = x.reshape(-1), out.reshape(-1)
    for i in range(flat_in.size):
        flat_out[i] = parse(flat_in[i])
    return out


def _text(s) -> str:
    return (s.decode("utf-8") if isinstance(s, bytes) else str(s)).strip()


def _parse_float(s) -> float:
    try:
        return float(_text(s))
    except ValueError:
        raise ValueError(f"Cast: string {s!r} is not a number") from None


def _parse_int(s) -> int:
    text = _text(s)
    try:
        return int(text)
    except ValueError:
        value = _parse_float(text)
        return int(value) if np.isfinite(value) else 0


# -- BitCast ---------------------------------------------------------------------------------


def BitCast(x, *, to):
    x = np.asarray(x)
    source = DType.from_numpy(x.dtype)
    if (
        source in _SUB_BYTE_INTS
        or source is DType.f4e2m1
        or to in _SUB_BYTE_INTS
        or to is DType.f4e2m1
    ):
        return _bitcast_sub_byte(x, source, to)
    # view needs C-contiguous data; ascontiguousarray would turn a scalar into shape (1,)
    return (x if x.flags.c_contiguous else x.copy(order="C")).view(to.numpy)


def _bitcast_sub_byte(x: np.ndarray, source: DType, to: DType) -> np.ndarray:
    # numpy keeps one 4- or 2-bit value per byte: go through the bit pattern as uint8
    if source in _SUB_BYTE_INTS:
        bits = _SUB_BYTE_INTS[source][0]
        pattern = x.astype(np.int64) & ((1 << bits) - 1)
    else:
        pattern = x.view(np.uint8).astype(np.int64) & 0xF
    if to in _SUB_BYTE_INTS:
        return _wrap_sub_byte(pattern, *_SUB_BYTE_INTS[to]).astype(to.numpy)
    return pattern.astype(np.uint8).view(to.numpy)


KERNELS = {
    "Cast": Cast,
    "CastLike": CastLike,
    "BitCast": BitCast,
}
