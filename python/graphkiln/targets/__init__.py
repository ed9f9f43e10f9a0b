# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Compilation targets: ref (numpy oracle); cpu and gpu arrive with the C++ core."""

from .base import Executable, Target
from .registry import available_targets, get_target

__all__ = ["Executable", "Target", "available_targets", "get_target"]
