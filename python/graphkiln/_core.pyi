# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Type stub of the C++ extension graphkiln._core."""

def build_info() -> dict[str, object]:
    """version, compiler, gpu_platform ("none" | "amd" | "nvidia"), gpu_targets (ISAs)."""
