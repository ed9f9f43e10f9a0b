#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Build one graphkiln wheel: CPU (no option), one GPU ISA, a list, or fat (`all`).

    python tools/build_wheels.py                            # graphkiln-0.1.0-...whl (CPU)
    python tools/build_wheels.py --gpu-targets gfx90a       # graphkiln-0.1.0+rocm6.gfx90a-...
    python tools/build_wheels.py --gpu-targets all          # graphkiln-0.1.0+rocm6-... (fat)
    python tools/build_wheels.py --gpu-targets sm_90        # graphkiln-0.1.0+cu13.sm90-...
    HIP_PLATFORM=nvidia python tools/build_wheels.py --gpu-targets all   # +cu13 (fat)

The backend goes into the PEP 440 local version label. It is written into the built wheel
(METADATA, dist-info name, RECORD, file name) after the build rather than through the
version provider: the CPU build and `pip install .` stay untouched, a source build for the
local GPU keeps the plain version, and the label is set by the one tool that also checks
the wheel carries what the label says (tools/check_wheel.py). Then the wheel is repaired
with auditwheel when it is installed, leaving the GPU driver and runtime libraries out.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The supported lists of GPU_TARGETS=all; keep in sync with cmake/GpuTargets.cmake (tested).
AMD_ALL = (
    "gfx908",
    "gfx90a",
    "gfx942",
    "gfx950",
    "gfx1030",
    "gfx1100",
    "gfx1101",
    "gfx1102",
    "gfx1151",
    "gfx1200",
    "gfx1201",
)
NVIDIA_ALL = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
# Provided by the machine's driver or ROCm / CUDA install, never bundled into a wheel.
# Shipped by a dependency wheel (onednn-cpu-gomp puts it in <prefix>/lib; graphkiln._core's
# RPATH and graphkiln/_native.py find it there): never bundled. libgomp neither: libdnnl uses
# the system's GNU OpenMP, and a second, bundled copy would give two thread pools.
DEPENDENCY_LIBS = ("libdnnl.so*", "libgomp.so*")
SYSTEM_GPU_LIBS = (
    "libamdhip64.so*",
    "libhsa-runtime64.so*",
    "libhiprtc.so*",
    "libamd_comgr.so*",
    "librocblas.so*",
    "libhipblas.so*",
    "libhipblaslt.so*",
    "librocm_smi64.so*",
    "libcuda.so*",
    "libcudart.so*",
    "libcublas.so*",
    "libcublasLt.so*",
    "libnvrtc.so*",
    "libnvJitLink.so*",
)


@dataclass(frozen=True)
class Flavor:
    """What a wheel is built for: `cpu`, or a backend (rocm6, cu13) with its ISAs (fat: all)."""

    backend: str
    archs: tuple[str, ...] = ()
    fat: bool = False

    @property
    def platform(self) -> str:
        return {"rocm": "amd", "cu": "nvidia"}.get(re.sub(r"\d+$", "", self.backend), "none")

    @property
    def label(self) -> str | None:
        """The local version label: None, rocm6, rocm6.gfx90a, cu13.sm90."""
        if self.backend == "cpu":
            return None
        return ".".join(
            [self.backend, *([] if self.fat else [a.replace("_", "") for a in self.archs])]
        )

    @property
    def expected_isas(self) -> tuple[str, ...]:
        if self.fat:
            return AMD_ALL if self.platform == "amd" else NVIDIA_ALL
        return self.archs

    @property
    def index_dir(self) -> str:
        """Where tools/make_index.py puts it: cpu, rocm6 (fat), rocm6/gfx90a, cu13/sm_90."""
        if self.backend == "cpu" or self.fat:
            return self.backend
        if len(self.archs) != 1:
            raise ValueError(
                f"a wheel for {', '.join(self.archs)} belongs to no index: "
                "publish one ISA per wheel, or the fat wheel"
            )
        return f"{self.backend}/{self.archs[0]}"


