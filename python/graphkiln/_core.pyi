# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Type stub of the C++ extension graphkiln._core."""

def build_info() -> dict[str, object]:
    """version, compiler, gpu_platform ("none" | "amd" | "nvidia"), gpu_targets (ISAs),
    gpu_toolkit ("HIP 5.2.21153" | "CUDA 13.0" | "" when CPU only). No GPU runtime call."""

def gpu_probe_info() -> dict[str, object]:
    """runtime_version, driver_version, device_count, kernel_ran, error. Initializes the GPU
    runtime; raises RuntimeError in a CPU-only build."""
