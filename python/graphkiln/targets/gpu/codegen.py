# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Generated GPU source for a Pointwise step: the register program that src/gpu/pointwise.hip
interprets, specialized into straight-line CUDA/HIP C++ (opcodes, dtypes, constants and the
pattern of each input's index map baked in; the element count, the maps' sizes and strides, and the
magic numbers that divide by those sizes are kernel arguments, so that one source, compiled
once, serves every shape of that pattern: a new input shape of a dynamic program compiles
nothing new), compiled at plan build by the runtime compiler (NVRTC / hipRTC,
src/gpu/rtc.hip) for the live device.

The source needs no header: only builtin types and the device math functions every runtime
compiler knows; f16 converts with the hardware instructions (inline PTX on NVIDIA, _Float16
on AMD; integer arithmetic in host C++), bf16 with bit operations. Outside a GPU
compiler the same text is host C++ (the kernels become loops over all elements), which is how
tests check its semantics on a machine without a GPU.

Each source has two entries, launched with 256 threads a block and a grid-stride loop, with
the arguments (in0, ..., out, size_arguments(maps)...):
  <entry>     one element a thread;
  <entry>_v4  four consecutive elements a thread: vector loads of the inputs read at the
              output's index (or along a contiguous innermost dim), one load for a broadcast
              innermost dim, and a vector store; pointwise.hip picks it when the output and
              the inputs listed in attrs "jit_aligned" are aligned to four elements.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re

from ...errors import CompileError
from ...ir import DType

# graphkiln::DType numbers (src/core/tensor.hpp)
DTYPE_CODES = {
    DType.f32: 0,
    DType.f64: 1,
    DType.f16: 2,
    DType.bf16: 3,
    DType.i8: 4,
    DType.i16: 5,
    DType.i32: 6,
    DType.i64: 7,
    DType.u8: 8,
    DType.u16: 9,
    DType.u32: 10,
    DType.u64: 11,
    DType.bool: 12,
}
_STORAGE = {
    DType.f32: "float",
    DType.f64: "double",
    DType.f16: "gk_u16",
    DType.bf16: "gk_u16",
    DType.i8: "gk_i8",
    DType.i16: "gk_i16",
    DType.i32: "gk_i32",
    DType.i64: "gk_i64",
    DType.u8: "gk_u8",
    DType.u16: "gk_u16",
    DType.u32: "gk_u32",
    DType.u64: "gk_u64",
    DType.bool: "gk_u8",
}
_SIZE = {
    DType.f32: 4,
    DType.f64: 8,
    DType.f16: 2,
    DType.bf16: 2,
    DType.i8: 1,
    DType.i16: 2,
    DType.i32: 4,
    DType.i64: 8,
    DType.u8: 1,
    DType.u16: 2,
    DType.u32: 4,
    DType.u64: 8,
    DType.bool: 1,
}
# index maps of an input (same numbers as pointwise.hip's InputDesc::mode)
SAME, SCALAR, MAPPED = 0, 1, 2
VECTOR = 4
THREADS = 256
MAX_SIZE_ARGUMENTS = 480  # size arguments (n included) a kernel takes: 4 KiB of parameters at most