def parse_label(version: str) -> Flavor:
    """0.1.0 -> cpu; 0.1.0+rocm6 -> fat; 0.1.0+rocm6.gfx90a; 0.1.0+cu13.sm90."""
    _, _, label = version.partition("+")
    if not label:
        return Flavor("cpu")
    backend, *archs = label.split(".")
    if not re.fullmatch(r"(rocm|cu)\d+", backend):
        raise ValueError(f"version {version!r}: unknown local label (expected rocmN or cuN)")
    archs = [re.sub(r"^sm(\d+)$", r"sm_\1", a) for a in archs]
    return Flavor(backend, tuple(archs), fat=not archs)


def wheel_version(filename: str) -> str:
    """graphkiln-0.1.0+rocm6.gfx90a-cp311-cp311-linux_x86_64.whl -> 0.1.0+rocm6.gfx90a"""
    return Path(filename).name.split("-")[1]


def toolkit_major(platform: str) -> str:
    """The ROCm or CUDA major version of the toolchain found here (hipconfig / nvcc)."""
    if platform == "amd":
        argv, pattern = ["hipconfig", "--version"], r"^(\d+)\."
    else:
        argv, pattern = ["nvcc", "--version"], r"release (\d+)\."
    try:
        out = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "HIP_PLATFORM": platform},
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"build_wheels: cannot ask {argv[0]} for its version ({exc})") from exc
    found = re.search(pattern, out, re.MULTILINE)
    if not found:
        raise SystemExit(f"build_wheels: no version in `{' '.join(argv)}` output: {out!r}")
    return found.group(1)


def flavor_for(gpu_targets: str | None) -> Flavor:
    if not gpu_targets:
        return Flavor("cpu")
    if gpu_targets == "all":
        platform = "nvidia" if os.environ.get("HIP_PLATFORM") == "nvidia" else "amd"
        archs: tuple[str, ...] = ()
    else:
        archs = tuple(a for a in re.split(r"[;,]", gpu_targets) if a)
        kinds = {
            "amd" if a.startswith("gfx") else "nvidia" if a.startswith("sm_") else "?"
            for a in archs
        }
        if len(kinds) != 1 or "?" in kinds:
            raise SystemExit(
                f"build_wheels: --gpu-targets {gpu_targets!r}: give gfx* ISAs, sm_* "
                "ISAs (one platform) or `all`"
            )
        platform = kinds.pop()
    prefix = "rocm" if platform == "amd" else "cu"
    return Flavor(f"{prefix}{toolkit_major(platform)}", archs, fat=not archs)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def relabel(wheel: Path, label: str | None) -> Path:
    """Rewrite a wheel's version to carry `label`: METADATA, dist-info folder, RECORD, name."""
    if not label:
        return wheel
    name, version, *tags = wheel.name[: -len(".whl")].split("-")
    new_version = f"{version.split('+')[0]}+{label}"
    old_info, new_info = f"{name}-{version}.dist-info/", f"{name}-{new_version}.dist-info/"
    target = wheel.with_name("-".join([name, new_version, *tags]) + ".whl")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        record = []
        for item in src.infolist():
            arcname = item.filename.replace(old_info, new_info, 1)
            if arcname == new_info + "RECORD":
                continue
            data = src.read(item)
            if arcname == new_info + "METADATA":
                data = re.sub(
                    rb"^Version: .*$",
                    f"Version: {new_version}".encode(),
                    data,
                    count=1,
                    flags=re.MULTILINE,
                )
            info = zipfile.ZipInfo(arcname, item.date_time)
            info.external_attr, info.compress_type = item.external_attr, zipfile.ZIP_DEFLATED
            dst.writestr(info, data)
            record.append(_record_line(arcname, data))
        dst.writestr(new_info + "RECORD", "\n".join(record + [new_info + "RECORD,,"]) + "\n")
    wheel.unlink()
    return target


