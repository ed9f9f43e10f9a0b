# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The GPU executor itself: inputs that already live on the device (read in place through
__cuda_array_interface__ or __dlpack__), errors that name the device and what failed, and
the target's API on a machine without a GPU."""

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.compiler import compile_graph
from graphkiln.targets.gpu.target import GpuTarget
from gpu_testing import gpu_missing, requires_gpu
from op_cases import CASES


def _executable(name):
    model, feeds = CASES[name]()
    program = gk.parse_onnx_buffer(model)
    graph, _ = compile_graph(program.graph, GpuTarget(), {}, False, False)
    ref = program.compile("ref").run(feeds)
    return GpuTarget().compile(graph, {}), [feeds[v.name] for v in graph.inputs], ref


def test_without_a_gpu_compile_says_why():
    if gpu_missing() is None:
        pytest.skip("a GPU is usable here")
    model, _ = CASES["unary_Relu"]()
    with pytest.raises(Exception, match="GPU|gpu|ISA"):
        gk.parse_onnx_buffer(model).compile("gpu")


def test_gpu_is_a_registered_target():
    from graphkiln.targets import registry

    assert "gpu" in registry.registered_targets()
    # available only where the C++ core has GPU code (tests/packaging/test_cpu_only_build.py)
    assert ("gpu" in registry.available_targets()) == registry.gpu_code_built()


@requires_gpu
@pytest.mark.parametrize("protocol", ["cuda_array_interface", "dlpack"])
def test_device_inputs_are_read_in_place(protocol):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    exe, inputs, ref = _executable("mlp_block")

    class CaiOnly:  # exposes only __cuda_array_interface__
        def __init__(self, t):
            self.t, self.shape = t, tuple(t.shape)
            self.__cuda_array_interface__ = t.__cuda_array_interface__

    class DlpackOnly:  # exposes only __dlpack__
        def __init__(self, t):
            self.t, self.shape = t, tuple(t.shape)

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__()

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    wrap = CaiOnly if protocol == "cuda_array_interface" else DlpackOnly
    device = [wrap(torch.from_numpy(np.ascontiguousarray(a)).cuda()) for a in inputs]
    got = exe.run(device)
    np.testing.assert_allclose(got[0], ref[0], rtol=2e-4, atol=2e-5)


@requires_gpu
def test_device_input_of_wrong_shape_is_refused():
    torch = pytest.importorskip("torch")
    exe, inputs, _ = _executable("mlp_block")
    wrong = torch.zeros((1, 2, 3), device="cuda")
    with pytest.raises(ValueError, match="does not match the plan"):
        exe.run([wrong])


@requires_gpu
def test_out_of_memory_names_the_device_and_the_size():
    from graphkiln._native import load_core

    huge = 1 << 50
    with pytest.raises(RuntimeError, match=rf"GPU 0 '.*': out of memory allocating {huge} bytes"):
        load_core().GpuExecutor([], [], huge, [], [])


@requires_gpu
def test_plan_summary_names_device_and_blas():
    exe, inputs, ref = _executable("matmul_batched")
    exe.run(inputs)
    summary = exe.plan_summary()
    assert "GPU 0" in summary["device"]
    assert summary["blas"]
    np.testing.assert_allclose(exe.run(inputs)[0], ref[0], rtol=2e-4, atol=2e-5)
