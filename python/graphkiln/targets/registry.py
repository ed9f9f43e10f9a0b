# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Target name -> module that provides it; imported on first use."""

from __future__ import annotations

import importlib

from .base import Target

_TARGETS = {
    "ref": ("graphkiln.targets.ref.target", "RefTarget"),
    "cpu": ("graphkiln.targets.cpu.target", "CpuTarget"),
    "gpu": ("graphkiln.targets.gpu.target", "GpuTarget"),
}


def registered_targets() -> list[str]:
    """Every target name `get_target` and `Program.compile` accept, sorted, whether or not
    this build can run it (compiling for one it cannot run says why)."""
    return sorted(_TARGETS)


def available_targets() -> list[str]:
    """The targets this build of graphkiln has, sorted (e.g. ["cpu", "gpu", "ref"]): `gpu`
    only where the C++ core was built with GPU code (a GPU wheel or GPU_TARGETS build). A
    target listed may still fail to compile here: cpu needs the C++ core, gpu a GPU this build
    has code for (`graphkiln.check_gpu_compatibility()`)."""
    return [name for name in registered_targets() if name != "gpu" or gpu_code_built()]


def gpu_code_built() -> bool:
    """Whether graphkiln._core loads here and was built with GPU code."""
    from ..device import has_gpu_code

    try:
        from .._native import load_core

        build = load_core().build_info()
    except ImportError:
        return False
    return has_gpu_code(build)


def get_target(name, **defaults) -> Target:
    """The target named `name` (one of `registered_targets()`), a new instance; a Target is
    returned as it is. Any other name is a ValueError listing the available ones. `defaults`
    are compile options the target keeps (`get_target("gpu", device=1)`), checked now; the
    options of a compile override them."""
    if isinstance(name, Target):
        if defaults:
            raise ValueError("get_target: options go with a target name, not a Target")
        return name
    if not isinstance(name, str) or name not in _TARGETS:
        unbuilt = [t for t in registered_targets() if t not in available_targets()]
        raise ValueError(
            f"unknown target {name!r}; available: {', '.join(available_targets())}"
            + "".join(f" ({t}: not in this build)" for t in unbuilt)
        )
    module, cls = _TARGETS[name]
    target = getattr(importlib.import_module(module), cls)()
    if defaults:
        target.check_options(defaults)
        target.defaults = dict(defaults)
    return target


def default_target() -> str:
    """cpu when graphkiln's C++ core loads here, else ref."""
    try:
        from .._native import load_core

        load_core()
    except ImportError:
        return "ref"
    return "cpu"