_PRELUDE_COMMON = r"""// graphkiln generated pointwise kernel
// (python/graphkiln/targets/gpu/codegen.py)
#ifndef GK_PRELUDE
#define GK_PRELUDE
typedef signed char gk_i8;
typedef short gk_i16;
typedef int gk_i32;
typedef long long gk_i64;
typedef unsigned char gk_u8;
typedef unsigned short gk_u16;
typedef unsigned int gk_u32;
typedef unsigned long long gk_u64;
#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__CUDACC_RTC__) || defined(__HIPCC_RTC__)
#define GK_FN __device__ __forceinline__
#define GK_KERNEL extern "C" __global__ void __launch_bounds__(256)
#define GK_FIRST ((gk_i64)blockIdx.x * blockDim.x + threadIdx.x)
#define GK_STEP ((gk_i64)gridDim.x * blockDim.x)
GK_FN gk_u32 gk_f2u(float f) { return __float_as_uint(f); }
GK_FN float gk_u2f(gk_u32 u) { return __uint_as_float(u); }
#else  // host C++: each kernel is a loop over all elements (tests)
#include <math.h>
#include <string.h>
#define GK_FN inline
#define GK_KERNEL extern "C" void
#define GK_FIRST 0
#define GK_STEP 1
GK_FN gk_u32 gk_f2u(float f) { gk_u32 u; memcpy(&u, &f, 4); return u; }
GK_FN float gk_u2f(gk_u32 u) { float f; memcpy(&f, &u, 4); return f; }
#endif
// the high 32 bits of a 32 x 32-bit product (one mul.hi / v_mul_hi_u32 on the devices)
#define GK_UMULHI(a, b) ((gk_u32)(((gk_u64)(a) * (gk_u64)(b)) >> 32))
// t / d for 0 <= t < 2^31 by d's magic number and shift (fast_div_magic in codegen.py)
#define GK_FASTDIV(t, magic, shift) \
  ((gk_i32)((GK_UMULHI((gk_u32)(t), (gk_u32)(magic)) + (gk_u32)(t)) >> (gk_u32)(shift)))
#define GK_INF gk_u2f(0x7f800000u)
#define GK_NAN gk_u2f(0x7fc00000u)
template <typename E>
struct alignas(4 * sizeof(E)) gk_v4 { E v[4]; };

#if defined(__CUDACC_RTC__) || (defined(__CUDACC__) && !defined(__HIP__) && !defined(__HIPCC__))
// float16 <-> float by the hardware conversions (round to nearest even, subnormals kept)
GK_FN float gk_half_to_float(gk_u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
GK_FN gk_u16 gk_float_to_half(float f) {
  gk_u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#elif defined(__HIPCC_RTC__) || defined(__HIPCC__) || defined(__HIP__)
GK_FN float gk_half_to_float(gk_u16 h) { return (float)__builtin_bit_cast(_Float16, h); }
GK_FN gk_u16 gk_float_to_half(float f) { return __builtin_bit_cast(gk_u16, (_Float16)f); }
#else  // host C++ (tests): the same rounding in integer arithmetic
GK_FN float gk_half_to_float(gk_u16 h) {
  const gk_u32 sign = (gk_u32)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = (float)mant * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  return gk_u2f(exp == 31 ? (sign | 0x7f800000u | (mant << 13))
                          : (sign | ((exp + 112) << 23) | (mant << 13)));
}
GK_FN gk_u16 gk_float_to_half(float f) {
  const gk_u32 x = gk_f2u(f);
  const gk_u32 sign = (x >> 16) & 0x8000u, mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return (gk_u16)(sign | 0x7e00u);
  if (mag >= 0x477ff000u) return (gk_u16)(sign | 0x7c00u);
  if (mag < 0x38800000u) return (gk_u16)(sign | (gk_u32)rintf(fabsf(f) * 16777216.0f));
  return (gk_u16)(sign | ((mag - (112u << 23) + 0xfffu + ((mag >> 13) & 1u)) >> 13));
}
#endif
GK_FN float gk_bf16_to_float(gk_u16 h) { return gk_u2f((gk_u32)h << 16); }
GK_FN gk_u16 gk_float_to_bf16(float f) {
  const gk_u32 x = gk_f2u(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (gk_u16)((x | 0x00400000u) >> 16);
  return (gk_u16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
"""

# the gk_* math of src/core/pointwise_ops.def's expressions, over the compute type: written
# once for float (suffix f) and once for double
_MATH1 = (
    "exp",
    "expm1",
    "log",
    "log1p",
    "sqrt",
    "fabs",
    "floor",
    "ceil",
    "rint",
    "trunc",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "tanh",
    "erf",
)
_PRELUDE_TYPED = (
    "".join(f"GK_FN {{T}} gk_{name}({{T}} x) {{ return {name}{{f}}(x); }}\n" for name in _MATH1)
    + r"""GK_FN {T} gk_pow({T} x, {T} y) { return pow{f}(x, y); }
GK_FN {T} gk_fmod({T} x, {T} y) { return fmod{f}(x, y); }
// truncate, non-finite -> 0, wrap to `bits` (signed or not), as gk_to_int on the CPU
GK_FN {T} gk_to_int({T} x, int bits, bool is_signed) {
  if (!(x == x) || x - x != ({T})0) return ({T})0;
  const {T} t = trunc{f}(x);
  if (bits >= 64) return t;
  const gk_i64 v = (gk_i64)t;
  const gk_u64 mask = ((gk_u64)1 << bits) - 1;
  const gk_u64 low = (gk_u64)v & mask;
  if (is_signed && (low >> (bits - 1))) return ({T})((gk_i64)low - ((gk_i64)1 << bits));
  return ({T})(gk_i64)low;
}
GK_FN {T} gk_round_f16({T} a) { return ({T})gk_half_to_float(gk_float_to_half((float)a)); }
GK_FN {T} gk_round_bf16({T} a) {
  const float f = (float)a;
  if ((gk_f2u(f) & 0x7fffffffu) > 0x7f800000u) return a;
  return ({T})gk_bf16_to_float(gk_float_to_bf16(f));
}
"""
)

