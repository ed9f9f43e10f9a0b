# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""One compiled program run from 8 threads at once gives each thread its own right answer."""

import os
import threading

import numpy as np

import graphkiln

EXAMPLE = os.path.join(os.path.dirname(graphkiln.__file__), "models", "example_cnn.onnx")


def test_eight_threads_share_one_compiled_program():
    prog = graphkiln.parse_onnx(EXAMPLE).compile("ref")
    ((name, t),) = prog.get_parameter_shapes().items()
    feeds = [np.random.default_rng(i).standard_normal(t.dims).astype(np.float32) for i in range(8)]
    expected = [prog.run({name: x}) for x in feeds]  # one thread, one run at a time
    results: dict[int, list] = {}
    errors = []
    barrier = threading.Barrier(8)

    def work(i):
        try:
            barrier.wait()
            results[i] = [prog.run({name: feeds[i]}) for _ in range(20)]
        except BaseException as exc:  # noqa: BLE001  reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for i in range(8):
        for outputs in results[i]:
            for got, want in zip(outputs, expected[i]):
                np.testing.assert_array_equal(got, want)


def test_runs_cannot_change_shared_constants(add_relu_model):
    # add_relu's weight is float_data, which numpy_helper turns into a writable array
    prog = graphkiln.parse_onnx_buffer(add_relu_model.SerializeToString()).compile("ref")
    constants = [n.attrs["value"] for n in prog.compiled_graph.nodes if n.op == "Constant"]
    assert constants and not any(c.flags.writeable for c in constants)


def test_outputs_are_private_writable_arrays(add_relu_model):
    from onnx import TensorProto, helper
    from conftest import make_model

    w = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
    model = make_model(
        [helper.make_node("Identity", ["w"], ["y"])],
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [w],
    )
    prog = graphkiln.parse_onnx_buffer(model.SerializeToString()).compile("ref")
    (first,) = prog.run({})
    first[:] = 0  # the caller owns its outputs
    (second,) = prog.run({})
    np.testing.assert_array_equal(second, [1.0, 2.0])
