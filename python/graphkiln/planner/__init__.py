# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Memory planning: liveness, in-place reuse and buffer coloring into one arena."""

from .memory import MemoryPlan, plan_memory

__all__ = ["MemoryPlan", "plan_memory"]
