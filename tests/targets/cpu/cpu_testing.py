# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Helpers for the cpu target's tests: build a small ONNX model, run it on `ref` (the
oracle, plain) and on `cpu`, and compare.

    model = onnx_model([node("Relu", ["x"], ["y"])], {"x": (2, 3)}, {"y": (2, 3)})
    check_cpu(model, {"x": rand((2, 3))})
"""

import threading

import ml_dtypes
import numpy as np
import onnx
from onnx import helper, numpy_helper

import graphkiln as gk

_ONNX_TYPES = {
    np.dtype(k): v
    for k, v in {
        np.float32: onnx.TensorProto.FLOAT,
        np.float64: onnx.TensorProto.DOUBLE,
        np.float16: onnx.TensorProto.FLOAT16,
        ml_dtypes.bfloat16: onnx.TensorProto.BFLOAT16,
        np.int64: onnx.TensorProto.INT64,
        np.int32: onnx.TensorProto.INT32,
        np.int16: onnx.TensorProto.INT16,
        np.int8: onnx.TensorProto.INT8,
        np.uint8: onnx.TensorProto.UINT8,
        np.uint16: onnx.TensorProto.UINT16,
        np.uint32: onnx.TensorProto.UINT32,
        np.bool_: onnx.TensorProto.BOOL,
    }.items()
}

node = helper.make_node


def rand(shape, seed=0, dtype=np.float32, low=-1.0, high=1.0):
    """Seeded uniform data in [low, high) (never all zeros)."""
    rng = np.random.default_rng(seed)
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(int(low), int(high), size=shape).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    return rng.uniform(low, high, size=shape).astype(dtype)


def onnx_model(
    nodes,
    inputs: dict,
    outputs: dict,
    initializers: dict | None = None,
    opset: int = 21,
    dtypes: dict | None = None,
) -> bytes:
    """A serialized model. `inputs`/`outputs`: name -> shape (float32 unless `dtypes` names
    another numpy dtype); `initializers`: name -> numpy array."""
    dtypes = dtypes or {}

    def info(name, shape):
        return helper.make_tensor_value_info(
            name, _ONNX_TYPES[np.dtype(dtypes.get(name, np.float32))], shape
        )

    graph = helper.make_graph(
        nodes,
        "test",
        [info(k, v) for k, v in inputs.items()],
        [info(k, v) for k, v in outputs.items()],
        [numpy_helper.from_array(np.asarray(a), k) for k, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return model.SerializeToString()


def run_both(model: bytes, feeds: dict, **options):
    ref = gk.parse_onnx_buffer(model).compile("ref").run(feeds)
    cpu = gk.parse_onnx_buffer(model).compile("cpu", **options).run(feeds)
    return ref, cpu


def check_cpu(model: bytes, feeds: dict, rtol=1e-5, atol=1e-6, **options):
    """cpu's outputs equal ref's: same dtype and shape, values within rtol/atol
    (atol scaled by the largest |ref| value); integers and booleans exactly."""
    ref, cpu = run_both(model, feeds, **options)
    assert len(ref) == len(cpu)
    for r, c in zip(ref, cpu):
        r, c = np.asarray(r), np.asarray(c)
        assert c.dtype == r.dtype, (c.dtype, r.dtype)
        assert c.shape == r.shape, (c.shape, r.shape)
        if np.issubdtype(r.dtype, np.floating):
            scale = float(np.max(np.abs(r))) if r.size else 0.0
            np.testing.assert_allclose(c, r, rtol=rtol, atol=atol * max(scale, 1.0))
        else:
            np.testing.assert_array_equal(c, r)
    return cpu


def check_concurrent_runs(model: bytes, inputs: list, rtol=1e-4, atol=1e-5, repeats=5):
    """One cpu program run from a thread per feed dict in `inputs`, `repeats` times each, at
    once: every run's first output equals ref's for its feeds (atol scaled by the largest
    |ref| value). The first failure is raised after all threads end."""
    program = gk.parse_onnx_buffer(model).compile("cpu")
    ref = gk.parse_onnx_buffer(model).compile("ref")
    expected = [ref.run(feeds)[0] for feeds in inputs]
    errors = []

    def worker(i):
        try:
            scale = max(float(np.abs(expected[i]).max()), 1.0)
            for _ in range(repeats):
                got = program.run(inputs[i])[0]
                np.testing.assert_allclose(got, expected[i], rtol=rtol, atol=atol * scale)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def onednn_int8() -> bool:
    """Whether the cpu target puts integer convolutions / matmuls on oneDNN's int8 kernels
    on this machine (VNNI / AMX; without them the portable integer kernels run, exact:
    targets/cpu/int8_isa.py)."""
    from graphkiln.targets.cpu.int8_isa import onednn_int8_exact

    return onednn_int8_exact()
