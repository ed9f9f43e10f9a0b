# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`graphkiln doctor`: what is installed, what it was built with, what GPUs are here, and
whether the installed wheel carries code for them."""

from __future__ import annotations

import platform

from .. import __version__, env
from ..device import check_gpu_compatibility


def _distribution_lines(verdict) -> list[str]:
    lines = [f"distribution: {verdict.distribution} (package version {__version__})"]
    try:
        from .._native import load_core

        _core = load_core()
    except ImportError as exc:
        return lines + [f"C++ core: not importable ({exc}); install graphkiln with pip to build it"]
    lines.append(f"C++ core: {_core.__file__}")
    return lines + _hip_runtime_lines() + _gpu_library_lines(_core)


def _gpu_library_lines(_core) -> list[str]:
    """A GPU module: which library runs convolutions (cuDNN, MIOpen, or graphkiln's kernels)."""
    statuses = [
        status()
        for status in (
            getattr(_core, "gpu_cudnn_status", None),
            getattr(_core, "gpu_miopen_status", None),
        )
        if status is not None
    ]
    if not statuses:
        return []
    library = next((s for s in statuses if not s.startswith("off")), None)
    if library:
        return [f"convolutions: {'cuDNN' if library == 'cudnn' else 'MIOpen'}"]
    why = "; ".join(s.removeprefix("off: ") for s in statuses)
    return [f"convolutions: graphkiln's kernels ({why})"]


def _hip_runtime_lines() -> list[str]:
    """A ROCm build (it carries graphkiln/_cpu_only): the HIP runtime it found, or why not."""
    from .._native import gpu_runtime_problem, hip_runtime_loaded

    runtime, problem = hip_runtime_loaded(), gpu_runtime_problem()
    if runtime is None and problem is None:
        return []
    found = f"HIP runtime: {runtime}" if runtime else "HIP runtime: none found"
    return [found + ("" if problem is None else " (the CPU-only module serves: see GPU check)")]


def _build_lines(build: dict) -> list[str]:
    if not build:
        return []
    isas = ", ".join(build["gpu_targets"]) or "none"
    toolkit = build.get("gpu_toolkit") or "no GPU toolkit"
    return [
        f"build: {build['version']} built with {build['compiler']}; GPU platform "
        f"{build['gpu_platform']}, ISAs {isas}, {toolkit}"
    ]


def _device_lines(verdict) -> list[str]:
    if not verdict.devices:
        return ["GPUs: none found (hip-python, offload-arch, rocminfo, nvidia-smi)"]
    return ["GPUs:"] + [
        f"  {i}: {d.name} ({d.arch}, from {d.source})" for i, d in enumerate(verdict.devices)
    ]


def run_doctor(args) -> int:
    import numpy
    import onnx

    from ..targets.registry import available_targets, registered_targets

    verdict = check_gpu_compatibility()
    print(f"graphkiln {__version__} on Python {platform.python_version()} ({platform.machine()})")
    print(f"numpy {numpy.__version__}, onnx {onnx.__version__}")
    for line in _distribution_lines(verdict) + _build_lines(verdict.build) + _device_lines(verdict):
        print(line)
    available = available_targets()
    unbuilt = [t for t in registered_targets() if t not in available]
    print(
        f"targets: {', '.join(available)}" + "".join(f" ({t}: not in this build)" for t in unbuilt)
    )
    variables = env.set_variables()
    print(
        "environment:",
        ", ".join(f"{k}={v}" for k, v in variables.items()) or "no GRAPHKILN_* variable set",
    )
    print(f"GPU check: {verdict.status}")
    for line in verdict.message.splitlines():
        print(f"  {line}")
    return 0
