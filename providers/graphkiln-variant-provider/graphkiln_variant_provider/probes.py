# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Find this machine's GPU ISAs and GPU runtime majors; every parser is a pure function of a
tool's output, every probe returns [] when the tool or the GPU is missing.

AMD ISAs: hip-python, else `rocminfo`, else `offload-arch`. ROCm major: hip-python, else
`$ROCM_PATH/.info/version`, else `hipconfig --version`. NVIDIA: `nvidia-smi` (the compute
capability per GPU, and the CUDA version its driver supports).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

NVIDIA_SMI_CAPS = ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def parse_rocminfo(text: str) -> list[str]:
    """`rocminfo`: the `Name: gfxNNN` of each GPU agent (CPU agents skipped), in order."""
    isas = []
    for block in re.split(r"^\*+\s*\n\s*Agent \d+\s*\n\*+\s*$", text, flags=re.MULTILINE)[1:]:
        if not re.search(r"^\s*Device Type:\s*GPU\s*$", block, re.MULTILINE):
            continue
        found = re.search(r"^  Name:\s*(gfx[0-9a-f]+)\S*\s*$", block, re.MULTILINE)
        if found:
            isas.append(found.group(1))
    return _unique(isas)


def parse_offload_arch(text: str) -> list[str]:
    """`offload-arch` / `amdgpu-arch`: one ISA a line (`gfx90a:sramecc+:xnack-` -> gfx90a)."""
    return _unique(re.findall(r"^\s*(gfx[0-9a-f]+)\S*\s*$", text, re.MULTILINE))


def parse_compute_caps(text: str) -> list[str]:
    """`nvidia-smi --query-gpu=compute_cap --format=csv,noheader` (or `name,compute_cap`):
    9.0 -> `90_real`, the sm_arch value of code compiled for that ISA (SASS, not PTX)."""
    values = []
    for line in text.splitlines():
        cap = line.rsplit(",", 1)[-1].strip()
        found = re.fullmatch(r"(\d+)\.(\d+)", cap)
        if found:
            values.append(f"{found.group(1)}{found.group(2)}_real")
    return _unique(values)


def parse_nvidia_smi_cuda_major(text: str) -> list[str]:
    """`nvidia-smi` (no arguments): the header's `CUDA Version: 13.0` -> ["13"]."""
    found = re.search(r"CUDA Version:\s*(\d+)\.\d+", text)
    return [found.group(1)] if found else []


def parse_rocm_version(text: str) -> list[str]:
    """`$ROCM_PATH/.info/version` (6.2.4-120) or `hipconfig --version` (6.2.41134-65d174c3e)
    -> ["6"]."""
    found = re.match(r"\s*(\d+)\.\d+", text)
    return [found.group(1)] if found else []


def hip_version_major(version: int) -> list[str]:
    """hipRuntimeGetVersion()'s HIP_VERSION (major * 10^7 + minor * 10^5 + patch) -> ["6"]."""
    return [str(version // 10_000_000)] if version >= 10_000_000 else []


def _run(argv: list[str]) -> str:
    """The tool's stdout; "" when it is not installed, fails or hangs."""
    if shutil.which(argv[0]) is None:
        return ""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def _hip():
    """hip-python's `hip` module, or None."""
    try:
        from hip import hip  # hip-python
    except ImportError:
        return None
    return hip


def _hip_isas() -> list[str]:
    hip = _hip()
    if hip is None:
        return []
    try:
        err, count = hip.hipGetDeviceCount()
        if err != hip.hipError_t.hipSuccess:
            return []
        isas = []
        for i in range(count):
            props = hip.hipDeviceProp_t()
            hip.hipGetDeviceProperties(props, i)
            arch = props.gcnArchName
            isas.append((arch.decode() if isinstance(arch, bytes) else arch).split(":")[0])
        return _unique(isas)
    except Exception:  # noqa: BLE001 - any hip-python API difference: fall back to the tools
        return []


def _hip_runtime_major() -> list[str]:
    hip = _hip()
    if hip is None:
        return []
    try:
        err, version = hip.hipRuntimeGetVersion()
        return hip_version_major(version) if err == hip.hipError_t.hipSuccess else []
    except Exception:  # noqa: BLE001 - as above
        return []


def amd_isas() -> list[str]:
    """This machine's AMD GPU ISAs (gfx942, ...), from the first probe that finds any."""
    return (
        _hip_isas()
        or parse_rocminfo(_run(["rocminfo"]))
        or parse_offload_arch(_run(["offload-arch"]))
    )


def rocm_majors() -> list[str]:
    """The ROCm (HIP runtime) major installed here: ["6"], or [] when none is found."""
    if found := _hip_runtime_major():
        return found
    version_file = Path(os.environ.get("ROCM_PATH", "/opt/rocm")) / ".info" / "version"
    try:
        if found := parse_rocm_version(version_file.read_text()):
            return found
    except OSError:
        pass
    return parse_rocm_version(_run(["hipconfig", "--version"]))


def nvidia_sm_archs() -> list[str]:
    """This machine's NVIDIA ISAs as sm_arch values (90_real, ...)."""
    return parse_compute_caps(_run(NVIDIA_SMI_CAPS))


def cuda_majors() -> list[str]:
    """The CUDA major the NVIDIA driver supports (nvidia-smi's header): ["13"], or []."""
    return parse_nvidia_smi_cuda_major(_run(["nvidia-smi"]))
