# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The cpu's selections of run-decided length (Unique, Compress, NonZero: lower_select.py,
src/cpu/unique.cpp, select.cpp) and Det (lower_linalg.py, det.cpp), against ref: outputs
cut to the count the kernel reports, mid-graph (cut outputs read by ref nodes with
fallback='ref', static outputs read by the plan's own nodes), across runs of other lengths
and through a saved program."""

import ml_dtypes
import numpy as np
import pytest

import graphkiln as gk

from cpu_testing import check_cpu, node, onnx_model, rand

BF16 = ml_dtypes.bfloat16
I64 = np.int64


def repeated(shape, seed, dtype, values=5):
    """Seeded data drawing from a few distinct values (negative ones too), so that
    Unique finds repeats and NonZero finds zeros."""
    rng = np.random.default_rng(seed)
    data = rng.integers(-values // 2, values - values // 2, size=shape)
    if np.dtype(dtype).kind == "f" or dtype == BF16:
        data = data * 0.75
    return data.astype(dtype)


def exact(model, feeds, **options):
    return check_cpu(model, feeds, rtol=0, atol=0, **options)


def unique_model(shape, dtype, sorted_, axis, outputs=("y", "idx", "inv", "cnt")):
    attrs = {"sorted": sorted_} if axis is None else {"sorted": sorted_, "axis": axis}
    dtypes = {"x": dtype, "y": dtype, "idx": I64, "inv": I64, "cnt": I64}
    return onnx_model(
        [node("Unique", ["x"], list(outputs), **attrs)],
        {"x": shape},
        {o: None for o in outputs if o},
        dtypes=dtypes,
    )


# -- Unique -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, BF16, np.uint8])
@pytest.mark.parametrize("sorted_", [1, 0])
@pytest.mark.parametrize(
    "shape, axis", [((17,), None), ((4, 6), None), ((6, 3), 0), ((3, 7), 1), ((2, 5, 3), -2)]
)
def test_unique(dtype, sorted_, shape, axis):
    x = repeated(shape, 3, dtype)
    if axis is not None:  # slices drawn from three, so that they repeat
        picks = np.random.default_rng(4).integers(0, 3, shape[axis])
        x = np.take(np.take(x, [0, 1, 2], axis=axis), picks, axis=axis)
    if dtype == np.uint8:
        x = (x.astype(np.int64) + 3).astype(np.uint8)
    out = exact(unique_model(shape, dtype, sorted_, axis), {"x": x})
    n = x.size if axis is None else shape[axis]
    assert 0 < len(out[1]) < n  # repeats were found and cut away


def test_unique_floats_nan_and_signed_zero():
    x = np.array([1.5, np.nan, -0.0, 2.0, 0.0, np.nan, 1.5, -3.0], np.float32)
    for sorted_ in (0, 1):
        model = unique_model(x.shape, np.float32, sorted_, None)
        got = gk.parse_onnx_buffer(model).compile("cpu").run({"x": x})
        want = gk.parse_onnx_buffer(model).compile("ref").run({"x": x})
        for g, w in zip(got, want):  # NaN equal to NaN, the sign of zero compared too
            np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))
        assert len(got[0]) == 5  # the NaNs are one value, as -0.0 and 0.0 are


def test_unique_with_only_y_and_counts():
    x = repeated((20,), 5, np.int64)
    out = exact(unique_model(x.shape, np.int64, 1, None, ("y", "", "", "cnt")), {"x": x})
    assert out[1].sum() == x.size


def test_unique_cut_output_read_by_ref_nodes_and_inverse_by_the_plan():
    """Y (cut) feeds an Add that runs on ref; inverse_indices (static) feeds the plan's own
    Cast / Mul, in the same plan as the Unique."""
    model = onnx_model(
        [
            node("Unique", ["x"], ["u", "", "inv", ""]),
            node("Add", ["u", "one"], ["y"]),
            node("Cast", ["inv"], ["inv_f"], to=1),
            node("Mul", ["inv_f", "x"], ["z"]),
        ],
        {"x": (30,)},
        {"y": None, "z": (30,)},
        {"one": np.array([1.0], np.float32)},
        dtypes={"inv": I64},
    )
    program = gk.parse_onnx_buffer(model).compile("cpu", fallback="ref")
    lengths = set()
    for seed in (1, 2, 3):  # different data, different lengths: nothing left from a run
        feeds = {"x": repeated((30,), seed, np.float32, values=3 + 2 * seed)}
        got = program.run(feeds)
        want = gk.parse_onnx_buffer(model).compile("ref").run(feeds)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        lengths.add(len(got[0]))
    assert len(lengths) == 3


def test_unique_with_only_the_static_inverse_as_output():
    """No cut output leaves the plan: no hidden count output either (the direct runner)."""
    model = onnx_model(
        [node("Unique", ["x"], ["", "", "inv"], sorted=0)],
        {"x": (3, 4)},
        {"inv": (12,)},
        dtypes={"x": np.int32, "inv": I64},
    )
    out = exact(model, {"x": repeated((3, 4), 9, np.int32)})
    assert len(out) == 1 and out[0].max() < 11


def test_unique_in_a_saved_and_loaded_program_is_cut():
    model = unique_model((24,), np.int32, 0, None)
    program = gk.parse_onnx_buffer(model).compile("cpu")
    loaded = gk.load_buffer(gk.save_buffer(program))
    for seed in (7, 8):
        feeds = {"x": repeated((24,), seed, np.int32, values=4 + 4 * (seed - 7))}
        oracle = gk.parse_onnx_buffer(model).compile("ref").run(feeds)
        got = loaded.run(feeds)
        assert len(got) == 4
        for g, o in zip(got, oracle):
            np.testing.assert_array_equal(g, o)


# -- Compress -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int64, np.bool_])
@pytest.mark.parametrize(
    "shape, axis, length",
    [((3, 4), None, 12), ((3, 4), None, 5), ((5, 3), 0, 5), ((2, 6, 2), 1, 4), ((4, 5), -1, 5)],
)
def test_compress_run_time_condition(dtype, shape, axis, length):
    attrs = {} if axis is None else {"axis": axis}
    model = onnx_model(
        [node("Compress", ["x", "c"], ["y"], **attrs)],
        {"x": shape, "c": (length,)},
        {"y": None},
        dtypes={"x": dtype, "c": np.bool_, "y": dtype},
    )
    x = rand(shape, 11, np.float32, -4, 4).astype(dtype)
    kept = set()
    for seed in (12, 13, 14):
        c = rand((length,), seed, np.bool_)
        out = exact(model, {"x": x, "c": c})[0]
        kept.add(int(c.sum()))
        assert out.size == 0 or int(c.sum()) in out.shape
    none = exact(model, {"x": x, "c": np.zeros(length, bool)})[0]
    assert 0 in none.shape


def test_compress_constant_condition_read_by_the_plan():
    """A constant condition: static dims, an exact slot the next node reads natively."""
    model = onnx_model(
        [node("Compress", ["x", "c"], ["s"], axis=1), node("Neg", ["s"], ["y"])],
        {"x": (3, 5)},
        {"y": (3, 2)},
        {"c": np.array([False, True, False, True], bool)},
    )
    exact(model, {"x": rand((3, 5), 15)})


def test_compress_condition_true_past_the_axis_raises():
    model = onnx_model(
        [node("Compress", ["x", "c"], ["y"], axis=0)],
        {"x": (3,), "c": (4,)},
        {"y": None},
        dtypes={"c": np.bool_},
    )
    program = gk.parse_onnx_buffer(model).compile("cpu")
    with pytest.raises(Exception, match="past the axis"):
        program.run({"x": rand((3,), 16), "c": np.array([True, False, False, True])})


# -- NonZero ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, BF16, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("shape", [(9,), (3, 4), (2, 3, 4)])
def test_nonzero(dtype, shape):
    x = repeated(shape, 21, np.float32, values=3).astype(dtype)
    model = onnx_model(
        [node("NonZero", ["x"], ["y"])], {"x": shape}, {"y": None}, dtypes={"x": dtype, "y": I64}
    )
    out = exact(model, {"x": x})[0]
    assert out.shape[0] == len(shape) and 0 < out.shape[1] < x.size


def test_nonzero_nan_is_nonzero_and_negative_zero_is_not():
    x = np.array([0.0, -0.0, np.nan, 1.0, 0.0], np.float32)
    model = onnx_model([node("NonZero", ["x"], ["y"])], {"x": (5,)}, {"y": None}, dtypes={"y": I64})
    np.testing.assert_array_equal(exact(model, {"x": x})[0], [[2, 3]])


def test_nonzero_feeds_transpose_and_gather_on_ref():
    """The cut coordinates [rank, count] read by ref nodes (fallback='ref'), runs of other
    counts."""
    model = onnx_model(
        [
            node("NonZero", ["x"], ["nz"]),
            node("Transpose", ["nz"], ["t"], perm=[1, 0]),
            node("GatherND", ["x", "t"], ["v"]),
            node("Gather", ["nz", "zero"], ["rows"], axis=0),
        ],
        {"x": (4, 5)},
        {"t": None, "v": None, "rows": None},
        {"zero": np.array(0, I64)},
        dtypes={"t": I64, "rows": I64},
    )
    program = gk.parse_onnx_buffer(model).compile("cpu", fallback="ref")
    counts = set()
    for seed in (31, 32):
        x = repeated((4, 5), seed, np.float32, values=2 + seed - 31)
        want = gk.parse_onnx_buffer(model).compile("ref").run({"x": x})
        got = program.run({"x": x})
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        assert np.all(got[1] != 0)
        counts.add(got[0].shape[0])
    assert len(counts) == 2


# -- Det ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (6, 6), (2, 3, 4, 4)])
def test_det(dtype, shape):
    model = onnx_model(
        [node("Det", ["x"], ["y"])],
        {"x": shape},
        {"y": shape[:-2]},
        dtypes={"x": dtype, "y": dtype},
    )
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    check_cpu(model, {"x": rand(shape, 41, dtype, -2, 2)}, rtol=rtol, atol=rtol)


def test_det_singular_and_pivoting():
    x = np.array([[[1, 2, 3], [2, 4, 6], [0, 1, 1]], [[0, 1, 0], [1, 0, 0], [0, 0, 1]]], np.float64)
    model = onnx_model(
        [node("Det", ["x"], ["y"])],
        {"x": (2, 3, 3)},
        {"y": (2,)},
        dtypes={"x": np.float64, "y": np.float64},
    )
    out = check_cpu(model, {"x": x}, rtol=1e-12, atol=1e-12)[0]
    np.testing.assert_array_equal(out, [0.0, -1.0])
