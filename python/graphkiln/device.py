# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""What GPUs this machine has, and whether this build of graphkiln carries code for them.

The check runs before any GPU code loads: a HIP runtime that meets a device whose ISA is not
in the binary aborts at the first HIP call ("hipErrorNoBinaryForGpu"), before an application
could ask anything. So devices are found without graphkiln's GPU runtime: `hip-python` when
installed, else `offload-arch` / `rocminfo`, else `nvidia-smi`. This module imports only the
standard library at load time, so tools/detect_gpu_targets.py can load it by path at CMake
configure time (GPU_TARGETS=native), where numpy may not be installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field

FAKE_ARCH_VARIABLE = "GRAPHKILN_FAKE_GPU_ARCH"


@dataclass(frozen=True)
class Device:
    name: str
    arch: str  # the ISA: gfx90a, gfx1100, sm_90
    source: str  # which probe found it

    @property
    def platform(self) -> str:
        return "amd" if self.arch.startswith("gfx") else "nvidia"


def normalize_arch(arch: str) -> str:
    """gfx90a:sramecc+:xnack- -> gfx90a; 9.0 (nvidia-smi compute_cap) -> sm_90."""
    arch = arch.strip().split(":")[0]
    cap = re.fullmatch(r"(\d+)\.(\d+)", arch)
    return f"sm_{cap.group(1)}{cap.group(2)}" if cap else arch


def parse_offload_arch(text: str) -> list[Device]:
    """`offload-arch` / `amdgpu-arch` / `nvptx-arch`: one ISA a line."""
    archs = re.findall(r"^\s*((?:gfx[0-9a-f]+|sm_\d+)\S*)\s*$", text, re.MULTILINE)
    return [Device(f"GPU {i}", normalize_arch(a), "offload-arch") for i, a in enumerate(archs)]


def parse_rocminfo(text: str) -> list[Device]:
    """`rocminfo`: one block per agent; GPU agents carry `Name: gfxNNN` and a marketing name."""
    devices = []
    for block in re.split(r"^\*+\s*\n\s*Agent \d+\s*\n\*+\s*$", text, flags=re.MULTILINE)[1:]:
        if not re.search(r"^\s*Device Type:\s*GPU\s*$", block, re.MULTILINE):
            continue
        arch = re.search(r"^  Name:\s*(gfx[0-9a-f]+)\S*\s*$", block, re.MULTILINE)
        if not arch:
            continue
        marketing = re.search(r"^  Marketing Name:\s*(.*?)\s*$", block, re.MULTILINE)
        name = marketing.group(1) if marketing and marketing.group(1) else arch.group(1)
        devices.append(Device(name, arch.group(1), "rocminfo"))
    return devices


def parse_nvidia_smi(text: str) -> list[Device]:
    """`nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader` (or compute_cap only)."""
    devices = []
    for i, line in enumerate(row for row in text.splitlines() if row.strip()):
        *names, cap = (part.strip() for part in line.split(","))
        if re.fullmatch(r"\d+\.\d+", cap):
            devices.append(
                Device(names[0] if names else f"GPU {i}", normalize_arch(cap), "nvidia-smi")
            )
    return devices


