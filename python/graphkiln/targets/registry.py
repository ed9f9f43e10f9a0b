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


def available_targets() -> list[str]:
    return sorted(_TARGETS)


def get_target(name) -> Target:
    if isinstance(name, Target):
        return name
    if not isinstance(name, str) or name not in _TARGETS:
        raise ValueError(f"unknown target {name!r}; available: {', '.join(available_targets())}")
    module, cls = _TARGETS[name]
    return getattr(importlib.import_module(module), cls)()


def default_target() -> str:
    """cpu when graphkiln's C++ core loads here, else ref."""
    try:
        from .._native import load_core

        load_core()
    except ImportError:
        return "ref"
    return "cpu"
