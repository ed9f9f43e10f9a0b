# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The ONNX backend node cases, generated from the installed onnx package, and how one is
run on a graphkiln target and scored (floats rtol 1e-3 / atol 1e-7; the rest exactly), on
what ONNX defines only (scoring.py: out-of-range float -> integer casts, random outputs)."""

from __future__ import annotations

import functools
import os
import warnings

import numpy as np
import onnx
from onnx import numpy_helper

import graphkiln
from scoring import random_checks, undefined_elements

RTOL, ATOL = 1e-3, 1e-7
HERE = os.path.dirname(os.path.abspath(__file__))


@functools.lru_cache(maxsize=1)
def all_cases() -> dict:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)  # None: every op (onnx < 1.23 has no default)
    return {c.name: c for c in cases}


def expected_failures(target: str) -> dict[str, str]:
    """name -> one-line reason, from expected_failures_<target>.txt."""
    path = os.path.join(HERE, f"expected_failures_{target}.txt")
    result = {}
    if not os.path.exists(path):
        return result
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, reason = line.partition("#")
            result[name.strip()] = reason.strip()
    return result


def to_value(data):
    """A data-set entry (array, TensorProto, scalar, list, None) as a graphkiln feed."""
    if data is None:
        return None
    if isinstance(data, onnx.TensorProto):
        array = numpy_helper.to_array(data)
        if data.data_type == onnx.TensorProto.STRING:
            array = (
                np.vectorize(lambda s: s.decode() if isinstance(s, bytes) else s, otypes=[object])(
                    array
                )
                if array.size
                else array.astype(object)
            )
        return array
    if isinstance(data, list):
        return [to_value(x) for x in data]
    array = np.asarray(data)
    if array.dtype.kind in "US":
        array = array.astype(object)
    return array


def run_case(case, target: str = "ref", **options) -> None:
    """Raise AssertionError (or a graphkiln error) unless every data set matches."""
    model = case.model
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString(), default_dim=None)
    prog.compile(target, **options)
    init = {t.name for t in model.graph.initializer}
    names = [vi.name for vi in model.graph.input if vi.name not in init]
    for inputs, expected in case.data_sets:
        feeds = {name: to_value(x) for name, x in zip(names, inputs)}
        got = prog.run(feeds)
        assert len(got) >= len(expected), f"{len(got)} outputs, expected {len(expected)}"
        undefined, drawn = undefined_elements(model, feeds), random_checks(model, feeds)
        for i, (g, e) in enumerate(zip(got, expected)):
            if i in drawn:
                drawn[i](got, to_value(e), f"output {i}")
            else:
                compare(g, to_value(e), f"output {i}", undefined.get(i))


def compare(got, expected, where: str, undefined=None) -> None:
    """`undefined`: a bool mask of the elements ONNX leaves open, not compared."""
    if isinstance(expected, list):
        assert isinstance(got, list), f"{where}: expected a sequence, got {type(got).__name__}"
        assert len(got) == len(expected), (
            f"{where}: sequence of {len(got)}, expected {len(expected)}"
        )
        for i, (g, e) in enumerate(zip(got, expected)):
            compare(g, e, f"{where}[{i}]")
        return
    if expected is None:
        assert got is None, f"{where}: expected an empty optional"
        return
    got = np.asarray(got)
    assert got.shape == expected.shape, f"{where}: shape {got.shape}, expected {expected.shape}"
    assert _kind(got.dtype) == _kind(expected.dtype), (
        f"{where}: dtype {got.dtype}, expected {expected.dtype}"
    )
    if undefined is not None:
        got, expected = got[~undefined], expected[~undefined]
    if expected.dtype.kind == "c":
        np.testing.assert_allclose(
            got, expected, rtol=RTOL, atol=ATOL, equal_nan=True, err_msg=where
        )
    elif _is_float(expected.dtype):
        np.testing.assert_allclose(
            got.astype(np.float64),
            expected.astype(np.float64),
            rtol=RTOL,
            atol=ATOL,
            equal_nan=True,
            err_msg=where,
        )
    else:
        assert np.array_equal(got, expected), f"{where}: values differ\n{got}\n!=\n{expected}"


def _kind(dtype) -> str:
    """Dtypes must be equal, except that str/object arrays count as one."""
    return "str" if dtype.kind in "OUS" else str(dtype)


def _is_float(dtype) -> bool:
    from graphkiln.ir import DType

    try:
        return DType.from_numpy(dtype).is_float
    except ValueError:
        return False