_PRELUDE = (
    _PRELUDE_COMMON
    + _PRELUDE_TYPED.replace("{T}", "float").replace("{f}", "f")
    + _PRELUDE_TYPED.replace("{T}", "double").replace("{f}", "")
    + "#endif  // GK_PRELUDE\n"
)


class CodegenError(CompileError, ValueError):
    """The step cannot be turned into a generated kernel (the interpreter runs it). Caught
    where it is raised; a CompileError like every error graphkiln raises on purpose."""


def index_map(in_dims, in_strides, out_dims) -> tuple[int, list[int], list[int]]:
    """(mode, dims, strides) of one input read at the output's linear index, exactly as
    pointwise.hip's describe_input computes it: right-aligned broadcasting, size-1 dims read
    with stride 0, runs of dims that stay contiguous together merged."""
    in_dims, in_strides, out_dims = list(in_dims), list(in_strides), list(out_dims)
    numel = math.prod(in_dims)
    contiguous = all(d == 1 or s == e for d, s, e in zip(in_dims, in_strides, _row_major(in_dims)))
    if in_dims == out_dims and contiguous:
        return SAME, [], []
    if numel == 1:
        return SCALAR, [], []
    if len(in_dims) > len(out_dims):
        raise CodegenError("an input has a higher rank than the output")
    shift = len(out_dims) - len(in_dims)
    dims: list[int] = []
    strides: list[int] = []
    for d, size in enumerate(out_dims):
        src = d - shift
        if src >= 0 and in_dims[src] not in (1, size):
            raise CodegenError("an input does not broadcast to the output")
        stride = 0 if src < 0 or in_dims[src] == 1 else in_strides[src]
        if size == 1:
            continue
        if dims and strides[-1] == stride * size:
            dims[-1] *= size
            strides[-1] = stride
        else:
            dims.append(size)
            strides.append(stride)
    return MAPPED, dims, strides


def fast_div_magic(divisor: int) -> tuple[int, int]:
    """(magic, shift) with t // divisor == (umulhi(t, magic) + t) >> shift for every
    0 <= t < 2**31 (1 <= divisor < 2**31): the round-up method of Granlund and Montgomery,
    as src/gpu/fast_div.hpp computes it."""
    if not 1 <= divisor < 2**31:
        raise CodegenError(f"divisor {divisor} outside 1 .. 2**31 - 1")
    shift = max(0, (divisor - 1).bit_length())
    magic = ((1 << 32) * ((1 << shift) - divisor)) // divisor + 1
    return magic & 0xFFFFFFFF, shift


def size_arguments(maps: list[int]) -> list[int]:
    """The size arguments of a generated kernel, after its pointers, from its index maps
    (attrs "jit_maps": [n, out dtype, inputs, then per input dtype, mode, rank, dims...,
    strides...]): n, then for each mapped input and each of its dims the size, the stride,
    and the size's magic number and shift. pointwise.hip passes the same list."""
    out = [maps[0]]
    at = 3
    for _ in range(maps[2]):
        mode, rank = maps[at + 1], maps[at + 2]
        dims, strides = maps[at + 3 : at + 3 + rank], maps[at + 3 + rank : at + 3 + 2 * rank]
        if mode == MAPPED:
            for size, stride in zip(dims, strides):
                magic, shift = fast_div_magic(size) if size < 2**31 else (0, 0)
                out += [size, stride, magic, shift]
        at += 3 + 2 * rank
    return out


def _row_major(dims) -> list[int]:
    strides, step = [0] * len(dims), 1
    for axis in reversed(range(len(dims))):
        strides[axis] = step
        step *= dims[axis]
    return strides


def _literal(value: float, ctype: str) -> str:
    if math.isnan(value):
        return f"(({ctype})GK_NAN)"
    if math.isinf(value):
        return f"(({ctype})GK_INF)" if value > 0 else f"(-({ctype})GK_INF)"
    return f"(({ctype}){value!r})"