def repair(wheel: Path, out: Path, enabled: bool = True) -> Path:
    """auditwheel repair (manylinux tag, bundled non-system libraries), GPU libraries excluded."""
    if not enabled or shutil.which("auditwheel") is None:
        if enabled:
            print("build_wheels: auditwheel is not installed: the wheel keeps its linux_x86_64 tag")
        shutil.move(str(wheel), out / wheel.name)
        return out / wheel.name
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["auditwheel", "repair", "-w", tmp, str(wheel)]
        for lib in SYSTEM_GPU_LIBS + DEPENDENCY_LIBS:
            argv += ["--exclude", lib]
        print("+", " ".join(argv), flush=True)
        subprocess.run(argv, check=True)
        (repaired,) = Path(tmp).glob("*.whl")
        shutil.move(str(repaired), out / repaired.name)
        return out / repaired.name


def build(flavor: Flavor, gpu_targets: str | None, python: str, isolation: bool, tmp: Path) -> Path:
    env = dict(os.environ, GPU_TARGETS=gpu_targets or "")
    if flavor.platform != "none":
        env["HIP_PLATFORM"] = flavor.platform
    if flavor.label:  # the CPU wheel shares `pip install .`'s build folder
        env["SKBUILD_BUILD_DIR"] = f"build/{{wheel_tag}}-{flavor.label}"
    argv = [python, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-w", str(tmp)]
    if not isolation:
        argv.append("--no-build-isolation")
    print(
        f"+ GPU_TARGETS={env['GPU_TARGETS']!r} "
        f"SKBUILD_BUILD_DIR={env.get('SKBUILD_BUILD_DIR', '')}",
        " ".join(argv),
        flush=True,
    )
    subprocess.run(argv, check=True, env=env, cwd=ROOT)
    (wheel,) = tmp.glob("graphkiln-*.whl")
    return wheel


def compiled_isas(wheel: Path, flavor: Flavor) -> list[str]:
    """The ISAs CMake resolved for this fat build (GRAPHKILN_GPU_ISAS in its cache)."""
    tag = "-".join(wheel.name[: -len(".whl")].split("-")[2:])
    cache = ROOT / "build" / f"{tag}-{flavor.label}" / "CMakeCache.txt"
    found = re.search(r"^GRAPHKILN_GPU_ISAS:INTERNAL=(.*)$", cache.read_text(), re.MULTILINE)
    isas = [a for a in (found.group(1) if found else "").split(";") if a]
    left_out = [a for a in flavor.expected_isas if a not in isas]
    if left_out:
        print(
            f"build_wheels: WARNING: this toolchain cannot compile {', '.join(left_out)}; "
            f"the fat wheel carries {', '.join(isas)} only (release fat wheels need all of "
            f"{', '.join(flavor.expected_isas)})"
        )
    return isas


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--gpu-targets",
        help="gfx90a | sm_90 | 'gfx90a;gfx942' | all (fat); "
        "none: the CPU wheel. `all` means AMD unless HIP_PLATFORM=nvidia",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="where the wheel goes")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to build for")
    parser.add_argument(
        "--build-isolation",
        action="store_true",
        help="let pip fetch the build requirements (default: use this environment's)",
    )
    parser.add_argument("--no-repair", action="store_true", help="skip auditwheel")
    parser.add_argument("--no-check", action="store_true", help="skip tools/check_wheel.py")
    args = parser.parse_args(argv)

    flavor = flavor_for(args.gpu_targets)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        built = build(flavor, args.gpu_targets, args.python, args.build_isolation, Path(tmp))
        compiled = compiled_isas(built, flavor) if flavor.fat else []
        wheel = repair(relabel(built, flavor.label), args.out, enabled=not args.no_repair)
    print(f"build_wheels: {wheel}")
    if args.no_check:
        return 0
    from check_wheel import main as check_main

    # A fat wheel holds what this toolchain can compile of the supported list: check it
    # against that. Release CI checks fat wheels against the whole list (no --expect).
    expect = ["--expect", ",".join(compiled)] if flavor.fat else []
    return check_main([str(wheel), *expect])


if __name__ == "__main__":
    sys.exit(main())
