# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Every error graphkiln raises on purpose is a graphkiln.GraphkilnError, and a missing
kernel says what is missing as data as well as in words."""

import importlib
import inspect
import pkgutil

import numpy as np
import pytest
from onnx import TensorProto, helper

import graphkiln
from conftest import make_model


def _no_kernel_program():
    """Bernoulli: an op the cpu target has no kernel for."""
    model = make_model(
        [helper.make_node("Bernoulli", ["x"], ["yh"], seed=1.0)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("yh", TensorProto.FLOAT, [2, 3])],
        [],
    )
    return graphkiln.parse_onnx_buffer(model.SerializeToString())


def test_a_lowering_failure_is_caught_as_a_graphkiln_error():
    prog = _no_kernel_program()
    try:
        prog.compile("cpu")
    except graphkiln.GraphkilnError as exc:
        caught = exc
    else:
        pytest.fail("compiling Bernoulli for cpu without fallback should fail")
    assert type(caught) is graphkiln.LoweringError
    assert isinstance(caught, graphkiln.CompileError) and isinstance(caught, ValueError)
    assert str(caught) == (
        "the cpu target has no kernel for Bernoulli (first: node 'yh'); "
        "compile(..., fallback='ref') runs it on ref"
    )
    assert (caught.target, caught.ops, caught.node, caught.fallback) == (
        "cpu",
        ("Bernoulli",),
        "yh",
        "ref",
    )
    assert caught.problem == "the cpu target has no kernel for Bernoulli (first: node 'yh')"


def test_a_gpu_compatibility_failure_is_caught_as_a_graphkiln_error(monkeypatch):
    from graphkiln import device

    monkeypatch.setenv("GRAPHKILN_FAKE_GPU_ARCH", "none")
    try:
        device.require_gpu()
    except graphkiln.GraphkilnError as exc:
        caught = exc
    else:
        pytest.fail("require_gpu() with no GPU should fail")
    assert type(caught) is graphkiln.GpuCompatibilityError
    assert isinstance(caught, RuntimeError)  # as before
    assert "GPU" in str(caught)
    # and through the gpu target, whatever this build is (with or without GPU code)
    with pytest.raises(graphkiln.GraphkilnError):
        _no_kernel_program().compile("gpu")


def test_every_exception_class_of_the_package_is_a_graphkiln_error():
    """Public exception classes, that is: warnings are not raised, and a private class
    (tuning.db._Foreign) never leaves its module."""
    classes = {}
    for info in pkgutil.walk_packages(graphkiln.__path__, "graphkiln."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # e.g. the C++ core's extension itself
            continue
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and not issubclass(obj, Warning)
                and not name.startswith("_")
                and obj.__module__.startswith("graphkiln")
            ):
                classes[f"{obj.__module__}.{name}"] = obj
    assert "graphkiln.targets.native.lower.LoweringError" in classes
    assert "graphkiln.targets.gpu.codegen.CodegenError" in classes
    outside = sorted(n for n, c in classes.items() if not issubclass(c, graphkiln.GraphkilnError))
    assert outside == []


def test_the_error_classes_are_exported():
    for name in ("GraphkilnError", "CompileError", "LoweringError", "GpuCompatibilityError"):
        assert name in graphkiln.__all__ and issubclass(getattr(graphkiln, name), Exception)


def test_running_uncompiled_names_a_target_to_compile_for_not_ref_alone():
    from graphkiln.targets.registry import default_target

    prog = _no_kernel_program()
    with pytest.raises(graphkiln.GraphkilnError) as info:
        prog.run({"x": np.zeros((2, 3), np.float32)})
    assert str(info.value) == (
        f"the program is not compiled: call program.compile({default_target()!r}) before run() "
        f"(targets: {', '.join(graphkiln.available_targets())}; 'ref' is the numpy oracle, "
        "the slowest)"
    )