class PointwiseSource:
    """The generated source of one Pointwise step, its entry names and the index maps it
    assumed (attrs "jit_maps", which the C++ kernel compares with its own before it uses
    the generated code)."""

    def __init__(self, text: str, entry: str, maps: list[int], aligned: list[int]):
        self.text = text
        self.entry = entry
        self.maps = maps
        self.aligned = aligned  # inputs the four-element entry reads as aligned vectors

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def pointwise_source(attrs: dict, inputs: list[tuple], output: tuple) -> PointwiseSource:
    """`attrs`: the Pointwise step's ("program", "params", "num_regs", "result", "compute");
    `inputs`: (DType, dims, strides) per input; `output`: (DType, dims), contiguous."""
    from ..native.lower_pointwise import OPCODES

    out_dtype, out_dims = output[0], list(output[1])
    if out_dtype not in _STORAGE:
        raise CodegenError(f"output dtype {out_dtype} has no generated store")
    n = math.prod(out_dims)
    if n == 0:
        raise CodegenError("the output is empty")
    ct = "double" if attrs.get("compute", "f32") == "f64" else "float"
    suffix = "" if ct == "double" else "f"
    maps_attr = [n, DTYPE_CODES[out_dtype], len(inputs)]
    modes = []
    offsets = []  # per input: lines computing its offset `o<k>` from `i`, or None
    wide = n >= 2**30
    for dtype, dims, strides in inputs:
        if dtype not in _STORAGE:
            raise CodegenError(f"input dtype {dtype} has no generated load")
        mode, mdims, mstrides = index_map(dims, strides, out_dims)
        modes.append(mode)
        maps_attr += [DTYPE_CODES[dtype], mode, len(mdims), *mdims, *mstrides]
        if mode == MAPPED:
            span = sum((d - 1) * abs(s) for d, s in zip(mdims, mstrides))
            wide = wide or span >= 2**31
            offsets.append((mdims, mstrides))
        else:
            offsets.append(None)
    idx = "gk_i64" if wide else "gk_i32"

    def offset_lines(k: int, var: str) -> list[str]:
        """`o<k>`: the element offset of input k at output index `var`. The sizes, strides
        and division magic numbers are kernel arguments (size_arguments), so one source
        serves every shape with the same broadcast pattern; only which strides are zero is
        written into the source."""
        mdims, mstrides = offsets[k]
        lowest = min((d for d, s in enumerate(mstrides) if s != 0), default=len(mdims))
        lines = [f"{idx} t{k} = ({idx}){var}, o{k} = 0;"]
        for d in range(len(mdims) - 1, lowest - 1, -1):
            size, stride = f"({idx})gk_d{k}_{d}", f"({idx})gk_s{k}_{d}"
            if d == 0:  # the outermost dim: the rest of the index is its coordinate
                lines.append(f"o{k} += t{k} * {stride};")
                continue
            if wide:
                quotient = f"t{k} / {size}"
            else:
                quotient = f"GK_FASTDIV(t{k}, gk_m{k}_{d}, gk_h{k}_{d})"
            lines.append(f"{{ const {idx} q = {quotient};")
            if mstrides[d] != 0:
                lines.append(f"  o{k} += (t{k} - q * {size}) * {stride};")
            lines.append(f"  t{k} = q; }}" if d > lowest else "}")
        return lines

    def convert_in(dtype: DType, expr: str) -> str:
        if dtype is DType.f16:
            return f"({ct})gk_half_to_float({expr})"
        if dtype is DType.bf16:
            return f"({ct})gk_bf16_to_float({expr})"
        return f"({ct}){expr}"

    def convert_out(expr: str) -> str:
        if out_dtype is DType.f32:
            return f"(float){expr}"
        if out_dtype is DType.f64:
            return f"(double){expr}"
        if out_dtype is DType.f16:
            return f"gk_float_to_half((float){expr})"
        if out_dtype is DType.bf16:
            return f"gk_float_to_bf16((float){expr})"
        if out_dtype is DType.bool:
            return f"(gk_u8)({expr} != ({ct})0 ? 1 : 0)"
        return f"({_STORAGE[out_dtype]})(gk_i64){expr}"

    body = _program_lines(attrs, OPCODES, len(inputs), ct, suffix)
    params = [f"const {_STORAGE[d]}* __restrict__ in{k}" for k, (d, _, _) in enumerate(inputs)]
    params.append(f"{_STORAGE[out_dtype]}* __restrict__ out")
    params.append("gk_i64 gk_n")
    for k, mapped in enumerate(offsets):
        for d in range(len(mapped[0]) if mapped else 0):
            params += [f"gk_i64 gk_{name}{k}_{d}" for name in "dsmh"]
    if len(params) - len(inputs) - 1 > MAX_SIZE_ARGUMENTS:
        raise CodegenError(f"{len(params)} kernel arguments: index maps too large")
    args = ", ".join(f"{ct} x{k}" for k in range(len(inputs)))
    call = ", ".join(f"x{k}" for k in range(len(inputs)))

    def load_lines(i: str, vector_j: int | None) -> list[str]:
        lines = []
        for k, (dtype, _, _) in enumerate(inputs):
            if modes[k] == SAME:
                src = f"in{k}[{i}]" if vector_j is None else f"l{k}.v[{vector_j}]"
            elif modes[k] == SCALAR:
                src = f"in{k}[0]"
            else:
                lines += offset_lines(k, i)
                src = f"in{k}[o{k}]"
            lines.append(f"const {ct} x{k} = {convert_in(dtype, src)};")
        return lines

    eval_name = "gk_eval"
    head = [f"GK_FN {ct} {eval_name}({args}) {{", *("  " + s for s in body), "}"]
    scalar = [
        "GK_KERNEL GK_ENTRY(" + ", ".join(params) + ") {",
        "  for (gk_i64 g = GK_FIRST; g < gk_n; g += GK_STEP) {",
        f"    const {idx} i = ({idx})g;",
        *("    " + s for s in load_lines("i", None)),
        f"    out[i] = {convert_out(f'{eval_name}({call})')};",
        "  }",
        "}",
    ]
    ot = _STORAGE[out_dtype]
    # the four-element entry: how each input is read for four consecutive outputs
    kinds = [_vector_kind(modes[k], offsets[k]) for k in range(len(inputs))]
    vector = [
        "GK_KERNEL GK_ENTRY_V4(" + ", ".join(params) + ") {",
        "  for (gk_i64 g = GK_FIRST; g < (gk_n >> 2); g += GK_STEP) {",
    ]
    if any(kind in ("splat", "run", "each") for kind in kinds):
        vector.append(f"    const {idx} i0 = ({idx})g * {VECTOR};")
    for k, (dtype, _, _) in enumerate(inputs):
        st = _STORAGE[dtype]
        if kinds[k] == "same":
            vector.append(f"    const gk_v4<{st}> l{k} = ((const gk_v4<{st}>*)in{k})[g];")
        elif kinds[k] in ("splat", "run"):
            vector += ["    " + line for line in offset_lines(k, "i0")]
            if kinds[k] == "splat":
                vector.append(f"    const {ct} s{k} = {convert_in(dtype, f'in{k}[o{k}]')};")
            else:
                vector.append(f"    const gk_v4<{st}> l{k} = *(const gk_v4<{st}>*)(in{k} + o{k});")
    vector.append(f"    gk_v4<{ot}> r;")
    for j in range(VECTOR):
        lines = [f"const {idx} i = i0 + {j};"] if "each" in kinds else []
        for k, (dtype, _, _) in enumerate(inputs):
            if kinds[k] in ("same", "run"):
                lines.append(f"const {ct} x{k} = {convert_in(dtype, f'l{k}.v[{j}]')};")
            elif kinds[k] == "splat":
                lines.append(f"const {ct} x{k} = s{k};")
            elif kinds[k] == "scalar":
                lines.append(f"const {ct} x{k} = {convert_in(dtype, f'in{k}[0]')};")
            else:
                lines += offset_lines(k, "i")
                lines.append(f"const {ct} x{k} = {convert_in(dtype, f'in{k}[o{k}]')};")
        vector += [
            "    {",
            *("      " + line for line in lines),
            f"      r.v[{j}] = {convert_out(f'{eval_name}({call})')};",
            "    }",
        ]
    vector += [f"    ((gk_v4<{ot}>*)out)[g] = r;", "  }"]
    # the last n % 4 elements one a thread (no iteration when n is a multiple of four)
    vector += [
        "  for (gk_i64 g = (gk_n & ~(gk_i64)3) + GK_FIRST; g < gk_n; g += GK_STEP) {",
        f"    const {idx} i = ({idx})g;",
        *("    " + s for s in load_lines("i", None)),
        f"    out[i] = {convert_out(f'{eval_name}({call})')};",
        "  }",
    ]
    vector.append("}")
    kernel = "\n".join(head + scalar + vector) + "\n"
    entry = "gk_pw_" + hashlib.sha256((_PRELUDE + kernel).encode()).hexdigest()[:20]
    # the names are unique per kernel, so many sources can share one translation unit
    kernel = kernel.replace(f"GK_FN {ct} {eval_name}(", f"GK_FN {ct} {entry}_eval(")
    kernel = kernel.replace(f"{eval_name}({call})", f"{entry}_eval({call})")
    kernel = kernel.replace("GK_ENTRY_V4(", f"{entry}_v4(").replace("GK_ENTRY(", f"{entry}(")
    aligned = [k for k, kind in enumerate(kinds) if kind in ("same", "run")]
    return PointwiseSource(_PRELUDE + kernel, entry, maps_attr, aligned)


