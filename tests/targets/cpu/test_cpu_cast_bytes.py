# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Cast from and to the one-byte types (float8 *, float4e2m1, int4 / uint4, int2 / uint2)
on cpu (src/cpu/cast_bytes.cpp), compared bit for bit with ref."""

import ml_dtypes
import numpy as np
import pytest
from onnx import helper

import graphkiln as gk
from graphkiln.ir import DType

from cpu_testing import node, run_both

FLOATS = [
    DType.f8e4m3fn,
    DType.f8e4m3fnuz,
    DType.f8e5m2,
    DType.f8e5m2fnuz,
    DType.f4e2m1,
    DType.f8e8m0,
]
INTS = [DType.i4, DType.u4, DType.i2, DType.u2]


def _model(source: DType, to: DType, shape, **attrs):
    graph = helper.make_graph(
        [node("Cast", ["x"], ["y"], to=to.onnx, **attrs)],
        "t",
        [helper.make_tensor_value_info("x", source.onnx, shape)],
        [helper.make_tensor_value_info("y", to.onnx, shape)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)]).SerializeToString()


def _check(model, x):
    ref, cpu = run_both(model, {"x": x})
    r, c = np.asarray(ref[0]), np.asarray(cpu[0])
    assert r.dtype == c.dtype and r.shape == c.shape
    if r.dtype.itemsize == 1:
        np.testing.assert_array_equal(c.view(np.uint8), r.view(np.uint8))
    else:
        np.testing.assert_array_equal(c, r)


def _floats(dtype, seed=0):
    rng = np.random.default_rng(seed)
    parts = [
        rng.normal(0, 1, 300),
        rng.normal(0, 100, 300),
        rng.uniform(-600, 600, 300),
        2.0 ** rng.integers(-140, 140, 200) * rng.choice([-1, 1], 200),
        [
            0.0,
            -0.0,
            np.inf,
            -np.inf,
            np.nan,
            1e30,
            -1e30,
            448,
            464,
            465,
            480,
            57344,
            61440,
            6,
            7,
            0.25,
            0.75,
            1.5,
            2.5,
            3.5,
            -2.5,
            1e-40,
            -1e-45,
            2**-10,
        ],
    ]
    with np.errstate(all="ignore"):
        return np.concatenate([np.asarray(p, np.float64) for p in parts]).astype(dtype)


@pytest.mark.parametrize("to", FLOATS)
@pytest.mark.parametrize("source", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("saturate", [1, 0])
def test_cast_to_small_float(source, to, saturate):
    x = _floats(source)
    model = _model(DType.from_numpy(np.dtype(source)), to, x.shape, saturate=saturate)
    try:
        _check(model, x)
    except gk.errors.GraphkilnError as exc:
        # e8m0 without saturation is no step function of |x|: refused, never wrong
        assert to is DType.f8e8m0 and not saturate, exc


@pytest.mark.parametrize("to", INTS)
@pytest.mark.parametrize(
    "source", [np.float32, np.float16, np.float64, np.int32, np.int64, np.int8, np.uint8]
)
def test_cast_to_sub_byte_int(source, to):
    if np.issubdtype(source, np.integer):
        info = np.iinfo(source)
        x = np.random.default_rng(1).integers(info.min, info.max, 500, endpoint=True).astype(source)
    else:
        x = np.concatenate([_floats(source), np.asarray([1e19, -1e19, 9.5, -9.5], source)])
    _check(_model(DType.from_numpy(np.dtype(source)), to, x.shape), x)


@pytest.mark.parametrize("source", FLOATS + INTS)
@pytest.mark.parametrize("to", [np.float32, np.float16, np.float64, np.int8, np.int64, np.uint8])
def test_cast_from_byte_type(source, to):
    patterns = np.arange(256, dtype=np.uint8)
    if source in INTS:
        bits = 4 if source in (DType.i4, DType.u4) else 2
        patterns = (patterns % (1 << bits)).astype(np.uint8)
        values = patterns.view(source.numpy).astype(np.int64).astype(source.numpy)
    else:
        values = patterns.view(source.numpy)
        if np.dtype(to).kind in "iu":  # NaN / inf -> integer: keep to finite values
            values = values[np.isfinite(values.astype(np.float32))]
    values = np.ascontiguousarray(values.reshape(-1))
    _check(_model(source, DType.from_numpy(np.dtype(to)), values.shape), values)


def test_cast_small_float_roundtrip_in_graph():
    # float32 -> float8 -> float32 in one plan (two byte kernels, a u8 arena tensor between)
    graph = helper.make_graph(
        [
            node("Cast", ["x"], ["q"], to=DType.f8e4m3fn.onnx),
            node("Cast", ["q"], ["y"], to=DType.f32.onnx),
        ],
        "t",
        [helper.make_tensor_value_info("x", DType.f32.onnx, (4, 50))],
        [helper.make_tensor_value_info("y", DType.f32.onnx, (4, 50))],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 25)]
    ).SerializeToString()
    x = np.random.default_rng(3).normal(0, 50, (4, 50)).astype(np.float32)
    _check(model, x)
    assert ml_dtypes.float8_e4m3fn  # the dtype ref uses


def test_fused_chain_with_float8_output_runs_node_by_node():
    # Relu -> Cast to float8 -> Cast back -> Mul: the pass fuses the pointwise chain; the
    # Pointwise kernel cannot hold float8, so the Fused node is lowered node by node
    graph = helper.make_graph(
        [
            node("Relu", ["x"], ["r"]),
            node("Cast", ["r"], ["q"], to=DType.f8e5m2.onnx),
            node("Cast", ["q"], ["d"], to=DType.f32.onnx),
            node("Mul", ["d", "x"], ["y"]),
            node("Neg", ["r"], ["n"]),
            node("Cast", ["n"], ["z"], to=DType.i4.onnx),
        ],
        "t",
        [helper.make_tensor_value_info("x", DType.f32.onnx, (3, 40))],
        [
            helper.make_tensor_value_info("y", DType.f32.onnx, (3, 40)),
            helper.make_tensor_value_info("z", DType.i4.onnx, (3, 40)),
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 25)]
    ).SerializeToString()
    x = np.random.default_rng(4).normal(0, 4, (3, 40)).astype(np.float32)
    ref, cpu = run_both(model, {"x": x})
    np.testing.assert_array_equal(np.asarray(cpu[0]), np.asarray(ref[0]))
    np.testing.assert_array_equal(
        np.asarray(cpu[1]).view(np.uint8), np.asarray(ref[1]).view(np.uint8)
    )


def _wrapped(x, bits: int, signed: bool) -> np.ndarray:
    """graphkiln's rule for float -> int4 / uint4 / int2 / uint2 out of range, which ONNX
    leaves undefined: truncate toward zero, keep the low `bits` bits (two's complement), as
    an integer cast does; NaN and infinities give 0."""
    out = []
    for v in np.asarray(x, np.float64).tolist():
        low = (int(v) if np.isfinite(v) else 0) % (1 << bits)
        out.append(low - (1 << bits) if signed and low >= 1 << (bits - 1) else low)
    return np.array(out)


@pytest.mark.parametrize("to", INTS)
@pytest.mark.parametrize("source", [np.float32, np.float16, np.float64])
def test_out_of_range_floats_wrap_alike_on_ref_and_cpu(source, to):
    # never through ml_dtypes' float -> int cast: 0.6 wraps, 0.7 gives 0 (what a release does
    # to an undefined case must not change graphkiln's results)
    x = np.array(
        [
            -9.5,
            -9,
            -8.5,
            -3,
            -2.5,
            2.5,
            3.9,
            4,
            7.9,
            8,
            15.5,
            16,
            17,
            20,
            300,
            -300,
            1e4,
            -1e4,
            65504,
            np.nan,
            np.inf,
            -np.inf,
            0.5,
            -0.5,
        ],
        source,
    )
    bits, signed = {
        DType.i4: (4, True),
        DType.u4: (4, False),
        DType.i2: (2, True),
        DType.u2: (2, False),
    }[to]
    ref, cpu = run_both(_model(DType.from_numpy(np.dtype(source)), to, x.shape), {"x": x})
    for got in (ref[0], cpu[0]):
        assert got.dtype == to.numpy
        np.testing.assert_array_equal(got.astype(np.int64), _wrapped(x, bits, signed))