def _run(argv: list[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _hip_python_devices() -> list[Device]:
    try:
        from hip import hip  # hip-python
    except ImportError:
        return []
    try:
        err, count = hip.hipGetDeviceCount()
        devices = []
        for i in range(count if err == hip.hipError_t.hipSuccess else 0):
            props = hip.hipDeviceProp_t()
            hip.hipGetDeviceProperties(props, i)
            arch, name = (
                v.decode() if isinstance(v, bytes) else v for v in (props.gcnArchName, props.name)
            )
            devices.append(Device(name, normalize_arch(arch), "hip-python"))
        return devices
    except Exception:  # noqa: BLE001 - any hip-python API difference: fall back to the tools
        return []


PROBES = (
    ("hip-python", lambda: _hip_python_devices()),
    ("offload-arch", lambda: parse_offload_arch(_run(["offload-arch"]) or "")),
    ("rocminfo", lambda: parse_rocminfo(_run(["rocminfo"]) or "")),
    (
        "nvidia-smi",
        lambda: parse_nvidia_smi(
            _run(["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"]) or ""
        ),
    ),
)


def detect_devices() -> list[Device]:
    """The GPUs of this machine, from the first probe that finds any (no override)."""
    for _, probe in PROBES:
        found = probe()
        if found:
            return found
    return []


def fake_devices(value: str) -> list[Device]:
    """GRAPHKILN_FAKE_GPU_ARCH=gfx1100,gfx90a simulates those devices; `none` simulates none."""
    archs = [a.strip() for a in value.split(",") if a.strip() and a.strip() != "none"]
    return [Device(f"simulated {a}", normalize_arch(a), FAKE_ARCH_VARIABLE) for a in archs]


def devices() -> list[Device]:
    """The GPUs graphkiln sees: the test override when set, else detect_devices()."""
    from . import env

    fake = env.get(FAKE_ARCH_VARIABLE)
    return fake_devices(fake) if fake is not None else detect_devices()


@dataclass
class Verdict:
    """`status`: compatible | no-gpu | cpu-build (this build has no GPU code, GPUs here or
    not) | mismatch | no-runtime (the ISAs match, but the GPU runtime this ROCm build loads
    at run time is missing: graphkiln._core is then its CPU-only module) | no-core. The cpu
    and ref targets run whatever the status; the gpu target needs `compatible` (the devices
    in `usable`)."""

    status: str
    devices: list[Device]
    build: dict
    distribution: str
    usable: list[Device] = field(default_factory=list)
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "compatible"


try:  # loaded by path (tools/detect_gpu_targets.py, at CMake time) it has no package
    from .errors import GraphkilnError as _GraphkilnError
except ImportError:

    class _GraphkilnError(Exception):  # type: ignore[no-redef]
        """Stands in for graphkiln.GraphkilnError outside the package."""


class GpuCompatibilityError(_GraphkilnError, RuntimeError):
    """The gpu target cannot run here: no GPU, or the installed graphkiln carries no code for
    a GPU of this machine. A GraphkilnError, and a RuntimeError as it always was."""


def _distribution() -> str:
    from importlib import metadata

    try:
        dist = metadata.distribution("graphkiln")
    except metadata.PackageNotFoundError:
        return "graphkiln (not installed as a distribution: a source tree)"
    return f"{dist.metadata['Name']} {dist.version}"


def _backend(device: Device, build: dict) -> str:
    """The index folder name of the device's platform: rocm<major> or cu<major>."""
    toolkit = re.fullmatch(r"(HIP|CUDA) (\d+)(\..*)?", build.get("gpu_toolkit") or "")
    major = toolkit.group(2) if toolkit and build.get("gpu_platform") == device.platform else None
    prefix = "rocm" if device.platform == "amd" else "cu"
    return f"{prefix}{major or '<major>'}"


def _fixes(device: Device, build: dict) -> str:
    backend = _backend(device, build)
    return (
        "Fixes (any one):\n"
        "  1. the wheel for this GPU, from the per-arch index: pip install --force-reinstall "
        f"graphkiln --index-url <graphkiln index>/{backend}/{device.arch}/\n"
        f"  2. the fat wheel (every supported GPU, larger): "
        f"pip install --force-reinstall graphkiln --index-url <graphkiln index>/{backend}/\n"
        "  3. a source build for the GPUs of this machine: "
        "GPU_TARGETS=native pip install --no-binary graphkiln graphkiln "
        "(from a checkout: GPU_TARGETS=native pip install .)\n"
        "The CPU targets keep working with the installed wheel."
    )


def _explain(
    devices_seen: list[Device], missing: list[Device], build: dict, distribution: str
) -> str:
    isas = ", ".join(build["gpu_targets"]) or "none (a CPU-only build)"
    lines = [
        f"GPU {devices_seen.index(d)} '{d.name}' ({d.arch}, found by {d.source}) has no code "
        f"in the installed wheel {distribution}, whose ISAs are: {isas}."
        for d in missing
    ]
    covered = [d for d in devices_seen if d not in missing]
    if covered:
        lines.append(
            "Or hide the uncovered GPUs (HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES) "
            "to use " + ", ".join(f"'{d.name}' ({d.arch})" for d in covered) + "."
        )
    return "\n".join(lines + [_fixes(missing[0], build)])


def has_gpu_code(build: dict) -> bool:
    """Whether graphkiln._core was built with GPU code (build_info(): a GPU platform and at
    least one ISA); the CPU wheel and a source build without GPU_TARGETS have none."""
    return build.get("gpu_platform", "none") not in ("", "none") and bool(build.get("gpu_targets"))


def _no_gpu_code(devices_seen: list[Device], build: dict, distribution: str) -> str:
    """Why the gpu target cannot run on a build without GPU code, and how to get one."""
    lines = [
        f"this graphkiln build ({distribution}) has no GPU code (GPU platform "
        f"{build.get('gpu_platform') or 'none'}, no GPU ISAs: the CPU-only wheel, or a "
        "source build with GPU_TARGETS empty), so the gpu target cannot run here."
    ]
    if not devices_seen:
        lines.append("No GPU was found on this machine either.")
        lines.append(
            "For the gpu target, install a GPU build: a wheel from graphkiln's GPU index, "
            "pip install --force-reinstall graphkiln --index-url <graphkiln index>/<backend>/"
            "<ISA>/ (one folder per ISA: cu<major>/sm_90/, rocm<major>/gfx942/, ...; or "
            "<backend>/ alone for every supported GPU), or a source build, GPU_TARGETS=sm_90 "
            "pip install . (a list such as 'gfx90a;gfx942', or native on the GPU's machine). "
            "See the Install section of graphkiln's README."
        )
        lines.append("The CPU targets (cpu, ref) run.")
        return "\n".join(lines)
    return "\n".join(lines + [_explain(devices_seen, devices_seen, build, distribution)])


def check_gpu_compatibility() -> Verdict:
    """Compare the devices' ISAs with those compiled into graphkiln._core, without loading
    any GPU runtime. Never raises for a mismatch: read `.ok`, `.status` and `.message`."""
    distribution = _distribution()
    found = devices()  # first: hip-python must meet the HIP runtime before _core's code objects
    try:
        from ._native import load_core

        _core = load_core()
    except ImportError as exc:
        return Verdict(
            "no-core",
            found,
            {},
            distribution,
            message=f"graphkiln._core is not importable ({exc}): only `ref` runs "
            "(a ROCm wheel needs the ROCm runtime, libamdhip64, installed)",
        )
    build = _core.build_info()
    if not has_gpu_code(build):
        return Verdict(
            "cpu-build",
            found,
            build,
            distribution,
            message=_no_gpu_code(found, build, distribution),
        )
    if not found:
        return Verdict(
            "no-gpu", found, build, distribution, message="no GPU found: the CPU targets run"
        )
    usable = [d for d in found if d.arch in build["gpu_targets"]]
    missing = [d for d in found if d not in usable]
    if not missing:
        isas = ", ".join(build["gpu_targets"])
        covered = f"every GPU is covered by the ISAs compiled in ({isas})"
        from ._native import gpu_runtime_problem

        problem = gpu_runtime_problem()
        if problem:
            return Verdict(
                "no-runtime",
                found,
                build,
                distribution,
                usable,
                f"the wheel matches: {covered}. But its GPU code cannot load: {problem}. "
                "The CPU targets (cpu, ref) run.",
            )
        return Verdict("compatible", found, build, distribution, usable, covered)
    return Verdict(
        "mismatch",
        found,
        build,
        distribution,
        usable,
        _explain(found, missing, build, distribution),
    )


def require_gpu() -> Verdict:
    """For the gpu target, before it loads GPU code: the verdict, or GpuCompatibilityError
    when some GPU of this machine has no code in the installed wheel."""
    verdict = check_gpu_compatibility()
    if not verdict.ok:
        raise GpuCompatibilityError(verdict.message)
    return verdict


def gpu_probe_info() -> dict:
    """The GPU runtime's versions and a probe-kernel run, after require_gpu() passed."""
    require_gpu()
    from ._native import load_core

    return load_core().gpu_probe_info()
