# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Device-resident inputs and outputs on the gpu target: `run(feeds, outputs="device")`
returns DeviceArray objects that PyTorch reads in place (__dlpack__, __cuda_array_interface__),
and with PyTorch CUDA tensors in and device arrays out a run copies nothing through the host
(`_core.gpu_run_transfer_bytes()` counts what runs copy in and out). Targets without device
outputs refuse the option by name."""

import numpy as np
import pytest

import graphkiln as gk
from gpu_testing import requires_gpu
from op_cases import CASES


def _ref(model, feeds):
    return gk.parse_onnx_buffer(model).compile("ref").run(feeds)


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * (np.abs(want).max() + 1))


def test_cpu_refuses_device_outputs_by_name():
    model, feeds = CASES["mlp_block"]()
    program = gk.parse_onnx_buffer(model).compile("cpu")
    with pytest.raises(ValueError, match="outputs='device': the cpu target returns numpy"):
        program.run(feeds, outputs="device")
    with pytest.raises(ValueError, match="accepted values are 'numpy' and 'device'"):
        program.run(feeds, outputs="cuda")


@requires_gpu
def test_device_outputs_are_read_in_place_by_torch():
    torch = pytest.importorskip("torch")
    model, feeds = CASES["mlp_block"]()
    want = _ref(model, feeds)
    program = gk.parse_onnx_buffer(model).compile("gpu")
    for _ in range(3):  # kernel by kernel, capture, replay
        outs = program.run(feeds, outputs="device")
        for out, w in zip(outs, want):
            assert out.shape == w.shape and out.dtype == w.dtype
            assert out.__cuda_array_interface__["data"][0] != 0
            by_dlpack = torch.from_dlpack(out)
            assert by_dlpack.is_cuda
            assert by_dlpack.data_ptr() == out.__cuda_array_interface__["data"][0]  # no copy
            _close(by_dlpack.cpu().numpy(), w)
            _close(torch.as_tensor(out, device="cuda").cpu().numpy(), w)
            _close(out.numpy(), w)
            _close(np.asarray(out), w)


@requires_gpu
def test_device_in_device_out_copies_nothing_through_the_host():
    torch = pytest.importorskip("torch")
    from graphkiln._native import load_core

    core = load_core()
    model, feeds = CASES["mlp_block"]()
    want = _ref(model, feeds)
    program = gk.parse_onnx_buffer(model).compile("gpu")
    on_device = {k: torch.from_numpy(v).cuda() for k, v in feeds.items()}
    torch.cuda.synchronize()
    program.run(on_device, outputs="device")  # the plan is built; its first run
    before = core.gpu_run_transfer_bytes()
    for _ in range(3):
        outs = program.run(on_device, outputs="device")
    assert core.gpu_run_transfer_bytes() == before
    for out, w in zip(outs, want):
        _close(torch.from_dlpack(out).cpu().numpy(), w)
    # numpy in and out copies both ways, and the counter sees it
    program.run(feeds)
    h2d, d2h = core.gpu_run_transfer_bytes()
    assert h2d > before[0] and d2h > before[1]


@requires_gpu
def test_device_outputs_outlive_the_program():
    pytest.importorskip("torch")
    model, feeds = CASES["mlp_block"]()
    want = _ref(model, feeds)
    program = gk.parse_onnx_buffer(model).compile("gpu")
    outs = program.run(feeds, outputs="device")
    del program
    for out, w in zip(outs, want):
        _close(out.numpy(), w)


def test_cpu_refuses_run_into_by_name():
    model, feeds = CASES["mlp_block"]()
    program = gk.parse_onnx_buffer(model).compile("cpu")
    with pytest.raises(ValueError, match="run_into: the cpu target returns numpy arrays"):
        program.run_into(feeds, [np.zeros(1)])


@requires_gpu
def test_run_into_fixed_buffers_replays_and_copies_nothing_through_the_host():
    torch = pytest.importorskip("torch")
    from graphkiln._native import load_core

    core = load_core()
    model, feeds = CASES["mlp_block"]()
    program = gk.parse_onnx_buffer(model).compile("gpu")
    names = program.get_output_names()
    shapes = [t.dims for t in program.get_output_shapes()]
    buffers = {n: torch.empty(tuple(s), device="cuda") for n, s in zip(names, shapes)}
    rng = np.random.default_rng(3)
    before = None
    for k in range(4):
        run_feeds = {
            name: rng.standard_normal(v.shape).astype(v.dtype) if v.dtype.kind == "f" else v
            for name, v in feeds.items()
        }
        on_device = {name: torch.from_numpy(v).cuda() for name, v in run_feeds.items()}
        torch.cuda.synchronize()
        if k == 1:
            before = core.gpu_run_transfer_bytes()
        program.run_into(on_device, buffers)
        for name, w in zip(names, _ref(model, run_feeds)):
            _close(buffers[name].cpu().numpy(), w)
    assert core.gpu_run_transfer_bytes() == before
    assert program._executable.plan_summary()["graph"] == "replaying"
    with pytest.raises(ValueError, match="output array 0 does not match the plan"):
        program.run_into(feeds, [torch.empty((1, 1), device="cuda")] * len(names))
    with pytest.raises(ValueError, match="missing"):
        program.run_into(feeds, {})


class _FakeDeviceArray:
    """Only the interface: what check_feeds reads of a GPU array (never run)."""

    def __init__(self, shape, typestr):
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": typestr,
            "data": (0, False),
            "version": 3,
        }


def test_feeds_of_gpu_arrays_are_checked_by_shape_and_dtype():
    model, feeds = CASES["mlp_block"]()
    program = gk.parse_onnx_buffer(model).compile("cpu")
    ((name, value),) = [(k, v) for k, v in feeds.items() if v.dtype.kind == "f"][:1]
    with pytest.raises(ValueError, match=rf"input '{name}': expected dtype f32.*got float64"):
        program.run({**feeds, name: _FakeDeviceArray(value.shape, "<f8")})
    with pytest.raises(ValueError, match=rf"input '{name}': dim 0 is fixed at"):
        program.run({**feeds, name: _FakeDeviceArray((99,) + value.shape[1:], "<f4")})
    # right shape and dtype: the cpu target says it reads host arrays
    with pytest.raises(TypeError, match="is a GPU array .* the cpu target reads host arrays"):
        program.run({**feeds, name: _FakeDeviceArray(value.shape, "<f4")})