def _vector_kind(mode: int, offsets) -> str:
    """How the four-element entry reads an input: "same" (a vector at the output's index),
    "scalar" (its one element), "splat" (one element for all four: the innermost map dim is
    broadcast and a multiple of four long), "run" (a vector: that dim is contiguous, a
    multiple of four long, and the other strides multiples of four), "each" (four offsets)."""
    if mode == SAME:
        return "same"
    if mode == SCALAR:
        return "scalar"
    dims, strides = offsets
    if dims[-1] % VECTOR == 0 and strides[-1] == 0:
        return "splat"
    if dims[-1] % VECTOR == 0 and strides[-1] == 1 and all(s % VECTOR == 0 for s in strides[:-1]):
        return "run"
    return "each"


def _program_lines(attrs: dict, opcodes, n_inputs: int, ct: str, f: str) -> list[str]:
    """The register program as one `const` variable per instruction, returning the result."""
    code, params = list(attrs["program"]), list(attrs["params"])
    if len(code) % 5 or len(params) != len(code) // 5 * 2:
        raise CodegenError("program and params differ in length")
    num_regs = int(attrs["num_regs"])
    current = {k: f"x{k}" for k in range(n_inputs)}
    zero = f"({ct})0"
    lines = []
    for k in range(len(code) // 5):
        op_code, dst, a, b, c = code[5 * k : 5 * k + 5]
        if not 0 <= op_code < len(opcodes):
            raise CodegenError(f"unknown opcode {op_code}")
        if not 0 <= dst < num_regs or max(a, b, c) >= num_regs:
            raise CodegenError("register out of range")
        op = opcodes[op_code]
        regs = []
        for r in (a, b, c):
            if r < 0:
                regs.append(zero)
            elif r not in current:
                raise CodegenError(f"register {r} read before it is written")
            else:
                regs.append(current[r])
        A, B, C = regs
        p0, p1 = _literal(float(params[2 * k]), ct), _literal(float(params[2 * k + 1]), ct)
        if op not in _expressions():
            raise CodegenError(f"no generated code for opcode {op}")
        expr = expression_text(
            _expressions()[op], {"a": A, "b": B, "c": C, "p0": p0, "p1": p1, "T": ct}
        )
        name = f"v{k}"
        lines.append(f"const {ct} {name} = {expr};")
        current[dst] = name
    result = int(attrs["result"])
    if result not in current:
        raise CodegenError("the result register is never written")
    lines.append(f"return {current[result]};")
    return lines


# names an expression of pointwise_ops.def may use besides a, b, c, p0, p1 and T
EXPRESSION_NAMES = frozenset(
    {"gk_" + name for name in _MATH1}
    | {"gk_pow", "gk_fmod", "gk_to_int", "gk_round_f16", "gk_round_bf16", "float", "int"}
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def expression_text(expression: str, operands: dict) -> str:
    """A pointwise_ops.def expression with its operand names (a, b, c, p0, p1, T) replaced
    by the C text in `operands`; CodegenError for a name the prelude does not define."""

    def name(match):
        word = match.group(0)
        if word in operands:
            return operands[word]
        if word in EXPRESSION_NAMES:
            return word
        raise CodegenError(f"pointwise_ops.def expression {expression!r}: unknown name {word!r}")

    return "(" + _IDENTIFIER.sub(name, expression) + ")"


@functools.lru_cache(maxsize=1)
def _expressions() -> dict[str, str]:
    """opcode name -> its pointwise_ops.def expression"""
    from ..native.pointwise_table import pointwise_table

    return {row.name: row.expression for row in pointwise_table()}
